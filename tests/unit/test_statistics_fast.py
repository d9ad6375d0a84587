"""The fast paths of app/evaluation/statistics.py against the plain computation they replace, on random
boards: group sums, pairwise right-on-both counts, p-values computed once per distinct pair of counts,
significance ranks and rank intervals must come out identical, ties and NaNs included."""

from __future__ import annotations

import numpy as np
import pytest

from app import synthetic
from app.evaluation import get_task, statistics

NLVR2 = get_task("nlvr2")


@pytest.fixture(scope="module")
def nlvr2_small():
    """A synthetic NLVR2 split (1,200 examples), its bias subsets and 40 entries' predictions."""
    gold = NLVR2.read_gold(synthetic.nlvr2_gold(1200, split="test", seed=5))
    rng = np.random.default_rng(14)
    right = rng.random((40, gold.n)) < rng.uniform(0.5, 0.9, size=(40, 1))
    right[3] = right[4]  # two identical entries
    return gold, NLVR2.derive_subsets(gold), np.where(right, gold.labels, ~gold.labels)


def _board(rng: np.random.Generator, k: int, units: int, spread: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """k entries in table order with sentence-correlated errors and a few exact copies (ties)."""
    base = rng.random(units)
    accuracies = rng.uniform(*spread, size=k)
    correct = np.stack([np.where(rng.random(units) < 0.5, base, rng.random(units)) < a for a in accuracies])
    copies = rng.choice(k, size=k // 10, replace=False)
    correct[copies] = correct[rng.choice(k, size=copies.size)]
    primary = correct.mean(axis=1) * 100
    order = np.argsort(-primary, kind="stable")
    return correct[order], primary[order]


def _exact_ranks(correct: np.ndarray, primary: np.ndarray, alpha: float = statistics.ALPHA):
    """Every pair's p-value computed exactly, once (two-sided exact McNemar, the pair's entry above against the
    one below), Holm over all k(k - 1)/2 pairs, pair by pair, as the README states it: (ranks, lows, highs, B, W)."""
    k = correct.shape[0]
    right = correct.sum(axis=1)
    above, below = np.triu_indices(k, 1)
    both = (correct[above] & correct[below]).sum(axis=1)
    p = np.minimum(1.0, 2.0 * statistics.one_sided_p(right[above] - both, right[below] - both))
    p[primary[above] == primary[below]] = 1.0
    better = np.zeros(k, dtype=np.int64)
    worse = np.zeros(k, dtype=np.int64)
    for step, pair in enumerate(np.argsort(p, kind="stable")):
        if p[pair] > alpha / (p.size - step):
            break  # Holm's first failure: this pair and every later one stand undecided
        better[below[pair]] += 1
        worse[above[pair]] += 1
    return 1 + better, 1 + better, k - worse, better, worse


def _assert_ranks_equal(found: statistics.Ranks, expected) -> None:
    for name, want in zip(("ranks", "lows", "highs", "better", "worse"), expected, strict=True):
        np.testing.assert_array_equal(getattr(found, name), want, err_msg=name)


@pytest.mark.parametrize(
    "seed, k, units, spread",
    [
        (1, 300, 500, (0.55, 0.95)),
        (2, 400, 2000, (0.70, 0.75)),  # a crowded board: most pairs need their exact test
        (3, 250, 6970, (0.50, 0.95)),
        (4, 150, 64 * 7 + 13, (0.6, 0.9)),  # units not a multiple of the 64-bit words
    ],
)
def test_significance_ranks_equal_the_exact_computation(seed, k, units, spread):
    correct, primary = _board(np.random.default_rng(seed), k, units, spread)
    _assert_ranks_equal(statistics.significance_ranks(correct, primary), _exact_ranks(correct, primary))


@pytest.mark.parametrize("units", [1, 64, 64 * 3 + 5, 64 * 5, 64 * 7 + 1, 6970])
def test_both_right_counts_every_pair(units):
    """Word counts that are and are not multiples of the three words added in bytes at a time."""
    rng = np.random.default_rng(5)
    correct = rng.random((90, units)) < 0.6
    correct[0] = True  # every judgement right: the byte sums at their largest (192 for three full words)
    correct[1] = True
    packed = statistics._packed(correct)
    expected = correct[:30].astype(np.int64) @ correct.T.astype(np.int64)
    np.testing.assert_array_equal(statistics._both_right(packed[:30], packed), expected)


def test_percentiles_of_sorted_rows_equal_numpys():
    """Read off sorted rows, the same bits as np.percentile (linear), at the module's tails and at awkward
    places (the ends, whole and half indices), for many row lengths; a row with a NaN gives NaN, as numpy's."""
    rng = np.random.default_rng(21)
    tail = (1.0 - statistics.CONFIDENCE) / 2.0 * 100.0
    percents = (tail, 100.0 - tail, 0.0, 100.0, 50.0, 37.5, 99.99)
    for n in (1, 2, 3, 7, 40, 999, 1000, 1001):
        rows = rng.random((25, n)) * 100.0
        rows[3] = np.round(rows[3])  # ties
        if n > 1:
            rows[5, 1] = np.nan
        expected = np.percentile(rows, percents, axis=1)
        rows.sort(axis=1)
        found = statistics._percentiles_of_sorted(rows, percents)
        for want, got in zip(expected, found, strict=True):
            np.testing.assert_array_equal(got, want)


def test_packed_judgements_rank_as_the_bool_matrix():
    correct, primary = _board(np.random.default_rng(8), 120, 64 * 4 + 9, (0.6, 0.9))
    best = np.sort(np.random.default_rng(9).choice(120, size=40, replace=False))
    order = np.random.default_rng(10).permutation(120)
    submitted = np.empty_like(correct)
    submitted[order] = correct  # rows in submission order: submitted[order] is the table
    on_bools = statistics.view_ranks(correct, primary, [None, best])
    packed = statistics.PackedJudgements.of(submitted)
    on_packed = statistics.view_ranks(packed, primary, [None, best], order=order)
    for a, b in zip(on_bools, on_packed, strict=True):
        _assert_ranks_equal(a, (b.ranks, b.lows, b.highs, b.better, b.worse))


def test_decisive_p_computes_each_distinct_pair_once_with_the_same_values():
    rng = np.random.default_rng(6)
    above = rng.integers(0, 300, size=50000).astype(float)
    below = rng.integers(0, 300, size=50000).astype(float)
    decisive = statistics._decisive_p(above, below)
    n = above + below
    z = (above - below - 1.0) / np.sqrt(np.maximum(n, 1.0))
    band = (z >= 1.0) & (z <= statistics._SURE_Z)
    assert band.sum() > 1000
    np.testing.assert_array_equal(decisive[band], statistics.one_sided_p(above[band], below[band]))
    assert (decisive[z > statistics._SURE_Z] == 0).all() and (decisive[z < 1.0] == 1).all()
    # The stand-in 0 is under Holm's strictest threshold of a board far larger than any: 10^6 entries.
    far = z > statistics._SURE_Z
    assert far.any() and statistics.one_sided_p(above[far], below[far]).max() < 0.05 / 10**12


def test_group_sums_equal_a_per_group_count():
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 300, size=2000)  # groups of every size, in no order
    values = rng.random((40, 2000)) < 0.5
    groups, sums = statistics._group_sums(values, codes)
    np.testing.assert_array_equal(groups, np.unique(codes))
    expected = np.stack([np.bincount(codes, weights=row, minlength=300)[groups] for row in values])
    np.testing.assert_array_equal(sums, expected.astype(np.float32))
    counts = rng.integers(0, 7, size=(5, 2000)).astype(np.uint8)  # NLVR images: right images per example
    _, sums = statistics._group_sums(counts, codes)
    np.testing.assert_array_equal(sums, np.stack([np.bincount(codes, weights=row)[groups] for row in counts]))


@pytest.mark.parametrize("seed, k, units, spread", [(9, 300, 2000, (0.6, 0.9)), (10, 200, 6970, (0.5, 0.95))])
def test_view_ranks_equal_the_exact_computation_on_each_sub_table(seed, k, units, spread):
    """A sub-table (view=teams: each team's best) ranked on the whole table's pair counts is ranked as it
    would be alone."""
    rng = np.random.default_rng(seed)
    correct, primary = _board(rng, k, units, spread)
    best = np.sort(rng.choice(k, size=k // 2, replace=False))
    whole, teams = statistics.view_ranks(correct, primary, [None, best])
    _assert_ranks_equal(whole, _exact_ranks(correct, primary))
    _assert_ranks_equal(teams, _exact_ranks(correct[best], primary[best]))
    shuffled = rng.permutation(k)  # rows given in another order, and the table's order beside them
    order = np.argsort(shuffled)
    again = statistics.view_ranks(correct[shuffled], primary, [None, best], order=order)
    for found, want in zip(again, (whole, teams), strict=True):
        _assert_ranks_equal(found, (want.ranks, want.lows, want.highs, want.better, want.worse))


def test_sure_counts_settle_only_pairs_the_exact_test_rejects_first():
    """Every entry counted as surely better (worse) has an exact p under Holm's strictest threshold."""
    rng = np.random.default_rng(11)
    correct, primary = _board(rng, 400, 3000, (0.5, 0.95))
    k, units = correct.shape
    right = correct.sum(axis=1)
    level = statistics.ALPHA / (k - 1)
    sure = statistics._sure_counts(right, units, level)
    below = statistics._sure_counts((units - right)[::-1], units, level)[::-1]
    assert sure[-1] > 100 and below[0] > 100  # the shortcut is taken both ways
    for i in range(k):
        both = (correct[: sure[i]] & correct[i]).sum(axis=1)
        assert (statistics.one_sided_p(right[: sure[i]] - both, right[i] - both) <= level).all()
        lower = slice(k - below[i], k)
        both = (correct[lower] & correct[i]).sum(axis=1)
        assert (statistics.one_sided_p(right[i] - both, right[lower] - both) <= level).all()


def test_p_table_holds_the_exact_p_values():
    rng = np.random.default_rng(12)
    n = rng.integers(0, 2000, size=20000)
    d = rng.integers(0, 6 * np.sqrt(np.maximum(n, 1)).astype(np.int64) + 2)
    d -= (d - n) % 2  # the difference has the parity of the discordant count
    ok = (d >= 0) & (d <= n)
    above, below = ((n + d) // 2)[ok].astype(float), ((n - d) // 2)[ok].astype(float)
    table = statistics._PTable(2000)
    np.testing.assert_array_equal(table.lookup(above, below), statistics.one_sided_p(above, below))
    np.testing.assert_array_equal(table.lookup(above, below), statistics.one_sided_p(above, below))  # from the table


def _plain_interval(correct, codes, n_groups, indices, metric):
    """One (subset, metric) interval the plain way: per-group counts by bincount, every resample's weights,
    a float64 matrix product (exact: sums of small integers), percentiles."""
    chosen = np.arange(correct.shape[1]) if indices is None else indices
    subset_codes = codes[chosen]
    groups = np.unique(subset_codes)
    sums = np.stack([np.bincount(subset_codes, weights=row, minlength=n_groups)[groups] for row in correct[:, chosen]])
    sizes = np.bincount(subset_codes, minlength=n_groups)[groups].astype(float)
    numerators, denominators = (
        (sums, sizes) if metric == "accuracy" else ((sums == sizes).astype(float), 1.0 + 0 * sizes)
    )
    weights = np.concatenate(list(statistics.resample_blocks(n_groups))).astype(np.float64)[:, groups]
    drawn, totals = numerators @ weights.T, weights @ denominators
    present = totals > 0
    samples = drawn[:, present] / totals[present] * 100.0
    tail = (1.0 - statistics.CONFIDENCE) / 2.0 * 100.0  # as the module computes it (not exactly 2.5)
    low, high = np.percentile(samples, [tail, 100.0 - tail], axis=1)
    values = numerators.sum(axis=1) / denominators.sum() * 100.0
    return values, low, high


def test_bootstrap_equals_the_plain_computation(nlvr2_small, monkeypatch):
    """Every ratio's values and bounds, bit for bit: subsets (one so small a resample can
    miss it) and consistency on a subset of whole groups included."""
    gold, subsets, stacked = nlvr2_small
    codes, n_groups = statistics.group_codes(gold)
    whole_groups = np.flatnonzero(np.isin(codes, np.arange(0, n_groups, 3)))
    wanted = {
        "all": (None, ("accuracy", "consistency")),
        **{name: (indices, ("accuracy",)) for name, indices in subsets.items()},
        "tiny": (np.array([5, 6, 7]), ("accuracy",)),
        "part": (whole_groups, ("accuracy", "consistency")),
    }
    monkeypatch.setattr(statistics, "_ENTRY_BLOCK", 7)  # entries in several blocks
    table = statistics.intervals(NLVR2, gold, stacked, wanted)
    correct = (stacked == gold.labels).astype(float)
    for (subset, metric), interval in table.items():
        values, low, high = _plain_interval(correct, codes, n_groups, wanted[subset][0], metric)
        np.testing.assert_array_equal(interval.values, values)
        np.testing.assert_array_equal(interval.low, low)
        np.testing.assert_array_equal(interval.high, high)
    assert table[("tiny", "accuracy")].low.shape == (len(stacked),)


def test_two_ratios_in_one_product_equal_each_alone(nlvr2_small, monkeypatch):
    """Packed (a + M b in one float32 product) or not (past float32's exact integers), the same intervals."""
    gold, subsets, stacked = nlvr2_small
    wanted = {"all": (None, ("accuracy", "consistency")), **{n: (i, ("accuracy",)) for n, i in subsets.items()}}
    ratios = statistics.metric_ratios(NLVR2, gold, stacked, wanted)
    _, n_groups = statistics.group_codes(gold)
    blocks = list(statistics.resample_blocks(n_groups))
    pair = [ratios[("all", "accuracy")], ratios[("all", "consistency")]]
    totals = [[w.astype(np.float64) @ r.denominators for w in blocks] for r in pair]
    assert statistics._packing(pair, totals) is not None  # the packed path is taken
    packed = statistics.intervals(NLVR2, gold, stacked, wanted)
    monkeypatch.setattr(statistics, "_EXACT", 100)  # nothing fits: every ratio its own product
    assert statistics._packing(pair, totals) is None
    alone = statistics.intervals(NLVR2, gold, stacked, wanted)
    for name, interval in packed.items():
        for field in ("values", "low", "high"):
            np.testing.assert_array_equal(getattr(interval, field), getattr(alone[name], field))


def _plain_count_ranks(counts: np.ndarray, units: int, alpha: float = statistics.ALPHA):
    """count_ranks as its docstring states it, pair by pair: every pair's two-sided p-value from the formula,
    Holm over all k(k - 1)/2 pairs; (ranks, highs)."""
    import math

    k = counts.size
    tests = []
    for i in range(k):
        for j in range(i + 1, k):
            high, low = max(counts[i], counts[j]), min(counts[i], counts[j])
            variance = (high + low) * (2 * units - high - low) / (2 * units)
            z = (high - low - 1) / math.sqrt(variance) if variance > 0 else 0.0
            p = 1.0 if high == low or variance <= 0 else 0.5 * math.erfc(z / 2**0.5)
            tests.append((min(1.0, 2 * p), i if counts[i] > counts[j] else j, j if counts[i] > counts[j] else i))
    tests.sort(key=lambda test: test[0])
    better, worse = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    for step, (p, winner, loser) in enumerate(tests):
        if p > alpha / (len(tests) - step):
            break
        better[loser] += 1
        worse[winner] += 1
    return 1 + better, k - worse


@pytest.mark.parametrize("seed", range(6))
def test_count_ranks_equal_the_plain_computation(seed):
    rng = np.random.default_rng(seed)
    units = int(rng.choice([40, 400, 2000, 6967]))
    k = int(rng.integers(1, 60))
    counts = np.sort(rng.integers(int(units * 0.5), units + 1, size=k))[::-1]
    counts[rng.random(k) < 0.3] = counts[0]  # ties, also with the best
    counts = np.sort(counts)[::-1]
    values = 100.0 * counts / units
    best = np.flatnonzero(np.r_[True, counts[1:] != counts[:-1]])  # a sub-table: the first of each count
    whole, sub = statistics.count_ranks(values, units, [None, best])
    ranks, lows, highs = whole.ranks, whole.lows, whole.highs
    view_ranks, view_highs = sub.ranks, sub.highs
    expected_ranks, expected_highs = _plain_count_ranks(counts, units)
    np.testing.assert_array_equal(ranks, expected_ranks)
    np.testing.assert_array_equal(highs, expected_highs)
    np.testing.assert_array_equal(lows, ranks)
    view_expected = _plain_count_ranks(counts[best], units)
    np.testing.assert_array_equal(view_ranks, view_expected[0])
    np.testing.assert_array_equal(view_highs, view_expected[1])
    # One procedure: every rank inside its interval; equal counts, equal ranks and intervals.
    assert (lows <= ranks).all() and (ranks <= highs).all() and (highs <= k).all()
    for count in np.unique(counts):
        same = counts == count
        assert len(set(ranks[same])) == len(set(highs[same])) == 1


def test_count_ranks_separate_counts_far_apart_and_never_close_ones():
    units = 6967
    counts = np.array([6000, 5990, 5400, 5400, 3500])
    found = statistics.count_ranks(100.0 * counts / units, units, [None])[0]
    ranks, highs = found.ranks, found.highs
    assert ranks.tolist() == [1, 1, 3, 3, 5]
    assert highs.tolist() == [2, 2, 4, 4, 5]
    assert statistics.unpaired_p(np.array([5000]), np.array([5000]), units)[0] == 1.0
