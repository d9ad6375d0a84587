"""The Dawid-Skene label audit estimator (app/evaluation/label_audit.py)."""

from __future__ import annotations

import numpy as np
import pytest

from app import synthetic
from app.evaluation import get_task
from app.evaluation.label_audit import dawid_skene


def _scenario(n: int, flipped: int, accuracies, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.5
    wrong = rng.choice(n, flipped, replace=False)
    gold = truth.copy()
    gold[wrong] ^= True
    votes = np.array([np.where(rng.random(n) < a, truth, ~truth) for a in accuracies])
    return votes.astype(np.int8), gold.astype(np.int8), set(wrong.tolist())


@pytest.mark.parametrize("n", [400, 6970])
def test_flipped_labels_rank_first_and_accuracies_are_recovered(n):
    accuracies = np.random.default_rng(1).uniform(0.75, 0.95, 30)
    votes, gold, wrong = _scenario(n, 20, accuracies)
    estimate = dawid_skene(votes, gold, 2)
    assert len(set(estimate.ranking()[:40].tolist()) & wrong) >= 18
    assert np.abs(estimate.voter_accuracy - accuracies).max() < 0.05
    assert estimate.gold_accuracy == pytest.approx(1 - 20 / n, abs=0.01)
    top = estimate.ranking()[0]
    assert estimate.likely[top] != gold[top] and estimate.probability[top] > 0.9


def test_accurate_submissions_outweigh_many_near_chance_ones():
    """Three near-chance files contradicting the gold weigh less than two accurate ones agreeing with it."""
    n = 2000
    rng = np.random.default_rng(2)
    truth = (rng.random(n) < 0.5).astype(np.int8)
    accurate = [np.where(rng.random(n) < 0.95, truth, 1 - truth) for _ in range(2)]
    noisy = [np.where(rng.random(n) < 0.52, truth, 1 - truth) for _ in range(3)]
    votes = np.array(accurate + noisy, dtype=np.int8)
    votes[:2, 0], votes[2:, 0] = truth[0], 1 - truth[0]  # example 0: accurate agree with gold, noisy do not
    votes[:2, 1], votes[2:, 1] = 1 - truth[1], truth[1]  # example 1: accurate contradict it, noisy agree
    estimate = dawid_skene(votes, truth, 2)
    assert estimate.against[0] == pytest.approx(0.6) and estimate.against[1] == pytest.approx(0.4)
    assert estimate.suspicion[1] > estimate.suspicion[0]
    order = estimate.ranking().tolist()
    assert order.index(1) < order.index(0) and estimate.probability[1] > estimate.probability[0]


def test_several_votes_per_example_and_more_classes():
    task = get_task("vcr")
    gold_file = synthetic.vcr_gold(200, seed=3)
    gold = task.read_gold(gold_file)
    stacked = np.stack(
        [
            task.parse(synthetic.predictions("vcr", gold_file, 0.9, seed=s, rationale_accuracy=0.9), gold)
            for s in range(6)
        ]
    )
    fields = task.label_votes(gold, stacked)
    assert [f.field for f in fields] == ["answer_label", "rationale_label"]
    for field in fields:
        assert field.votes.shape == (6, 200, 1)
        estimate = dawid_skene(field.votes, field.gold, len(field.classes))
        assert estimate.gold_accuracy > 0.97 and estimate.likely.max() <= 3
    images = get_task("nlvr-images")
    nlvr_gold = images.read_gold(synthetic.nlvr_gold(40, seed=1))
    votes = images.label_votes(nlvr_gold, np.zeros((3, nlvr_gold.n, 6), bool))[0]
    assert votes.votes.shape == (3, nlvr_gold.n, 6) and votes.classes == ("false", "true")


def test_refusals():
    with pytest.raises(ValueError, match="shape"):
        dawid_skene(np.zeros((2, 5), np.int8), np.zeros(4, np.int8), 2)
    with pytest.raises(ValueError, match="two classes"):
        dawid_skene(np.zeros((2, 5), np.int8), np.zeros(5, np.int8), 1)
    with pytest.raises(ValueError, match="at least one submission"):
        dawid_skene(np.zeros((0, 5), np.int8), np.zeros(5, np.int8), 2)
