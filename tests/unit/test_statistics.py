"""Leaderboard statistics: cluster-bootstrap intervals, exact McNemar, Holm, rank tiers (worked out here)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from app import synthetic
from app.evaluation import get_task, statistics

NLVR2 = get_task("nlvr2")
VCR = get_task("vcr")


@pytest.fixture(scope="module")
def nlvr2():
    """A synthetic NLVR2 split (4,000 examples, ~1,000 sentences) and its bias subsets."""
    gold = NLVR2.read_gold(synthetic.nlvr2_gold(4000, split="test", seed=11))
    return gold, NLVR2.derive_subsets(gold)


def _predictions(gold, accuracy: float, seed: int, correlation: float) -> np.ndarray:
    """Predictions whose errors cluster by sentence: with probability `correlation` a whole sentence
    shares one draw, which is what makes the example-level standard error too small."""
    rng = np.random.default_rng(seed)
    shared = rng.random(int(gold.groups.max()) + 1)[gold.groups]
    draw = np.where(rng.random(gold.n) < correlation, shared, rng.random(gold.n))
    return np.where(draw < accuracy, gold.labels, ~gold.labels)


def _clustered_se(correct: np.ndarray, groups: np.ndarray) -> float:
    """Cluster-robust standard error of a ratio mean, in percentage points:
    var = G/(G-1) * sum_g (y_g - r m_g)^2 / (sum_g m_g)^2 with y_g correct and m_g examples of group g."""
    _, codes = np.unique(groups, return_inverse=True)
    y = np.bincount(codes, weights=correct.astype(float))
    m = np.bincount(codes).astype(float)
    r = y.sum() / m.sum()
    g = y.size
    return 100 * math.sqrt(g / (g - 1) * ((y - r * m) ** 2).sum() / m.sum() ** 2)


def _width(interval: statistics.Interval, i: int = 0) -> float:
    return float(interval.high[i] - interval.low[i])


def test_accuracy_interval_matches_the_clustered_standard_error(nlvr2):
    gold, _ = nlvr2
    predictions = _predictions(gold, 0.7, seed=1, correlation=0.7)
    correct = predictions == gold.labels
    table = statistics.intervals(NLVR2, gold, predictions[None], {"all": (None, ("accuracy",))})
    clustered = _clustered_se(correct, gold.groups)
    naive = 100 * math.sqrt(correct.mean() * (1 - correct.mean()) / gold.n)
    # The data must tell the two apart, or the test could not catch an example-level bootstrap.
    assert clustered / naive > 1.3
    width = _width(table[("all", "accuracy")])
    assert width == pytest.approx(2 * 1.96 * clustered, rel=0.2)
    assert abs(width / (2 * 1.96 * naive) - 1) > 0.2
    interval = table[("all", "accuracy")]
    assert interval.low[0] < interval.values[0] < interval.high[0]
    assert interval.values[0] == pytest.approx(100 * correct.mean())


def test_consistency_and_bias_subset_intervals_match_their_clustered_errors(nlvr2):
    gold, subsets = nlvr2
    predictions = _predictions(gold, 0.75, seed=2, correlation=0.5)
    correct = predictions == gold.labels
    wanted = {"all": (None, ("consistency",)), **{name: (idx, ("accuracy",)) for name, idx in subsets.items()}}
    table = statistics.intervals(NLVR2, gold, predictions[None], wanted)
    # Consistency: one Bernoulli per sentence.
    _, codes = np.unique(gold.groups, return_inverse=True)
    consistent = np.bincount(codes, weights=~correct) == 0
    se = _clustered_se(consistent, np.arange(consistent.size))
    assert _width(table[("all", "consistency")]) == pytest.approx(2 * 1.96 * se, rel=0.2)
    assert table[("all", "consistency")].values[0] == pytest.approx(100 * consistent.mean())
    for name, idx in subsets.items():
        se = _clustered_se(correct[idx], gold.groups[idx])
        assert _width(table[(name, "accuracy")]) == pytest.approx(2 * 1.96 * se, rel=0.2), name
        assert table[(name, "accuracy")].values[0] == pytest.approx(100 * correct[idx].mean())


def test_vcr_resamples_questions():
    gold = VCR.read_gold(synthetic.vcr_gold(3000, seed=4))
    rng = np.random.default_rng(5)
    predictions = np.stack([gold.labels[:, 0], *gold.labels[:, [1]].T.repeat(4, axis=0)], axis=1).astype(np.int8)
    wrong = rng.random(gold.n) < 0.4
    predictions[wrong, 0] = (predictions[wrong, 0] + 1) % 4
    table = statistics.intervals(VCR, gold, predictions[None], {"all": (None, VCR.metrics)})
    q_ar = table[("all", "q_ar")]
    p = q_ar.values[0] / 100
    assert q_ar.values[0] == pytest.approx(100 * (1 - wrong.mean()))
    assert _width(q_ar) == pytest.approx(2 * 1.96 * 100 * math.sqrt(p * (1 - p) / gold.n), rel=0.2)
    assert _width(table[("all", "qa_r")]) == 0  # every rationale right: no uncertainty to show


def test_a_table_is_one_pass_and_each_entry_gets_its_own_interval_back(nlvr2):
    """Resamples are shared: an entry's interval is the same alone or among others, and fixed by the seed."""
    gold, subsets = nlvr2
    stacked = np.stack([_predictions(gold, a, seed=s, correlation=0.3) for s, a in enumerate((0.6, 0.8, 0.9))])
    wanted = {"all": (None, NLVR2.metrics), "balanced": (subsets["balanced"], ("accuracy",))}
    together = statistics.intervals(NLVR2, gold, stacked, wanted)
    for i in range(3):
        alone = statistics.intervals(NLVR2, gold, stacked[i : i + 1], wanted)
        for key in together:
            assert alone[key].low[0] == pytest.approx(together[key].low[i])
            assert alone[key].high[0] == pytest.approx(together[key].high[i])
    again = statistics.intervals(NLVR2, gold, stacked, wanted)
    np.testing.assert_array_equal(again[("all", "accuracy")].low, together[("all", "accuracy")].low)
    other_seed = statistics.intervals(NLVR2, gold, stacked, wanted, seed=1)
    assert not np.array_equal(other_seed[("all", "accuracy")].low, together[("all", "accuracy")].low)


def test_resample_weights_draw_every_group_count_times():
    blocks = list(statistics.resample_blocks(50, resamples=450, seed=3))
    weights = np.concatenate(blocks)
    assert weights.shape == (450, 50)
    assert (weights.sum(axis=1) == 50).all()  # a resample has as many groups as the split
    assert weights.mean() == pytest.approx(1.0)


# --- one-sided McNemar, Holm per entry, ranks and rank intervals ---------------------------------------


def _one_sided(b: int, c: int) -> float:
    """P(X >= b), X ~ Binomial(b + c, 1/2), as an exact fraction."""
    n = b + c
    return float(Fraction(sum(math.comb(n, i) for i in range(b, n + 1)), 2**n))


def test_one_sided_p_by_hand():
    # b = 8, c = 2: P(X >= 8 | n = 10) = (45 + 10 + 1) / 1024
    assert statistics.one_sided_p(np.array([8]), np.array([2]))[0] == pytest.approx(56 / 1024)
    assert statistics.one_sided_p(np.array([2]), np.array([8]))[0] == pytest.approx(1 - 11 / 1024)
    assert statistics.one_sided_p(np.array([0]), np.array([0]))[0] == 1.0
    assert statistics.one_sided_p(np.array([6]), np.array([0]))[0] == pytest.approx(1 / 64)


@pytest.mark.parametrize("b, c", [(30, 20), (3200, 3000), (120, 40), (3, 0)])
def test_one_sided_p_matches_exact_fractions_for_large_counts(b, c):
    assert statistics.one_sided_p(np.array([b]), np.array([c]))[0] == pytest.approx(_one_sided(b, c), rel=1e-9)


def _flip(correct: np.ndarray, right_to_wrong: int, wrong_to_right: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = correct.copy()
    out[rng.choice(np.flatnonzero(correct), right_to_wrong, replace=False)] = False
    out[rng.choice(np.flatnonzero(~correct), wrong_to_right, replace=False)] = True
    return out


def _ranks(*rows: np.ndarray) -> list[int]:
    correct = np.stack(rows)
    return statistics.significance_ranks(correct, correct.mean(axis=1) * 100).ranks.tolist()


def test_a_few_dozen_differences_both_ways_share_a_rank():
    rng = np.random.default_rng(7)
    a = rng.random(7000) < 0.75
    b = _flip(a, right_to_wrong=30, wrong_to_right=20)
    assert _ranks(a, b) == [1, 1]
    assert 0.05 < _one_sided(30, 20) < 0.2


def test_five_points_apart_do_not_share_a_rank():
    rng = np.random.default_rng(8)
    a = rng.random(7000) < 0.75
    b = _flip(a, right_to_wrong=380, wrong_to_right=30)  # 350 of 7,000 = 5 points
    assert _ranks(a, b) == [1, 2]


def test_identical_scores_share_a_rank_even_with_different_predictions():
    rng = np.random.default_rng(9)
    a = rng.random(1000) < 0.6
    b = _flip(a, right_to_wrong=100, wrong_to_right=100)
    assert _ranks(a, b, b) == [1, 1, 1]


def test_holm_is_over_every_pair_of_the_board():
    """One test per pair, two-sided (twice the one-sided p), Holm over all k(k - 1)/2 pairs: 20 vs 8 (two-sided
    p about 0.036) separates two entries alone (one pair, threshold 0.05) but not on a three-entry board, where
    after the one far pair (40 vs 16) is decided the next threshold is 0.05 / 2."""
    assert 0.025 < 2 * _one_sided(20, 8) < 0.05
    rng = np.random.default_rng(10)
    top = rng.random(2000) < 0.7
    second = _flip(top, right_to_wrong=20, wrong_to_right=8, seed=1)
    assert _ranks(top, second) == [1, 2]
    third = _flip(second, right_to_wrong=20, wrong_to_right=8, seed=2)
    correct = np.stack([top, second, third])
    shown = statistics.significance_ranks(correct, correct.mean(axis=1) * 100)
    # Only top > third is decided: B = (0, 0, 1), W = (1, 0, 0).
    assert (shown.ranks.tolist(), shown.lows.tolist(), shown.highs.tolist()) == ([1, 1, 2], [1, 1, 2], [2, 3, 3])


def test_a_crowded_board_separates_entries_far_apart():
    """100 entries evenly spread from 90 to 52 on 7,000 judgements, each derived from the one above
    (so neighbours differ by a few dozen judgements): the bottom is far from 1, and entries 3+ points apart
    never share a rank."""
    rng = np.random.default_rng(11)
    n = 7000
    current = rng.random(n) < 0.90
    rows = [current]
    targets = np.linspace(90, 52, 100)
    for target in targets[1:]:
        need = int(round(n * (rows[-1].mean() * 100 - target) / 100))
        rows.append(_flip(rows[-1], right_to_wrong=need + 10, wrong_to_right=10, seed=len(rows)))
    correct = np.stack(rows)
    primary = correct.mean(axis=1) * 100
    ranks = statistics.significance_ranks(correct, primary).ranks
    assert ranks[-1] > 50
    for i in range(100):
        for j in range(i + 1, 100):
            if primary[i] - primary[j] >= 3:
                assert ranks[i] != ranks[j]


def test_rank_intervals_come_from_the_same_tests_as_the_ranks():
    """[1 + B, k - W]: three entries each far apart are pinned to their places; two close ones above a far one
    share rank 1 and the interval 1-2; the far one is 3 of 3."""
    rng = np.random.default_rng(10)
    top = rng.random(2000) < 0.7
    second = _flip(top, right_to_wrong=60, wrong_to_right=8, seed=1)
    third = _flip(second, right_to_wrong=60, wrong_to_right=8, seed=2)
    rows = np.stack([top, second, third])
    apart = statistics.significance_ranks(rows, rows.mean(axis=1) * 100)
    assert (apart.ranks.tolist(), apart.lows.tolist(), apart.highs.tolist()) == ([1, 2, 3], [1, 2, 3], [1, 2, 3])
    close = _flip(top, right_to_wrong=3, wrong_to_right=1, seed=3)
    far = _flip(top, right_to_wrong=400, wrong_to_right=0, seed=4)
    correct = np.stack([top, close, far])
    shown = statistics.significance_ranks(correct, correct.mean(axis=1) * 100)
    assert (shown.ranks.tolist(), shown.lows.tolist(), shown.highs.tolist()) == ([1, 1, 3], [1, 1, 3], [2, 2, 3])


def test_primary_correctness_counts_each_image_of_nlvr_images():
    task = get_task("nlvr-images")
    gold = task.read_gold(synthetic.nlvr_gold(40, seed=1))
    predictions = np.repeat(gold.labels[:, None], 6, axis=1)
    predictions[0, 3] = ~predictions[0, 3]
    correct = statistics.primary_correctness(task, gold, predictions[None])
    assert correct.shape == (1, gold.n * 6) and correct.sum() == gold.n * 6 - 1
    table = statistics.intervals(task, gold, predictions[None], {"all": (None, task.metrics)})
    assert table[("all", "accuracy")].values[0] == pytest.approx(100 * (1 - 1 / (gold.n * 6)))
    assert table[("all", "consistency")].values[0] == pytest.approx(100 * (1 - 1 / gold.n_groups))


def test_skipping_surely_significant_pairs_changes_no_rank(monkeypatch):
    """Entries far above are counted without their exact test; the ranks are those of the full computation."""
    rng = np.random.default_rng(12)
    n, k = 3000, 300
    base = rng.random(n)
    accuracies = np.sort(rng.uniform(0.5, 0.95, k))[::-1]
    correct = np.stack([np.where(rng.random(n) < 0.4, base, rng.random(n)) < a for a in accuracies])
    primary = correct.mean(axis=1) * 100
    order = np.argsort(-primary, kind="stable")
    correct, primary = correct[order], primary[order]
    fast = statistics.significance_ranks(correct, primary)
    assert statistics._sure_counts(correct.sum(axis=1), n, 0.05)[200] > 0  # the shortcut is taken
    monkeypatch.setattr(statistics, "_sure_counts", lambda right, *args: np.zeros(right.size, dtype=np.int64))
    full = statistics.significance_ranks(correct, primary)
    for name in ("ranks", "lows", "highs", "better", "worse"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(full, name), err_msg=name)


def test_decisive_p_agrees_with_the_exact_test_on_every_decision():
    """Where the exact p is replaced by 0 or 1 it lies on the same side of every threshold Holm can use."""
    rng = np.random.default_rng(13)
    above = rng.integers(0, 400, size=20000).astype(float)
    below = rng.integers(0, 400, size=20000).astype(float)
    extra = np.array([[40, 0], [37, 0], [6, 0], [5, 0], [3, 0], [2, 0], [1, 0], [0, 0], [200, 150], [60, 30]], float)
    above, below = np.r_[above, extra[:, 0]], np.r_[below, extra[:, 1]]
    exact = statistics.one_sided_p(above, below)
    decisive = statistics._decisive_p(above, below)
    for threshold in (0.05, 0.05 / 10, 0.05 / 1000, 0.05 / 10**7):
        np.testing.assert_array_equal(exact <= threshold, decisive <= threshold)


def test_count_intervals_depend_on_the_count_alone(nlvr2):
    """Two files with the same number right get the same Wilson interval, whichever examples they got right;
    the bootstrap would tell them apart."""
    gold, _ = nlvr2
    first = _predictions(gold, 0.7, seed=1, correlation=0.9)
    correct = first == gold.labels
    second = first.copy()
    # Move right answers to other examples: same count, different examples.
    right, wrong = np.flatnonzero(correct)[:50], np.flatnonzero(~correct)[:50]
    second[right], second[wrong] = ~second[right], ~second[wrong]
    stacked = np.stack([first, second])
    wanted = {"all": (None, ("accuracy",))}
    counted = statistics.intervals(NLVR2, gold, stacked, wanted, counts_only=True)
    interval = counted[("all", "accuracy")]
    assert interval.values[0] == interval.values[1]
    assert interval.low[0] == interval.low[1] and interval.high[0] == interval.high[1]
    k, n = int(correct.sum()), gold.n
    p, z = k / n, 1.959963984540054
    centre, half = (
        (p + z * z / (2 * n)) / (1 + z * z / n),
        z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n),
    )
    assert interval.low[0] == pytest.approx(100 * (centre - half)) and interval.high[0] == pytest.approx(
        100 * (centre + half)
    )
    booted = statistics.intervals(NLVR2, gold, stacked, wanted)[("all", "accuracy")]
    assert (booted.low[0], booted.high[0]) != (booted.low[1], booted.high[1])


def test_equal_primary_scores_are_never_decided_apart_and_each_pair_is_decided_once():
    """B and C score the same; C's right answers are a subset of A's (10 fewer), so A is decided better than C
    but not than B (100 vs 90 discordant). B and C are never decided apart (p = 1 between them), and the one
    decision A > C is in A's row (W) and in C's (B) alike: ranks 1 + B are 1, 1, 2, and no adjustment makes a
    row say more than its tests."""
    a = np.zeros(800, bool)
    a[:600] = True
    b = a.copy()
    b[:100] = False
    b[600:690] = True
    c = np.zeros(800, bool)
    c[:590] = True
    correct = np.stack([a, b, c])
    shown = statistics.significance_ranks(correct, correct.mean(axis=1) * 100)
    assert shown.better.tolist() == [0, 0, 1] and shown.worse.tolist() == [1, 0, 0]
    assert shown.ranks.tolist() == [1, 1, 2] and shown.highs.tolist() == [2, 3, 3]
