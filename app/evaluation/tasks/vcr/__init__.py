"""VCR: the family (family.py), its gold file (formats.py), synthetic files (synthetic.py) and demo benchmark
(demo.py).
May import: app.evaluation
"""
