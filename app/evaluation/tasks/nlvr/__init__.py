"""The NLVR family: NLVR2, NLVR with structured representations and NLVR over images (family.py), their
gold and prediction files (formats.py), NLVR2's visual-bias subsets (visual_bias.py), synthetic files
(synthetic.py) and demo benchmarks (demo.py).
May import: app.evaluation
"""
