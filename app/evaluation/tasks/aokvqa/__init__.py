"""A-OKVQA: the family (family.py), its gold and predictions files (formats.py), synthetic files (synthetic.py)
and demo benchmark (demo.py).
May import: app.evaluation
"""
