"""VCR format on the real GD-VCR validation file (886 questions with a region)."""

import numpy as np
import pytest

from app.evaluation import get_task
from app.evaluation.tasks.vcr.formats import VCR_COLUMNS, VCR_SCORE_COLUMNS

pytestmark = pytest.mark.conformance

VCR = get_task("vcr")


@pytest.fixture(scope="module")
def gold(read_shared):
    return VCR.read_gold(read_shared("vcr/gdvcr_val.jsonl"))


def score_file(rows):
    """rows: annot_id -> 20 scores; written in reverse gold order to check the join on annot_id."""
    lines = [",".join(VCR_COLUMNS)] + [f"{i}," + ",".join(f"{x:.4f}" for x in s) for i, s in reversed(rows.items())]
    return ("\n".join(lines) + "\n").encode()


def test_gold_shape(gold):
    assert gold.n == 886 and gold.n_groups == 886 and "region" in gold.fields


def test_max_on_the_gold_answer_and_rationale_scores_100(gold):
    rng = np.random.default_rng(0)
    rows = {}
    for identifier, (answer, rationale) in zip(gold.ids.tolist(), gold.labels.tolist(), strict=True):
        scores = rng.random(20) * 0.5
        scores[answer] = 0.9
        scores[4 + 4 * answer + rationale] = 0.9  # the rationale block conditioned on the gold answer
        rows[identifier] = scores
    result = VCR.score(gold, VCR.parse(score_file(rows), gold))
    assert result["all"] == {"q_a": 100.0, "qa_r": 100.0, "q_ar": 100.0}


def test_all_choice_zero_scores_the_share_of_label_zero(gold):
    rows = {identifier: np.array([1.0] + [0.0] * 3 + [1.0, 0.0, 0.0, 0.0] * 4) for identifier in gold.ids.tolist()}
    assert len(VCR_SCORE_COLUMNS) == 20
    result = VCR.score(gold, VCR.parse(score_file(rows), gold))["all"]
    answers, rationales = gold.labels[:, 0], gold.labels[:, 1]
    assert result["q_a"] == pytest.approx(100 * np.mean(answers == 0))
    assert result["qa_r"] == pytest.approx(100 * np.mean(rationales == 0))
    assert result["q_ar"] == pytest.approx(100 * np.mean((answers == 0) & (rationales == 0)))
    assert round(result["q_a"], 1) == round(100 * 233 / 886, 1)


def test_region_subsets_partition_the_questions(gold):
    subsets = VCR.derive_subsets(gold, "region")
    assert set(subsets) == {"region:east-asia", "region:west", "region:south-asia", "region:africa"}
    members = np.concatenate(list(subsets.values()))
    assert members.size == 886 and np.array_equal(np.sort(members), np.arange(886))
    rows = {identifier: np.array([1.0] + [0.0] * 19) for identifier in gold.ids.tolist()}
    scores = VCR.score(gold, VCR.parse(score_file(rows), gold), subsets)
    weighted = sum(scores[name]["q_a"] * subsets[name].size for name in subsets) / 886
    assert weighted == pytest.approx(scores["all"]["q_a"])
