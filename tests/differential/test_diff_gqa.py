"""GQA: the app's numbers against the official eval.py (tests/differential/official/gqa.py), on generated questions
files (balanced and unbalanced questions, entailed lists with repeats and the question's own id, null global
groups) and predictions files (perfect, mostly right, case and space variants, random, all "yes"; shuffled).

Every metric and every per-type accuracy the official script reports equals the app's within 1e-9; the app's
subsets 'structural:<type>' and 'semantic:<type>' are the official 'structural: <type>' and 'semantic: <type>'.
Files the official script would score differently (a duplicate: last wins; an extra id: ignored) are refused."""

from __future__ import annotations

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task
from tests.differential.cases import make_bad_files, make_case
from tests.differential.reference import METRICS, official_scores

TASK = get_task("gqa")
CASES = [(1, 15), (2, 60), (3, 200), (4, 300), (5, 7)]  # (seed, questions)
TOLERANCE = 1e-9


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"seed{case[0]}-n{case[1]}")
def case(request):
    seed, size = request.param
    gold_bytes, files = make_case("gqa", seed, size)
    gold = TASK.read_gold(gold_bytes)
    subsets = TASK.derive_subsets(gold)
    stacked = np.stack([TASK.parse(data, gold) for data in files])
    return gold_bytes, files, gold, TASK.score_batch(gold, stacked, subsets)


def official_or_none(gold_bytes: bytes, data: bytes) -> dict[str, dict[str, float]] | None:
    """The official scores, None where the official script divides by zero (no balanced question in a global
    group: the app then leaves the distribution out)."""
    try:
        return official_scores("gqa", gold_bytes, data)
    except ZeroDivisionError:
        return None


def test_every_metric_and_typed_subset_equals_the_official(case):
    gold_bytes, files, _, scores = case
    for data, ours in zip(files, scores, strict=True):
        theirs = official_or_none(gold_bytes, data)
        assert theirs is not None
        named = {name if name == "all" else name.replace(": ", ":", 1): values for name, values in theirs.items()}
        assert set(ours) == set(named)
        assert set(ours["all"]) == set(METRICS["gqa"])
        for subset, values in named.items():
            assert set(ours[subset]) == set(values), subset
            for metric, value in values.items():
                assert abs(ours[subset][metric] - value) <= TOLERANCE, (subset, metric, ours[subset][metric], value)


def test_the_perfect_file_scores_as_the_official(case):
    _, _, _, scores = case
    assert scores[0]["all"] == {
        "accuracy": 100.0,
        "binary": 100.0,
        "open": 100.0,
        "consistency": 100.0,
        "distribution": 0.0,
    }


def test_a_file_without_global_groups_has_no_distribution_where_the_official_divides_by_zero():
    gold_bytes, files = make_case("gqa", 9, 4)  # its 4 questions are balanced yes/no ones: no global group
    gold = TASK.read_gold(gold_bytes)
    for data in files:
        assert official_or_none(gold_bytes, data) is None
        ours = TASK.score(gold, TASK.parse(data, gold))["all"]
        assert set(ours) == set(METRICS["gqa"]) - {"distribution"}


def test_bad_files_are_refused(case):
    gold_bytes, _, gold, _ = case
    first = gold.ids[0]
    for name, data in make_bad_files("gqa", gold_bytes):
        with pytest.raises(ValidationError) as refused:
            TASK.parse(data, gold)
        message = str(refused.value)
        if name == "object instead of list":
            assert "JSON array" in message
        elif name == "id not in gold":
            assert "unknown question 'x-not-in-gold'" in message
        else:  # missing, duplicate, null or non-string prediction: the first question is named
            assert repr(first) in message, (name, message)
