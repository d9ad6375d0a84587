"""A blind test's sealed part: the draw of the sealed groups, scoring on the parts, and the gap test."""

from __future__ import annotations

import numpy as np
import pytest

from app import synthetic
from app.evaluation import get_task, sealed, statistics

NLVR2 = get_task("nlvr2")


@pytest.fixture(scope="module")
def gold():
    return NLVR2.read_gold(synthetic.nlvr2_gold(4000, split="test", seed=5))


def test_the_mask_seals_whole_groups_in_the_asked_share_and_depends_on_the_seed_alone(gold):
    mask = sealed.sealed_mask(gold.groups, 0.5, "a secret")
    assert mask.shape == (gold.n,)
    # Whole groups on one side: every group is all sealed or all queried.
    per_group = {}
    for group, value in zip(gold.groups.tolist(), mask.tolist(), strict=True):
        per_group.setdefault(group, set()).add(value)
    assert all(len(values) == 1 for values in per_group.values())
    sealed_groups = sum(1 for values in per_group.values() if values == {True})
    assert sealed_groups == round(0.5 * len(per_group))
    assert np.array_equal(mask, sealed.sealed_mask(gold.groups, 0.5, "a secret"))  # reproducible
    assert not np.array_equal(mask, sealed.sealed_mask(gold.groups, 0.5, "another secret"))
    assert not sealed.sealed_mask(gold.groups, 0.0, "a secret").any()
    assert sealed.sealed_mask(gold.groups, 0.9, "a secret").mean() == pytest.approx(0.9, abs=0.02)


@pytest.mark.parametrize("fraction", [-0.1, 0.95, 1, "half", None, float("nan")])
def test_a_fraction_outside_zero_to_nine_tenths_is_refused(fraction):
    with pytest.raises(ValueError, match="sealed fraction"):
        sealed.check_fraction(fraction)


def test_both_parts_keep_a_group_however_small_the_split():
    groups = np.array([0, 0, 1, 1])
    for fraction in (0.1, 0.9):
        mask = sealed.sealed_mask(groups, fraction, "s")
        assert mask.any() and not mask.all()


def test_parts_are_scored_with_every_metric_as_on_a_split_of_their_own(gold):
    parts = sealed.parts(sealed.sealed_mask(gold.groups, 0.4, "seed"))
    subsets = {**NLVR2.derive_subsets(gold), **parts}
    predictions = np.where(np.random.default_rng(1).random(gold.n) < 0.7, gold.labels, ~gold.labels)
    scores = NLVR2.score(gold, predictions, subsets)
    assert set(scores["balanced"]) == {"accuracy"}  # other subsets keep accuracy alone
    for name, indices in parts.items():
        assert set(scores[name]) == {"accuracy", "consistency"}
        part_gold = sealed.restrict(gold, indices)
        alone = NLVR2.score(part_gold, predictions[indices])["all"]
        assert scores[name] == pytest.approx(alone)
    # The bias subsets restricted to a part are the examples of both.
    inside = sealed.restrict_subsets(subsets, parts["queried"])
    assert set(inside) == {"balanced", "unbalanced"}
    expected = np.intersect1d(subsets["balanced"], parts["queried"])
    assert np.array_equal(parts["queried"][inside["balanced"]], expected)


def test_consistency_intervals_on_a_part_match_its_score(gold):
    parts = sealed.parts(sealed.sealed_mask(gold.groups, 0.5, "seed"))
    predictions = np.where(np.random.default_rng(2).random(gold.n) < 0.8, gold.labels, ~gold.labels)
    wanted = {name: (indices, NLVR2.metrics) for name, indices in parts.items()}
    table = statistics.intervals(NLVR2, gold, predictions[None], wanted)
    scores = NLVR2.score(gold, predictions, parts)
    for name in parts:
        interval = table[(name, "consistency")]
        assert interval.values[0] == pytest.approx(scores[name]["consistency"])
        assert interval.low[0] < interval.values[0] < interval.high[0]


def test_the_gap_test_marks_an_entry_tuned_to_the_queried_part_and_not_honest_ones(gold):
    parts = sealed.parts(sealed.sealed_mask(gold.groups, 0.5, "seed"))
    queried, sealed_part = parts["queried"], parts["sealed"]
    rng = np.random.default_rng(3)
    honest = [np.where(rng.random(gold.n) < accuracy, gold.labels, ~gold.labels) for accuracy in (0.6, 0.75, 0.9)]
    # Tuned: right on 56% of the queried part, chance on the sealed one (what a boosting attack achieves).
    tuned = np.where(rng.random(gold.n) < 0.5, gold.labels, ~gold.labels)
    tuned[queried] = np.where(rng.random(queried.size) < 0.56, gold.labels[queried], ~gold.labels[queried])
    stacked = np.stack([*honest, tuned])
    result = sealed.gap_test(NLVR2, gold, stacked, queried, sealed_part)
    scores = NLVR2.score_batch(gold, stacked, parts)
    for i, score in enumerate(scores):
        assert result.gap[i] == pytest.approx(score["queried"]["accuracy"] - score["sealed"]["accuracy"])
    assert result.larger_than_sampling.tolist() == [False, False, False, True]
    assert result.p[3] < 0.05 and (result.p[:3] > 0.05).all()
    # The bootstrap's standard error is about that of two independent proportions of these sizes (random
    # errors, so clustering adds little): sqrt(p(1-p)/n_q + p(1-p)/n_s).
    p = 0.75
    expected = 100 * np.sqrt(p * (1 - p) / queried.size + p * (1 - p) / sealed_part.size)
    assert result.std_error[1] == pytest.approx(expected, rel=0.15)


def test_the_gap_test_is_one_sided_and_its_false_alarms_are_near_alpha(gold):
    """An entry better on the sealed part is never marked; honest entries are marked about 5% of the time."""
    parts = sealed.parts(sealed.sealed_mask(gold.groups, 0.5, "seed"))
    rng = np.random.default_rng(4)
    stacked = np.where(rng.random((200, gold.n)) < 0.7, gold.labels, ~gold.labels)
    result = sealed.gap_test(NLVR2, gold, stacked, parts["queried"], parts["sealed"], resamples=400)
    assert not result.larger_than_sampling[result.gap < 0].any()
    assert 0.01 <= result.larger_than_sampling.mean() <= 0.11
