"""VCR: the family (family.py), its three judgements (scoring.py), its gold and prediction files (formats.py),
synthetic files (synthetic.py) and demo benchmark (demo.py).
May import: app.evaluation
"""
