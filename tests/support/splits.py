"""Benchmarks and splits added through the command line, as a maintainer adds them."""

from __future__ import annotations

from pathlib import Path

from app import synthetic
from tests.support.files import write


def nlvr2_split(runner, tmp_path: Path, *, benchmark="nlvr2", split="dev", n=400, hidden=False, seed=1):
    """Add an NLVR2 benchmark (if needed) and a synthetic split through the CLI; return the gold bytes."""
    runner.invoke(args=["benchmarks", "add", benchmark, "--task", "nlvr2", "--name", "NLVR2"])
    gold = synthetic.nlvr2_gold(n, split=split, seed=seed)
    args = ["splits", "add", benchmark, split, "--labels", write(tmp_path, f"{split}.json", gold)]
    if hidden:
        args.append("--hidden")
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    return gold
