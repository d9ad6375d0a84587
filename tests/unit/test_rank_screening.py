"""The shortcuts view_ranks takes before a pair's exact McNemar test, each against what the exact test decides:
limits on a pair's discordant count n per difference d (_NLimits), bounds on n from part of the judgements
(_PairCounts), and the p-values PairFamily drops once enough pairs are known never rejected. None may settle a
pair the exact test would settle otherwise: the ranks must come out identical."""

from __future__ import annotations

import numpy as np
import pytest

from app.evaluation import statistics

from .test_statistics_fast import _assert_ranks_equal, _board, _exact_ranks


def _p(d: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The p view_ranks computes for a pair (difference d, discordant n), stand-ins included."""
    return statistics._decisive_p((n + d) // 2, (n - d) // 2)


@pytest.mark.parametrize("units", [600, 64 * 3 + 5])
def test_count_limits_settle_only_pairs_the_exact_p_settles(units):
    """Every (d, n) a pair can have: at n <= sure[d] its p is under the level, at n >= never[d] over it, and the
    limits are the crossings themselves (one step of n further the p is on the other side), for the level of a
    board's strictest threshold and for looser ones."""
    limits = statistics._NLimits(units)
    d, n = (a.ravel() for a in np.meshgrid(np.arange(units + 1), np.arange(units + 1), indexing="ij"))
    possible = (n >= d) & ((n - d) % 2 == 0)
    d, n = d[possible], n[possible]
    p = _p(d, n)
    at = np.minimum(d, limits.beyond)
    for level in (5e-10, 1e-6, 0.02, 1e-6, 6e-7):  # one object: a level found before never stands for a higher one
        sure = limits.sure(level)[at]
        assert (p[n <= sure] <= level).all()
        assert (p[(n == sure + 2) & (d <= limits.beyond)] > level).all()  # the last n that is sure, not one short
        assert (n <= sure).any() and (n > sure).any()
        never = limits.never(level)[at]
        assert (p[n >= never] > level).all()
        assert (p[(n == never - 2) & (n >= d)] <= 2 * level / statistics._SURE_MARGIN).all()  # kept down to half
        assert (n >= never).any() and (n < never).any()


@pytest.mark.parametrize("k, units", [(200, 3000), (130, 64 * 5 + 7)])
def test_counts_from_part_of_the_judgements_settle_each_pair_as_its_full_count(k, units, monkeypatch):
    """_PairCounts.settle, which leaves out of the later parts of the words the columns whose pairs the counts so
    far settle, returns for every pair what its full count gives: never rejected exactly where n >= never[d],
    surely rejected exactly where n <= sure[d] (and not never), and the exact p of the rest. On a crowded board
    it counts well under every pair on every word (the shortcut is taken)."""
    rng = np.random.default_rng(k)
    correct, _ = _board(rng, k, units, (0.70, 0.80))
    judgements = statistics.PackedJudgements.of(correct)
    right = judgements.right.astype(np.int32)
    table = statistics._PTable(units)
    limits = statistics._NLimits(units)
    never_at, sure_at = limits.never(1e-6), limits.sure(5e-9)
    counted = []
    whole = statistics._popcounts_t
    monkeypatch.setattr(
        statistics,
        "_popcounts_t",
        lambda rows, columns, combine: (
            counted.append(rows.shape[1] * columns.shape[1] * rows.shape[0]) or whole(rows, columns, combine)
        ),
    )
    counts = statistics._PairCounts(np.ascontiguousarray(judgements.packed.T), judgements.right, units)
    both = (correct[:, None, :] & correct[None, :, :]).sum(axis=2)
    pairs = 0
    for start in range(0, k, 64):
        stop = min(k, start + 64)
        columns = np.arange(stop)
        tested = columns[None, :] < np.arange(start, stop)[:, None]
        ahead = right[None, :stop] - right[start:stop, None]
        never, rejected, p = counts.settle(start, stop, 0, tested, ahead, (never_at, sure_at, limits.beyond), table)
        n = right[None, :stop] + right[start:stop, None] - 2 * both[start:stop, :stop]
        at = np.clip(ahead, 0, limits.beyond)
        expected_never = n >= never_at[at]
        expected_rejected = (n <= sure_at[at]) & ~expected_never
        np.testing.assert_array_equal(never[tested], expected_never[tested])
        np.testing.assert_array_equal(rejected[tested], expected_rejected[tested])
        rest = tested & ~(expected_never | expected_rejected)
        np.testing.assert_array_equal(p[rest], _p(ahead[rest], n[rest]))
        pairs += tested.size
    assert 0 < sum(counted) < 0.8 * pairs * judgements.packed.shape[1]


def _plain_holm(p: np.ndarray, above: np.ndarray, below: np.ndarray, size: int, alpha: float):
    """(B, W) from Holm's step-down over every pair's two-sided p, pair by pair."""
    better, worse = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
    two_sided = np.minimum(1.0, 2.0 * p)
    for step, pair in enumerate(np.argsort(two_sided, kind="stable")):
        if two_sided[pair] > alpha / (p.size - step):
            break
        better[below[pair]] += 1
        worse[above[pair]] += 1
    return better, worse


@pytest.mark.parametrize("seed", range(6))
def test_pair_family_drops_only_p_values_no_threshold_reaches(seed):
    """A family told of the pairs its caller found never rejected (never=, each with a p over the bound as it
    stood) drops every later p over alpha / (2U) and decides as plain Holm over all the pairs: p-values crowded
    around the thresholds Holm reaches, given in batches in random order."""
    rng = np.random.default_rng(seed)
    size, alpha = 80, statistics.ALPHA
    above, below = np.triu_indices(size, 1)
    pairs = above.size
    # Some far under any threshold, many around Holm's (alpha / 2 over the pairs left), many far over.
    p = np.concatenate(
        [
            rng.uniform(0, alpha / 2 / pairs, pairs // 5),
            alpha / 2 / rng.uniform(pairs // 10, pairs, pairs // 3),
            rng.uniform(alpha / 2 / 200, 1.0, pairs),
        ]
    )[rng.permutation(pairs + pairs // 5 + pairs // 3)][:pairs]
    family = statistics.PairFamily(size, alpha)
    for batch in np.array_split(rng.permutation(pairs), 7):
        over = p[batch] > family.bound  # what a caller settles from counts alone: never added, only counted
        chosen = batch[~over]
        family.add(p[chosen], above[chosen], below[chosen], never=int(over.sum()))
    found = family.decide()
    better, worse = _plain_holm(p, above, below, size, alpha)
    np.testing.assert_array_equal(found.better, better)
    np.testing.assert_array_equal(found.worse, worse)
    assert family.never > pairs // 2  # the bound came into play
    assert sum(kept.size for kept in family._p) < pairs // 2


def test_a_view_of_part_of_the_table_ranked_alone_is_ranked_as_on_its_own():
    """One view, not the whole table (the teams view of a board whose entries-view is not asked for): its pairs
    are its own members', not every pair of the block's rows."""
    rng = np.random.default_rng(3)
    correct, primary = _board(rng, 300, 2000, (0.6, 0.9))
    view = np.sort(rng.choice(300, 150, replace=False))
    (found,) = statistics.view_ranks(correct, primary, [view])
    _assert_ranks_equal(found, _exact_ranks(correct[view], primary[view]))
