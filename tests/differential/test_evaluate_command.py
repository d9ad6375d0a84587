"""The issue's own check, through the command line: for each new family, a split made from a generated gold
file in the official release format with `flask splits add`, then `flask evaluate` on each generated prediction
file in the official submission format. Every metric and every typed subset it prints equals the official
script's unrounded value within 1e-6, and the files the app must refuse exit 2 naming the problem."""

from __future__ import annotations

import json

import pytest

from tests.differential import cases, reference
from tests.support.files import write

# The official VQA file's non-raw "\d" strings warn when it is compiled.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

FAMILIES = ("vqa-v2", "gqa", "a-okvqa", "winoground", "nlvr2-contrast")


def _official(family: str, gold: bytes, predictions: bytes) -> dict[str, dict[str, float]]:
    """The official values, subsets named as the app names them ("field:value"; the official prints
    "field: value")."""
    return {
        name.replace(": ", ":", 1): metrics
        for name, metrics in reference.official_scores(family, gold, predictions).items()
    }


def _as_the_official_reads_it(family: str, predictions: bytes) -> bytes:
    """The same predictions as the official script must be given them: its NLVR2 contrast-set eval.py reads a
    prediction with bool(), so a false one is written empty there (README: "0" counts as True)."""
    if family != "nlvr2-contrast":
        return predictions
    lines = []
    for line in predictions.decode().splitlines():
        identifier, _, word = line.partition(",")
        lines.append(f"{identifier},{'' if word.strip().lower() in ('0', 'false') else word}")
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("family", FAMILIES)
def test_flask_evaluate_equals_the_official_scorer(runner, tmp_path, family):
    gold, files = cases.make_case(family, seed=11, size=240)
    added = runner.invoke(args=["benchmarks", "add", family, "--task", family, "--name", family])
    assert added.exit_code == 0, added.output
    made = runner.invoke(args=["splits", "add", family, "test", "--labels", write(tmp_path, "gold", gold)])
    assert made.exit_code == 0, made.output
    for number, predictions in enumerate(files):
        printed = runner.invoke(args=["evaluate", family, "test", write(tmp_path, f"p{number}", predictions)])
        assert printed.exit_code == 0, printed.output
        ours = json.loads(printed.output)
        official = _official(family, gold, _as_the_official_reads_it(family, predictions))
        for subset, metrics in official.items():
            for metric, value in metrics.items():
                assert ours[subset][metric] == pytest.approx(value, abs=1e-6), (family, number, subset, metric)
    for name, data in cases.make_bad_files(family, gold):
        if name == "blank line":
            continue  # the official script crashes on one; Holdout skips blank lines in every file it reads
        refused = runner.invoke(args=["evaluate", family, "test", write(tmp_path, "bad", data)])
        assert refused.exit_code == 2, (family, name, refused.output)
        assert "Error:" in refused.output and "Traceback" not in refused.output, (family, name)
