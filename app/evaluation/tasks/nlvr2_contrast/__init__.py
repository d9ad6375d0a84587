"""The NLVR2 contrast sets: the family (family.py, built on the NLVR family's BinaryTask), its gold and
prediction files (formats.py; the predictions read by the NLVR family's reader), synthetic files (synthetic.py)
and demo benchmark (demo.py).
May import: app.evaluation
"""
