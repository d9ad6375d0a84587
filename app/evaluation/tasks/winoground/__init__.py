"""Winoground: the family (family.py), its three judgements (scoring.py), its examples and model_scores files
(formats.py), synthetic files (synthetic.py) and demo benchmark (demo.py).
May import: app.evaluation
"""
