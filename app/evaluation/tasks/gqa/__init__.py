"""GQA: the family (family.py), its scoring as the official eval.py (scoring.py), its questions and predictions
files (formats.py), its choices file (choices.py), synthetic files (synthetic.py) and demo benchmark (demo.py).
May import: app.evaluation
"""
