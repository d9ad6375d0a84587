"""The NLVR family: NLVR2, NLVR with structured representations and NLVR over images (family.py), their
gold files (formats.py), synthetic files (synthetic.py) and demo benchmarks (demo.py).
May import: app.evaluation
"""
