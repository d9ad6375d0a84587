"""The NLVR2 contrast sets: the family (family.py, built on the NLVR family's BinaryTask), its gold file
(formats.py), synthetic files (synthetic.py) and demo benchmark (demo.py).
May import: app.evaluation
"""
