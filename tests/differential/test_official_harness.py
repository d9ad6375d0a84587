"""The differential-test harness itself: the official scorers run on every family's generated files."""

from __future__ import annotations

import json
import math

import pytest

from tests.differential.cases import FAMILIES, make_bad_files, make_case, official_behaviour_files
from tests.differential.reference import METRICS, official_scores

# The official VQA code's non-raw regex strings ("(?!<=\d)...") are kept byte for byte.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

SIZE = 60


@pytest.fixture(scope="module", params=FAMILIES)
def case(request):
    family = request.param
    gold, predictions = make_case(family, seed=7, size=SIZE)
    return family, gold, predictions


def test_cases_are_deterministic_and_varied(case):
    family, gold, predictions = case
    assert make_case(family, seed=7, size=SIZE) == (gold, predictions)
    assert make_case(family, seed=8, size=SIZE)[0] != gold
    assert len(predictions) >= 4
    assert len(set(predictions)) == len(predictions)


def test_official_scores_returns_every_metric(case):
    family, gold, predictions = case
    for prediction in predictions:
        scores = official_scores(family, gold, prediction)
        assert set(scores["all"]) == set(METRICS[family])
        for subset in scores.values():
            assert subset
            for value in subset.values():
                assert isinstance(value, float) and math.isfinite(value)
        assert all(": " in name for name in scores if name != "all")
        others = {k: v for k, v in scores["all"].items() if k != "distribution"}
        assert all(0 <= v <= 100 for v in others.values())


EXPECTED_SUBSET_FIELDS = {
    "vqa-v2": {"answer_type", "question_type"},
    "gqa": {"structural", "semantic"},
    "a-okvqa": set(),
    "winoground": {"collapsed_tag", "num_main_preds", "secondary_tag"},
    "nlvr2-contrast": set(),
}


def test_subsets(case):
    family, gold, predictions = case
    scores = official_scores(family, gold, predictions[0])
    assert {name.split(": ")[0] for name in scores if name != "all"} == EXPECTED_SUBSET_FIELDS[family]


def test_perfect_predictions(case):
    """The first prediction file is the 'perfect' one where a perfect score exists in the official code."""
    family, gold, predictions = case
    scores = official_scores(family, gold, predictions[0])["all"]
    if family == "gqa":
        assert scores == {"accuracy": 100.0, "binary": 100.0, "open": 100.0, "consistency": 100.0, "distribution": 0.0}
    elif family == "winoground":
        assert scores == {"text": 100.0, "image": 100.0, "group": 100.0}
    elif family == "a-okvqa":
        assert scores["mc_accuracy"] == 100.0
    elif family == "vqa-v2":
        # the most frequent human answer is not always scored 100 (e.g. when it is given by fewer than 4 humans)
        assert 0 < scores["accuracy"] <= 100
    else:  # nlvr2-contrast: bool("False") is True, so a "perfect" True/False file scores the share of True labels
        rows = [json.loads(line) for line in gold.decode().splitlines()]
        assert scores["accuracy"] == pytest.approx(100 * sum(r["label"] for r in rows) / len(rows), abs=1e-9)
        empty = dict(official_behaviour_files(family, gold))["empty prediction for False labels"]
        assert official_scores(family, gold, empty)["all"] == {"accuracy": 100.0, "consistency": 100.0}


def test_vqa_normalisation_only_when_humans_disagree():
    def accuracy(answers: list[str], prediction: str) -> float:
        ann = {
            "question_id": 1,
            "image_id": 1,
            "answer_type": "number",
            "question_type": "how many",
            "multiple_choice_answer": answers[0],
            "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": i + 1} for i, a in enumerate(answers)],
        }
        gold = json.dumps({"annotations": [ann], "info": {}, "license": {}}).encode()
        result = json.dumps([{"question_id": 1, "answer": prediction}]).encode()
        return official_scores("vqa-v2", gold, result)["all"]["accuracy"]

    assert accuracy(["2"] * 10, "two") == 0.0
    assert accuracy(["2"] * 9 + ["3"], "two") == 100.0
    assert [accuracy(["a"] * k + [f"o{i}" for i in range(10 - k)], "a") for k in range(5)] == [
        0.0,
        30.0,
        60.0,
        90.0,
        100.0,
    ]


def test_bad_and_odd_files_are_generated(case):
    family, gold, _ = case
    bad = make_bad_files(family, gold)
    assert len(bad) >= 4 and all(isinstance(name, str) and isinstance(data, bytes) for name, data in bad)
    for _name, data in official_behaviour_files(family, gold):
        assert official_scores(family, gold, data)["all"]
