"""VQA v2: the family (family.py), its annotations and results files with the official answer normalisation
(formats.py), synthetic files (synthetic.py) and demo benchmark (demo.py).
May import: app.evaluation
"""
