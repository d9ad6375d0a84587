"""Uncertainty for leaderboards: cluster-bootstrap intervals of scores; ranks and rank intervals from one
procedure: one test per pair of entries and Holm's procedure over all the board's pairs (PairFamily;
view_ranks, paired_view_ranks, and count_ranks before a reveal).

Pure (numpy and the standard library). Every metric of a task is a ratio of per-group sums:
accuracy on a subset is (correct judgements of the subset's examples in each group) over (how many
there are), consistency is (1 if the whole group is right) over 1. The bootstrap resamples *groups*
(consistency groups: NLVR2 and NLVR sentences; VCR questions, one per group), because examples of
one sentence are not independent; an example-level bootstrap would give intervals that are too narrow.

The resamples are drawn once for a split (a fixed seed and the number of groups decide them) and
shared by every entry, so a whole table is a matrix product per metric (two metrics to a product where
float32 holds both exactly): per-group counts (entries x groups) times resample weights (groups x
resamples). An entry's interval is the same on the leaderboard and on its own page, and two entries are
compared on the same resamples.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from . import layout
from .gold import GoldSet

if TYPE_CHECKING:
    from .tasks.base import Outcomes, TaskType

RESAMPLES = 1000
SEED = 20190706  # fixed: the same predictions always get the same interval
CONFIDENCE = 0.95
ALPHA = 0.05  # significance level for rank tiers (after Holm's correction)
_BLOCK = 200  # resamples generated and multiplied at a time: bounds memory for VCR-size splits
_SUM_CHUNK = 4_000_000  # group sums: (groups x entries) summed at a time (16 MB of gathered rows of 4)
_VALUE_CHUNK = 8192  # groups whose sums are added at a time for the point estimates


@dataclass(frozen=True)
class Ratio:
    """One metric of k entries as a ratio of per-group sums, over the groups the subset touches.

    value[e] = 100 * sum_g numerators[e, g] / sum_g denominators[g]

    The sums are kept laid out by group, in the smallest dtype that holds them (`by_group`, (rows, k)): a VQA v2
    test-std board of 1,000 entries is 448 MB of one-byte points, where float32 (k, groups) numerators were 1.8 GB.
    Where every group is one example (VQA v2, VCR) `by_group` is the outcomes' own by-example matrix and `rows`
    picks the subset's examples from it (nothing copied).
    """

    groups: np.ndarray  # (G_s,) indices into the split's groups 0..n_groups-1
    by_group: np.ndarray  # (rows, k) per-group sums, small integers (uint8/uint16/float32)
    denominators: np.ndarray  # float64 (G_s,)
    # Points one judgement is scored in (VQA v2: 30 a question, for 0/30/60/90/100%): a count interval counts
    # judgements, never points, since a judgement's points move together.
    points: int = 1
    rows: np.ndarray | None = None  # the rows of by_group that are the groups, in order (None: every row)

    @property
    def k(self) -> int:
        return int(self.by_group.shape[1])

    def chunk(self, start: int, stop: int) -> np.ndarray:
        """The sums of groups start..stop (positions in `groups`), (stop - start, k): a view, or a gather."""
        found: np.ndarray = self.by_group[start:stop] if self.rows is None else self.by_group[self.rows[start:stop]]
        return found

    @property
    def numerators(self) -> np.ndarray:
        """float32 (k, G_s), made whole (two entries compared, the sealed gap: small k)."""
        return self.chunk(0, self.groups.size).T.astype(np.float32)

    @cached_property
    def values(self) -> np.ndarray:
        total = self.denominators.sum()
        if total == 0:
            return np.full(self.k, np.nan)
        sums = np.zeros(self.k)
        for start in range(0, self.groups.size, _VALUE_CHUNK):  # small integers: exact in any order
            sums += self.chunk(start, min(self.groups.size, start + _VALUE_CHUNK)).sum(axis=0, dtype=np.float64)
        values: np.ndarray = sums / total * 100.0
        return values


@dataclass(frozen=True)
class Interval:
    """Point estimates and percentile-bootstrap bounds of one metric for k entries, in percent."""

    values: np.ndarray
    low: np.ndarray
    high: np.ndarray


# --- from predictions to per-group counts ----------------------------------------------------------------


def group_codes(gold: GoldSet) -> tuple[np.ndarray, int]:
    """Consistency groups renumbered 0..G-1 (VCR: one group per question)."""
    uniques, codes = np.unique(np.asarray(gold.groups), return_inverse=True)
    return codes.astype(np.int64), int(uniques.size)


def _group_sums(values: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, m) values of m examples with group codes (m,) -> (present groups, sums (k, G_s))."""
    groups, by_group, rows = _group_sums_by_example(layout.by_example(values), codes)
    return groups, (by_group if rows is None else by_group[rows]).T


def _group_sums_by_example(
    by_example: np.ndarray, codes: np.ndarray, indices: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Group sums of the examples `indices` (None: all) of a (n, k) by-example matrix, codes (the examples'
    groups) given for those examples -> (present groups, sums (rows, k), the rows that are the groups in order or
    None for every row in order). Where every group is one example the sums are the examples themselves: the
    by-example matrix is given back with the rows to read (nothing copied: 448 MB on a 1,000-entry VQA v2
    test-std board).

    Otherwise all groups of one size at a time, whole rows of k entries added (a reduceat along the examples of the
    (k, n) matrix steps through memory and is tens of times slower on a 10,000-entry board); a subset's rows
    are picked in the same gather, not copied first. The sums are small integers, kept in the smallest dtype that
    holds the largest a group can have."""
    k = by_example.shape[1]
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    if ordered.size == 0:
        return ordered, np.zeros((0, k), dtype=np.float32), None
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, ordered.size])
    rows = order if indices is None else np.asarray(indices)[order]
    if starts.size == ordered.size:  # one example a group
        if rows.size == by_example.shape[0] and (rows == np.arange(rows.size)).all():
            return ordered, by_example, None
        return ordered, by_example, rows
    largest = float(by_example.max(initial=0)) * float(sizes.max())
    dtype = np.uint8 if largest <= 255 and by_example.dtype.kind in "ub" else np.float32
    sums = np.empty((starts.size, k), dtype=dtype)
    chunk = max(1, _SUM_CHUNK // max(k, 1))  # groups at a time: bounds the gathered (groups, size, k) rows
    for size in np.unique(sizes):
        which = np.flatnonzero(sizes == size)
        members = rows[starts[which][:, None] + np.arange(size)]  # (groups of this size, size)
        for at in range(0, which.size, chunk):
            sums[which[at : at + chunk]] = by_example[members[at : at + chunk]].sum(axis=1, dtype=dtype)
    return ordered[starts], sums, None


def metric_ratios(
    task: TaskType, gold: GoldSet, stacked: np.ndarray, wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]]
) -> dict[tuple[str, str], Ratio]:
    """Per-group counts of every wanted (subset, metric) for k stacked submissions.

    wanted: subset name -> (example indices or None for the whole split, metrics). The task's own
    metric names are understood: binary tasks (accuracy over judgements, consistency over groups) and
    VCR (q_a, qa_r, q_ar per question).
    """
    return dict(_each_ratio(task, gold, stacked, wanted))


def _each_ratio(
    task: TaskType, gold: GoldSet, stacked: np.ndarray, wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]]
) -> Iterator[tuple[tuple[str, str], Ratio]]:
    """metric_ratios one (subset, metric) at a time, so a caller can be done with one before the next.

    The outcomes are laid out by example once (examples as rows: see _group_sums_by_example) and serve every
    subset; a subset's consistency counts reuse its accuracy sums where the two count the same judgements
    (a group is consistent when its right examples are all its examples). Each ratio holds its sums by group
    (Ratio.by_group), held by nothing here once yielded."""
    stacked = np.asarray(stacked)
    codes, _ = group_codes(gold)
    outcomes = _outcomes(task, gold, stacked)
    # The latest sums, for consistency.
    last: tuple[int, str, tuple[np.ndarray, np.ndarray, np.ndarray | None]] | None = None

    def sums_of(
        by_example: np.ndarray, subset: str, indices: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        nonlocal last
        if last is not None and last[0] == id(by_example) and last[1] == subset:
            found, last = last[2], None  # used once (consistency after accuracy): not held any longer
            return found
        found = _group_sums_by_example(by_example, codes if indices is None else codes[indices], indices)
        # Kept only for a consistency still to come on the subset (else it would hold 70 MB for nothing).
        last = (id(by_example), subset, found) if "consistency" in wanted[subset][1] else None
        return found

    remaining = sum(len(metrics) for _, metrics in wanted.values())
    for subset, (indices, metrics) in wanted.items():
        subset_codes = codes if indices is None else codes[indices]
        for metric in metrics:
            if metric not in outcomes["counts"] and metric != "consistency":
                raise ValueError(f"no interval for metric {metric!r} of task {task.name!r}")
            if metric == "consistency":
                # On a subset of whole groups (a blind test's queried or sealed part) as on the split.
                groups, sums, rows = sums_of(outcomes["all_right"], subset, indices)
                right = sums if rows is None else sums[rows]
                sizes = np.bincount(subset_codes, minlength=1)[groups]
                consistent = (right == sizes[:, None]).view(np.uint8)
                ratio = Ratio(groups, consistent, np.ones(groups.size))
                del right
            elif metric in outcomes["counts"]:
                by_example, per_example = outcomes["counts"][metric]
                groups, sums, rows = sums_of(by_example, subset, indices)
                if isinstance(per_example, np.ndarray):  # judgements vary by example (GQA: balanced ones only)
                    counted = per_example if indices is None else per_example[indices]
                    per_group = np.bincount(subset_codes, weights=counted, minlength=1)
                    denominators = per_group[groups] if groups.size else np.zeros(0)
                else:
                    sizes = np.bincount(subset_codes, minlength=1)[groups] if groups.size else np.zeros(0)
                    denominators = sizes.astype(np.float64) * per_example
                points = outcomes.get("points", {}).get(metric, 1)
                ratio = Ratio(groups, sums, denominators, points, rows)
                del by_example
            del sums  # the sums live on in the ratio alone: a consumer that drops it frees them
            remaining -= 1
            if remaining == 0:  # the last: the by-example outcomes (70 MB) are not needed while it is bootstrapped
                outcomes.clear()
            made = [ratio]
            del ratio
            yield (subset, metric), made.pop()  # not held by this frame while suspended


def _outcomes(task: TaskType, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
    """Per-example outcomes laid out by example, (n, k) (bool as uint8): judgements right per example for each
    counted metric (with how many judgements an example has), and whether all of an example's are right (the
    task type lays them out: see TaskType.example_outcomes)."""
    return task.example_outcomes(gold, stacked)


def primary_correctness(task: TaskType, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
    """(k, units) bool: each judgement the primary metric counts (NLVR images: every image; VCR: Q->AR)."""
    return task.unit_correctness(gold, np.asarray(stacked))


# --- the bootstrap ---------------------------------------------------------------------------------------


def resample_blocks(n_groups: int, resamples: int = RESAMPLES, seed: int = SEED) -> Iterator[np.ndarray]:
    """Bootstrap weights in blocks: float32 (b, n_groups), how often each group is drawn in a resample.

    Deterministic for (n_groups, resamples, seed), whatever the entries: the same resamples serve a
    whole table and every entry's own page.
    """
    for counts in resample_counts(n_groups, resamples, seed):
        yield counts.astype(np.float32)


def resample_counts(
    n_groups: int, resamples: int = RESAMPLES, seed: int = SEED, block: int = _BLOCK
) -> Iterator[np.ndarray]:
    """resample_blocks' weights as the small integers they are: (b, n_groups) uint8 (uint16 in a block where a group
    is drawn more than 255 times). Each resample's draws are made on their own (n_groups integers: 3.6 MB on VQA v2
    test-std, where a block's were 716 MB), which numpy's generator gives the same as one block's draws at once."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        counts = np.empty((b, n_groups), dtype=np.uint8)
        for row in range(b):
            drawn = np.bincount(rng.integers(0, n_groups, size=n_groups), minlength=n_groups)
            if counts.dtype == np.uint8 and drawn.max(initial=0) > 255:
                counts = counts.astype(np.uint16)
            counts[row] = drawn
        yield counts
        del counts, drawn  # before the next block is made: one block alive at a time (112 MB on VQA v2 test-std)


def bootstrap(
    ratios: Mapping[tuple[str, str], Ratio],
    n_groups: int,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> dict[tuple[str, str], Interval]:
    """Percentile intervals for every ratio of k entries, on shared group resamples.

    The resamples are drawn once (7 MB of weights on NLVR2) and serve every ratio; two ratios at a time
    (_bootstrap_pair)."""
    blocks = list(resample_blocks(n_groups, resamples, seed))
    items = list(ratios.items())
    result: dict[tuple[str, str], Interval] = {}
    for at in range(0, len(items), 2):
        result.update(_bootstrap_pair(items[at : at + 2], n_groups, blocks, confidence))
    return result


_ENTRY_BLOCK = 2048  # entries whose resampled values are held at once (16 MB a ratio)
_EXACT = 2**24  # float32 holds every integer up to here exactly


def _bootstrap_pair(
    items: list[tuple[tuple[str, str], Ratio]],
    n_groups: int,
    blocks: Sequence[np.ndarray],
    confidence: float,
    *,
    reuse: bool = False,
) -> dict[tuple[str, str], Interval]:
    """The intervals of one or two ratios, entries a block at a time. Two ratios share one matrix product where that
    is exact: numerators a + M b with M over any resampled value of a, every sum an integer float32 holds (see
    _packing). With `reuse` the ratios are taken over (`items` is emptied): the product's matrix may be made in
    their numerators, and once it is made they are dropped (70 MB each on a 10,000-entry board).

    Long because it is the bootstrap's hot loop: one pass over entry blocks and resample blocks that shares the
    per-ratio state (masks, totals) the blocks fill in place."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    names = [key for key, _ in items]
    ratios = [ratio for _, ratio in items]
    if reuse:
        items.clear()
    scores = [ratio.values for ratio in ratios]  # before _packing may reuse their numerators
    k = ratios[0].k
    # Per ratio: the weights of its groups, and each resample's denominator and presence (a subset can miss
    # every one of its groups in a resample).
    weights = [[w if r.groups.size == n_groups else w[:, r.groups] for w in blocks] for r in ratios]
    totals = [[w.astype(np.float64) @ r.denominators for w in ws] for r, ws in zip(ratios, weights, strict=True)]
    present = [[t > 0 for t in ts] for ts in totals]
    drawn = [sum(int(p.sum()) for p in ps) for ps in present]
    packing = _packing(ratios, totals, reuse=reuse)
    if packing is not None:
        groups, multiplier, combined, small = packing
        together = [w if groups.size == n_groups else w[:, groups] for w in blocks]
        if reuse:
            ratios = []  # the product's matrix holds all that is needed of them
    else:
        numerators = [r.numerators for r in ratios]  # float32 (k, G_s), made once
    lows = [np.full(k, np.nan) for _ in names]
    highs = [np.full(k, np.nan) for _ in names]
    for start in range(0, k, _ENTRY_BLOCK):
        stop = min(k, start + _ENTRY_BLOCK)
        rows = [np.empty((stop - start, n)) for n in drawn]
        filled = [0] * len(names)
        for b in range(len(blocks)):
            if packing is not None:
                # (entries, b): the matrix product that does the work, both ratios at once; exact integers
                both = (combined[:, start:stop].T @ together[b].T).astype(np.int64)
                high, low = np.divmod(both, multiplier)
                resampled = [low, high] if small == 0 else [high, low]
            else:
                resampled = [m[start:stop] @ ws[b].T for m, ws in zip(numerators, weights, strict=True)]
            for i, values in enumerate(resampled):
                mask, total = present[i][b], totals[i][b]
                if not mask.all():
                    values, total = values[:, mask], total[mask]
                into = rows[i][:, filled[i] : filled[i] + total.size]
                np.divide(values, total, out=into)
                np.multiply(into, 100.0, out=into)
                filled[i] += total.size
        for i, block in enumerate(rows):
            if drawn[i] == 0:
                continue
            # Sorted in place (a SIMD sort beats np.percentile's selection), then the percentiles read off.
            block.sort(axis=1)
            lows[i][start:stop], highs[i][start:stop] = _percentiles_of_sorted(block, (tail, 100.0 - tail))
    return {key: Interval(value, low, high) for key, value, low, high in zip(names, scores, lows, highs, strict=True)}


# Splits with more groups than this are bootstrapped streamed (_streamed_intervals): float32 weights of every resample
# and float32 sums of every entry are no longer held whole (VQA v2 test-std: 1.8 GB each for 1,000 entries; the
# weights alone were 64 MB at this size).
STREAM_GROUPS = 16384
_STREAM_BLOCK = 250  # resamples whose weights are held at once when streamed (112 MB on 447,793 groups)
_STREAM_CHUNK = 16384  # groups multiplied at a time when streamed


def _parts(ratios: Sequence[Ratio], n_groups: int) -> dict[int, list[int]]:
    """For each whole-split ratio, the subset ratios it is the sum of where they cover it (VQA v2's overall accuracy
    is its three answer types'): disjoint, read from the same sums with the same denominators. Its resampled sums
    are then theirs added up, and only the groups none of them covers are multiplied for it (half the products)."""
    found: dict[int, list[int]] = {}
    for i, whole in enumerate(ratios):
        if whole.groups.size != n_groups or whole.rows is not None:
            continue
        taken = np.zeros(n_groups, dtype=bool)
        parts = []
        for j in sorted(range(len(ratios)), key=lambda j: -ratios[j].groups.size):
            part = ratios[j]
            if j == i or part.by_group is not whole.by_group or part.rows is None or part.points != whole.points:
                continue
            same_rows = np.array_equal(part.rows, part.groups)  # row g of the sums is group g's, as in the whole
            if not same_rows or taken[part.groups].any():
                continue
            if not np.array_equal(part.denominators, whole.denominators[part.groups]):
                continue
            taken[part.groups] = True
            parts.append(j)
        if parts:
            found[i] = parts
    return found


def _streamed_intervals(
    items: list[tuple[tuple[str, str], Ratio]], n_groups: int, resamples: int, seed: int, confidence: float
) -> dict[tuple[str, str], Interval]:
    """The intervals of every ratio, their weights and sums streamed: the resamples a block at a time (their counts
    as bytes), the split's groups a chunk at a time (each chunk's weights made float32 once for every ratio), one
    float32 product per ratio and chunk, exact (a chunk is small enough that every partial sum is an integer float32
    holds), added up in float64. The same numbers as _bootstrap_pair's, in bounded memory: a block of weights, a
    chunk of sums and (k, resamples) sums a ratio."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    ratios = [ratio for _, ratio in items]
    k = ratios[0].k if ratios else 0
    sums = [np.zeros((k, resamples)) for _ in ratios]
    totals = [np.zeros(resamples) for _ in ratios]
    whole = [ratio.groups.size == n_groups for ratio in ratios]  # every group, in order
    parts = _parts(ratios, n_groups)
    # A ratio that is the sum of its parts is multiplied only on the groups they leave (as a subset of itself).
    left: dict[int, np.ndarray] = {}
    for i, of in parts.items():
        covered = np.zeros(n_groups, dtype=bool)
        for j in of:
            covered[ratios[j].groups] = True
        left[i] = np.flatnonzero(~covered)
    # A group's sum is at most its denominator; whole-number denominators are summed in float32 too (exact).
    largest = max([float(r.denominators.max(initial=0)) for r in ratios] + [1.0])
    integral = all(bool(np.all(r.denominators == np.round(r.denominators))) for r in ratios)
    at = 0
    for counts in resample_counts(n_groups, resamples, seed, _STREAM_BLOCK):
        b = counts.shape[0]
        heaviest = max(float(counts.max(initial=0)), 1.0)
        step = int(max(1, min(_STREAM_CHUNK, (_EXACT - 1) // (largest * heaviest))))
        # float32 where one group's largest weighted sum already is exact in it (always, but for absurd groups)
        kind = np.float32 if largest * heaviest < _EXACT else np.float64
        edges = np.arange(0, n_groups + step, step).clip(max=n_groups)
        # Per ratio, where each chunk's groups begin among its own (positions in ratio.groups, or in left[i]).
        cuts = [
            np.searchsorted(left[i], edges) if i in left else None if w else np.searchsorted(r.groups, edges)
            for i, (r, w) in enumerate(zip(ratios, whole, strict=True))
        ]
        for c, start in enumerate(edges[:-1].tolist()):
            stop = int(edges[c + 1])
            weights = counts[:, start:stop].astype(kind)  # (b, chunk)
            for i, ratio in enumerate(ratios):
                cut = cuts[i]
                lo, hi = (start, stop) if cut is None else (int(cut[c]), int(cut[c + 1]))
                if lo == hi:
                    continue
                if i in left:  # only what its parts leave: groups left[i][lo:hi], rows the same (a whole ratio)
                    groups = left[i][lo:hi]
                    mine, part, share = weights[:, groups - start], ratio.by_group[groups], ratio.denominators[groups]
                else:
                    mine = weights if whole[i] else weights[:, ratio.groups[lo:hi] - start]
                    part, share = ratio.chunk(lo, hi), ratio.denominators[lo:hi]
                within = kind == np.float32 and float(part.max(initial=0)) <= largest
                if within:
                    sums[i][:, at : at + b] += part.astype(np.float32).T @ mine.T
                else:  # a sum over its bound (never, for sums of right judgements): float64, exact all the same
                    sums[i][:, at : at + b] += part.astype(np.float64).T @ mine.T.astype(np.float64)
                if integral and kind == np.float32:
                    totals[i][at : at + b] += mine @ share.astype(np.float32)
                else:
                    totals[i][at : at + b] += mine.astype(np.float64) @ share.astype(np.float64)
        at += b
        del counts, weights, mine, part  # let go before the next block is drawn
    for i, of in parts.items():  # float64 sums of exact integers: the same whatever the order
        for j in of:
            sums[i] += sums[j]
            totals[i] += totals[j]
    result = {}
    for (key, ratio), resampled, total in zip(items, sums, totals, strict=True):
        present = total > 0
        values = ratio.values
        low, high = np.full(k, np.nan), np.full(k, np.nan)
        if present.any():
            block = np.divide(resampled[:, present], total[present])
            np.multiply(block, 100.0, out=block)
            block.sort(axis=1)
            low, high = _percentiles_of_sorted(block, (tail, 100.0 - tail))
        result[key] = Interval(values, low, high)
    return result


def _percentiles_of_sorted(rows: np.ndarray, percents: Sequence[float]) -> list[np.ndarray]:
    """np.percentile(rows, percent, axis=1), its linear method, of float rows sorted ascending (NaNs last), for
    each percent: the two neighbouring values read directly and interpolated as numpy does it (its selection
    pass costs a third of the time on sorted rows). Tests hold the two equal."""
    n = rows.shape[1]
    nan_rows = np.isnan(rows[:, -1])
    result = []
    for percent in percents:
        virtual = (n - 1) * (float(percent) / 100.0)
        previous = float(np.floor(virtual))
        if virtual >= n - 1:
            value = rows[:, -1].copy()
        else:
            below, above = rows[:, int(previous)], rows[:, int(previous) + 1]
            gamma = virtual - previous
            difference = above - below
            value = above - difference * (1.0 - gamma) if gamma >= 0.5 else below + difference * gamma
        value[nan_rows] = np.nan
        result.append(value)
    return result


def _packing(
    ratios: Sequence[Ratio], totals: Sequence[Sequence[np.ndarray]], *, reuse: bool = False
) -> tuple[np.ndarray, int, np.ndarray, int] | None:
    """(groups, M, numerators a + M b as float32 (groups, k), which ratio is a) for two ratios whose resampled
    numerators one product can carry exactly, else None. A resampled numerator is at most its denominator (a group's
    numerator is at most its denominator: right judgements of its examples, or 1 of 1), so with M one over
    a's largest resampled denominator, low and high parts come apart by division, and while M times b's
    largest plus a's stays under 2^24 every partial sum of the product is an integer float32 holds."""
    if len(ratios) != 2 or any(not ts or max(t.size for t in ts) == 0 for ts in totals):
        return None
    largest = [max(float(t.max()) for t in ts if t.size) for ts in totals]
    small = int(np.argmin(largest))
    a, b = ratios[small], ratios[1 - small]
    multiplier = int(largest[small]) + 1
    groups = np.union1d(a.groups, b.groups)
    denominators = np.zeros((2, groups.size))
    denominators[0, np.searchsorted(groups, a.groups)] = a.denominators
    denominators[1, np.searchsorted(groups, b.groups)] = b.denominators
    per_group = denominators[0] + multiplier * denominators[1]
    if multiplier * largest[1 - small] + largest[small] >= _EXACT or per_group.max(initial=0) >= _EXACT:
        return None
    parts = []
    for ratio, d in ((a, denominators[0]), (b, denominators[1])):
        by_group = ratio.chunk(0, ratio.groups.size)  # (G_s, k): the layout the sums are built in
        if not (by_group <= d[np.searchsorted(groups, ratio.groups)].astype(np.float32)[:, None]).all():
            return None
        parts.append((None if ratio.groups.size == groups.size else np.searchsorted(groups, ratio.groups), by_group))
    (a_at, a_part), (b_at, b_part) = parts
    if b_at is None:
        combined = b_part.astype(np.float32)  # the sums are kept in bytes (17 MB on a 10,000-entry board)
        combined *= np.float32(multiplier)
    else:
        combined = np.zeros((groups.size, b_part.shape[1]), dtype=np.float32)
        combined[b_at] = b_part
        combined *= np.float32(multiplier)
    if a_at is None:
        combined += a_part
    else:
        chunk = max(1, _SUM_CHUNK // max(combined.shape[1], 1))  # a fancy += gathers its rows first: in chunks
        for at in range(0, a_at.size, chunk):
            combined[a_at[at : at + chunk]] += a_part[at : at + chunk]  # distinct groups: no index repeats
    return groups, multiplier, combined, small


def intervals(
    task: TaskType,
    gold: GoldSet,
    stacked: np.ndarray,
    wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]],
    **options: Any,
) -> dict[tuple[str, str], Interval]:
    """Point estimates and 95% intervals of every wanted (subset, metric), k entries: cluster-bootstrap
    intervals, or with `counts_only` intervals that depend on each entry's count and the total alone. All at
    once: each_interval, whose keyword options these are, gives them as they are done."""
    return dict(each_interval(task, gold, stacked, wanted, **options))


def each_interval(
    task: TaskType,
    gold: GoldSet,
    stacked: np.ndarray,
    wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    counts_only: bool = False,
    on_values: Callable[[tuple[str, str], np.ndarray], None] | None = None,
) -> Iterator[tuple[tuple[str, str], Interval]]:
    """intervals() as they are done, in `wanted`'s order (subsets, then their metrics). `on_values` hears each
    column's point estimates as soon as they are counted, before its interval is drawn: a board's ranks need
    only the primary and tie-break columns' values (the table order), and can be worked out meanwhile.

    A task type's estimate-only metrics (TaskType.estimate_only_metrics: not a ratio of per-group sums) come
    first, their values from the task's own scoring and no interval (NaN bounds)."""
    wanted = yield from _estimates_only(task, gold, stacked, wanted, on_values)
    if counts_only:
        ratios = metric_ratios(task, gold, stacked, wanted)
        if on_values is not None:
            _tell_values(list(ratios.items()), on_values)
        yield from count_intervals(ratios).items()
        return
    _, n_groups = group_codes(gold)
    if n_groups > STREAM_GROUPS:
        items = list(_each_ratio(task, gold, stacked, wanted))
        if on_values is not None:
            _tell_values(items, on_values)
        yield from _streamed_intervals(items, n_groups, resamples, seed, CONFIDENCE).items()
        return
    blocks = list(resample_blocks(n_groups, resamples, seed))  # drawn once for every ratio
    # Two ratios at a time: their per-group counts (70 MB each for 10,000 entries on NLVR2) are dropped once
    # their intervals are drawn.
    each = _each_ratio(task, gold, stacked, wanted)
    for first in each:
        # Two at a time: one matrix product for both where exact. Handed over (reuse): nothing here holds them.
        batch = [first, *itertools.islice(each, 1)]
        del first
        if on_values is not None:
            _tell_values(batch, on_values)  # a loop here would hold the last ratio (70 MB) through its bootstrap
        yield from _bootstrap_pair(batch, n_groups, blocks, CONFIDENCE, reuse=True).items()


def _estimates_only(
    task: TaskType,
    gold: GoldSet,
    stacked: np.ndarray,
    wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]],
    on_values: Callable[[tuple[str, str], np.ndarray], None] | None,
) -> Generator[tuple[tuple[str, str], Interval], None, dict[str, tuple[np.ndarray | None, Sequence[str]]]]:
    """Yields the wanted estimate-only columns (values, NaN bounds); returns `wanted` without them."""
    only = set(task.estimate_only_metrics)
    picked = {subset: [m for m in metrics if m in only] for subset, (_, metrics) in wanted.items()}
    if not any(picked.values()):
        return dict(wanted)
    subsets = {subset: indices for subset, (indices, _) in wanted.items() if indices is not None}
    scored = task.score_batch(gold, np.asarray(stacked), subsets)
    for subset, metrics in picked.items():
        for metric in metrics:
            values = np.array([scores.get(subset, {}).get(metric, np.nan) for scores in scored], dtype=np.float64)
            if on_values is not None:
                on_values((subset, metric), values)
            nan = np.full(values.size, np.nan)
            yield (subset, metric), Interval(values, nan, nan.copy())
    return {
        subset: (indices, tuple(m for m in metrics if m not in only))
        for subset, (indices, metrics) in wanted.items()
        if any(m not in only for m in metrics)
    }


def _tell_values(
    ratios: Sequence[tuple[tuple[str, str], Ratio]], on_values: Callable[[tuple[str, str], np.ndarray], None]
) -> None:
    for key, ratio in ratios:
        on_values(key, ratio.values)


def count_intervals(
    ratios: Mapping[tuple[str, str], Ratio], *, confidence: float = CONFIDENCE
) -> dict[tuple[str, str], Interval]:
    """Wilson score intervals from each entry's count k of n alone. Nothing here depends on which judgements
    are right: a blind test's board and a team's own page then tell no more than the released counts (a
    cluster bootstrap would: two files with the same count get different intervals)."""
    z = float(_normal_quantile(1.0 - (1.0 - confidence) / 2.0))
    result = {}
    for key, ratio in ratios.items():
        values = ratio.values
        n = float(ratio.denominators.sum()) / ratio.points
        if n == 0:
            nan = np.full(values.size, np.nan)
            result[key] = Interval(values, nan, nan.copy())
            continue
        share = values / 100.0
        centre = (share + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        result[key] = Interval(values, (centre - half) * 100.0, (centre + half) * 100.0)
    return result


def _normal_quantile(q: float) -> float:
    from scipy.special import ndtri  # see one_sided_p

    return float(ndtri(q))


# --- paired tests and tiers ------------------------------------------------------------------------------


def load_tests() -> None:
    """Import what one_sided_p needs (scipy.special, a quarter of a second), for a caller with time to spare
    before its first test."""
    import scipy.special  # noqa: F401


def one_sided_p(better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """Exact one-sided McNemar p-values that the first of two entries is better: P(X >= better) for
    X ~ Binomial(better + worse, 1/2), where `better` counts the judgements only the first got right and
    `worse` those only the second got right. Vectorised (the regularised incomplete beta function)."""
    # Imported here: scipy.special costs a worker about 25 MB, and only the worker that computes a board
    # after a change needs it (uploads and page views never do).
    from scipy.special import betainc

    better = np.asarray(better, dtype=np.float64)
    worse = np.asarray(worse, dtype=np.float64)
    p = np.ones(np.broadcast(better, worse).shape, dtype=np.float64)
    some = better > 0
    # P(X >= x; n, 1/2) = I_{1/2}(x, n - x + 1)
    p[some] = betainc(np.broadcast_to(better, p.shape)[some], np.broadcast_to(worse, p.shape)[some] + 1.0, 0.5)
    return p


@dataclass(frozen=True)
class Ranks:
    """A board's (or view's) ranks and rank intervals, in table order, from one procedure (pair_decisions)."""

    ranks: np.ndarray  # (k,) the rank shown: 1 + B
    lows: np.ndarray  # (k,) the interval's best end: the rank itself
    highs: np.ndarray  # (k,) the interval's worst end: k - W
    better: np.ndarray  # (k,) B: entries decided better than this one
    worse: np.ndarray  # (k,) W: entries decided worse than this one
    # (d, 2) every decided pair as (better, worse) positions, only where asked for (view_ranks(pairs=True)):
    # what each row says of the others, for checking that rows agree.
    decided: np.ndarray | None = None
    # The smallest difference, in points, this board's own procedure detects with 80% power (see resolution);
    # None where it cannot be said (fewer than two entries).
    resolution: float | None = None
    spread: float | None = None  # the standard deviation of one unit's difference between neighbours (resolution)


def shown_ranks(better: np.ndarray, worse: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ranks, lows, highs) from B and W (Al Mohamad, Goeman and van Zwet 2022): rank = 1 + B, interval
    [1 + B, K - W]. Nothing is adjusted: every pair is decided once for the whole board (PairFamily), so
    what one row says of another is what that row says of it, and sum(low - 1) = sum(K - high)."""
    k = np.asarray(better).size
    ranks = 1 + np.asarray(better, dtype=np.int64)
    return ranks, ranks.copy(), k - np.asarray(worse, dtype=np.int64)


def _ranks(better: np.ndarray, worse: np.ndarray, decided: np.ndarray | None = None) -> Ranks:
    ranks, lows, highs = shown_ranks(better, worse)
    return Ranks(ranks, lows, highs, np.asarray(better, dtype=np.int64), np.asarray(worse, dtype=np.int64), decided)


POWER = 0.8  # the power a board's resolution is stated at


def resolution(
    units: int,
    size: int,
    decided: int,
    spread: float,
    alpha: float = ALPHA,
    power: float = POWER,
    *,
    judgements: bool = False,
) -> float | None:
    """The smallest difference between two entries, in points of a percentage, that a board's own procedure
    detects with `power`: a pair still undecided is tested at Holm's next threshold once the board's `decided`
    pairs are rejected, alpha / (M - decided) two-sided for M = size(size - 1)/2 pairs, and its test statistic is
    about the difference over spread / sqrt(units), spread being the standard deviation of one unit's difference
    between two entries (a McNemar pair: the square root of the share of units only one of the two got right).
    So the difference is (z(1 - level / 2) + z(power)) spread / sqrt(units). With `judgements` (0/1 units, McNemar)
    it is at least z^2 / units: two entries D judgements apart differ on at least D units, so their statistic is at
    most sqrt(D), under z for any D < z^2 whatever the board's spread (where neighbours differ on a unit or two, the
    formula alone gave 0.04 points on 6,967 units, under the 6 judgements the exact test needs at all). None for
    fewer than two entries, no units or no spread (every pair alike); at most 100 points."""
    pairs = size * (size - 1) // 2
    if pairs == 0 or units <= 0 or not spread > 0:
        return None
    level = alpha / max(pairs - decided, 1)
    # z(1 - level / 2) as -z(level / 2): 1 - level / 2 rounds to 1 (and its quantile to inf) on a board of 2 x 10^7
    # entries, and loses digits long before.
    z = -_normal_quantile(level / 2.0) + _normal_quantile(power)
    difference = z * spread / np.sqrt(units)
    if judgements:
        difference = max(difference, z * z / units)
    # Two percentages differ by at most 100 points: past that (a split of a handful of units, where no pair can be
    # decided) every pair is tied, which 100 says (the formula gave 157 for two entries on 5 units).
    return float(100.0 * min(difference, 1.0))


def _typical(values: np.ndarray) -> float:
    """A board's typical spread among neighbours: the median, or the mean where most neighbours are alike."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return 0.0
    middle = float(np.median(values))
    return middle if middle > 0 else float(values.mean())


def _with_resolution(ranks: Ranks, units: int, spread: float, alpha: float, *, judgements: bool = False) -> Ranks:
    size = ranks.ranks.size
    found = resolution(units, size, int(ranks.better.sum()), spread, alpha, judgements=judgements)
    return Ranks(ranks.ranks, ranks.lows, ranks.highs, ranks.better, ranks.worse, ranks.decided, found, spread)


class PairFamily:
    """One board's family of pair decisions: each of its K(K - 1)/2 pairs of entries gets one test, and Holm's
    step-down over all of them at alpha decides which pairs differ (and so which of the two is better).

    A pair's p-value is two-sided (twice the one-sided p in the direction of the two scores): the decision is
    "i is better than j" or "j is better than i" or neither, once, whichever row it is read from. Entries are
    the board's positions 0..K-1. Pairs whose one-sided p is surely under the strictest threshold, alpha / (2M)
    with M = K(K - 1)/2, are rejected whatever the others are (Holm rejects every p under its first threshold):
    a caller counts them with add_sure without computing them. Pairs whose one-sided p exceeds alpha / 2 are
    never rejected and need not be added. The rest are added (add) and sorted once (decide).

    The pairs known never rejected also bound what can be: with U of them, at most M - U pairs are rejected, so
    Holm's threshold never passes alpha / (2(U + 1)) one-sided, and any p over alpha / (2U) is never rejected
    either (`bound`). A caller passes the count of pairs it settled so (never=) and add drops what the bound
    rules out: on a crowded board the kept pairs are those near the final threshold, not every p under alpha / 2
    (10,000 NLVR2 entries: 7 x 10^5 p-values kept, where every p under alpha / 2 was 10^7)."""

    def __init__(self, size: int, alpha: float = ALPHA, *, keep_pairs: bool = False) -> None:
        self.size = int(size)
        self.keep_pairs = keep_pairs  # Ranks.decided: the decided pairs themselves (small boards, for checks)
        self._sure_pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.pairs = self.size * (self.size - 1) // 2
        self.alpha = alpha
        self.sure = 0
        self.better = np.zeros(self.size, dtype=np.int64)  # B so far (sure pairs)
        self.worse = np.zeros(self.size, dtype=np.int64)  # W so far (sure pairs)
        self.never = 0  # pairs known never rejected: their p is over a bound no threshold reaches
        self._p: list[np.ndarray] = []
        self._above: list[np.ndarray] = []
        self._below: list[np.ndarray] = []

    @property
    def strictest(self) -> float:
        """Holm's first threshold, as a one-sided p: alpha / (2M)."""
        return self.alpha / (2.0 * max(self.pairs, 1))

    @property
    def loosest(self) -> float:
        """No pair with a larger one-sided p is ever rejected: alpha / 2."""
        return self.alpha / 2.0

    @property
    def bound(self) -> float:
        """No pair with a larger one-sided p is ever rejected, given the `never` pairs: min(alpha / 2,
        alpha / (2U))."""
        return _never_bound(self.alpha, self.never)

    def add_sure(self, sure_above: np.ndarray) -> None:
        """For each entry j, its first sure_above[j] entries are surely better than it (rejected whatever the
        other p-values are)."""
        sure_above = np.asarray(sure_above, dtype=np.int64)
        if self.keep_pairs:
            below = np.repeat(np.arange(self.size), sure_above)
            self._sure_pairs.append(
                (np.arange(below.size) - np.repeat(np.cumsum(sure_above) - sure_above, sure_above), below)
            )
        self.sure += int(sure_above.sum())
        self.better += sure_above
        counts = np.bincount(sure_above, minlength=self.size + 1)
        # Entry i is surely better than every j whose sure_above[j] > i.
        self.worse += counts[::-1].cumsum()[::-1][1 : self.size + 1]

    def add_sure_pairs(self, above: np.ndarray, below: np.ndarray) -> None:
        """Pairs known rejected (above surely better than below), given one by one."""
        above, below = np.asarray(above, dtype=np.int64), np.asarray(below, dtype=np.int64)
        if self.keep_pairs:
            self._sure_pairs.append((above, below))
        self.sure += above.size
        self.better += np.bincount(below, minlength=self.size)
        self.worse += np.bincount(above, minlength=self.size)

    def add(self, p: np.ndarray, above: np.ndarray, below: np.ndarray, never: int = 0) -> None:
        """Tested pairs: one-sided p-values that `above` is better than `below` (positions), and the count of
        other pairs the caller found never rejected (each with a p over `bound` as it stood). Those over the bound
        are dropped here (never rejected) and counted; those under the strictest threshold may be added too."""
        p = np.asarray(p, dtype=np.float64)
        self.never += int(never)
        keep = p <= self.bound
        self.never += int(keep.size - np.count_nonzero(keep))
        if keep.any():
            self._p.append(p[keep])
            self._above.append(np.asarray(above, dtype=np.int32)[keep])
            self._below.append(np.asarray(below, dtype=np.int32)[keep])

    def decide(self) -> Ranks:
        """Holm's step-down over every pair: the j-th smallest two-sided p (counting the sure pairs first) is
        rejected when it and every smaller one is at most alpha / (M - j + 1). B, W and the ranks shown."""
        better, worse = self.better.copy(), self.worse.copy()
        decided = [np.stack([a, b], axis=1).astype(np.int64) for a, b in self._sure_pairs]
        if self._p:
            p = np.concatenate(self._p)
            # The bound again with every pair in: each p over it would fail wherever it stood in the order (see
            # the class), so the Holm count below is the same without them; a few passes, each counting the last
            # one's dropped pairs as never rejected.
            never, kept = self.never, np.ones(p.size, dtype=bool)
            for _ in range(8):
                over = kept & (p > _never_bound(self.alpha, never))
                if not over.any():
                    break
                never += int(np.count_nonzero(over))
                kept &= ~over
            p = np.where(kept, p, np.inf)  # never rejected; positions kept for the pairs' rows below
            # Every p under the first threshold passes wherever it stands (the thresholds only grow): only the
            # rest need sorting, after those `easy` ones.
            first = self.alpha / (2.0 * max(self.pairs - self.sure, 1))
            easy = int(np.count_nonzero(p <= first))
            sorted_p = np.concatenate([np.full(easy, first), np.sort(p[(p > first) & kept])])
            remaining = self.pairs - self.sure - np.arange(sorted_p.size)
            fails = sorted_p > self.alpha / (2.0 * np.maximum(remaining, 1))
            count = int(np.argmax(fails)) if fails.any() else sorted_p.size
            if count:
                # Thresholds only grow along the order, so equal p-values are rejected together: a cut-off on p
                # is the same as a cut-off on the sorted position.
                rejected = p <= sorted_p[count - 1]
                above, below = np.concatenate(self._above)[rejected], np.concatenate(self._below)[rejected]
                better += np.bincount(below, minlength=self.size)
                worse += np.bincount(above, minlength=self.size)
                decided.append(np.stack([above, below], axis=1).astype(np.int64))
        if not self.keep_pairs:
            return _ranks(better, worse)
        return _ranks(better, worse, np.concatenate([np.zeros((0, 2), dtype=np.int64), *decided]))


def _never_bound(alpha: float, never: int) -> float:
    """The largest one-sided p Holm at `alpha` can still reject once `never` pairs are known never rejected
    (PairFamily): alpha / (2 never), and never over alpha / 2."""
    return alpha / 2.0 / max(never, 1)


@dataclass(frozen=True)
class PackedJudgements:
    """(k, units) per-judgement correctness as view_ranks uses it: 64 judgements a word (a 64th of the bool
    matrix, which a caller can then let go of) and each entry's count right."""

    packed: np.ndarray  # (k, words) uint64
    right: np.ndarray  # (k,) int64
    units: int

    @classmethod
    def of(cls, correct: np.ndarray) -> PackedJudgements:
        correct = np.asarray(correct, dtype=bool)
        return cls(_packed(correct), correct.sum(axis=1, dtype=np.int64), int(correct.shape[1]))

    @classmethod
    def of_predictions(cls, task: TaskType, gold: GoldSet, stacked: np.ndarray, rows: int = 1000) -> PackedJudgements:
        """PackedJudgements.of(primary_correctness(...)), `rows` entries at a time: the bool matrix (70 MB on a
        10,000-entry NLVR2 board) is never whole."""
        parts = [
            cls.of(primary_correctness(task, gold, stacked[at : at + rows])) for at in range(0, len(stacked), rows)
        ]
        if not parts:
            return cls.of(primary_correctness(task, gold, stacked))
        return cls(np.concatenate([p.packed for p in parts]), np.concatenate([p.right for p in parts]), parts[0].units)


_LIMITS_FROM = 256  # entries from which pairs are settled by limits on their counts (_NLimits)
_RANK_BLOCK = 64  # entries compared with those above them at a time: small blocks keep the exact window narrow
_SURE_MARGIN = 0.99  # a pair is settled without its test only this far under the threshold (betainc's rounding)
# A pair this many standard errors apart has a one-sided p under 1e-13, under Holm's strictest threshold for any
# board (alpha / (2M): 5e-10 for 10,000 entries' 5 x 10^7 pairs): it is rejected without computing its p.
_SURE_Z = 7.5


def significance_ranks(correct: np.ndarray, primary: np.ndarray, alpha: float = ALPHA) -> Ranks:
    """Ranks and rank intervals of k entries already in table order, from one procedure (view_ranks of the
    whole table): one exact McNemar test per pair of entries, Holm over all k(k - 1)/2 pairs.

    correct: (k, units) bool, per-judgement correctness on the primary metric; primary: (k,) scores, the
    share of `correct` right (table order is primary descending).
    """
    return view_ranks(correct, primary, [None], alpha)[0]


def view_ranks(
    correct: np.ndarray | PackedJudgements,
    primary: np.ndarray,
    views: Sequence[np.ndarray | None],
    alpha: float = ALPHA,
    *,
    order: np.ndarray | None = None,
    pairs: bool = False,
) -> list[Ranks]:
    """The ranks of the table (a view None) and of sub-tables of it (a view: the ascending positions of its
    entries, as view=teams keeps each team's best), each its own board: its own K and its own family of
    K(K - 1)/2 pair decisions (PairFamily), on the same pair counts.

    Each pair is tested once, by an exact McNemar test on the judgements only one of the two got right, in the
    direction of the table (the entry above against the one below; two-sided p = twice that). The discordant
    counts come from the bit-packed correctness rows (popcounts of ANDed words), in blocks of entries, each row
    against the entries above it only, and only for the pairs whose test can matter: entries so far above that
    no pairing of their judgements could make the difference insignificant at Holm's strictest threshold are
    counted as better without a test (_sure_counts). Of the rest, a pair whose counts settle it needs no p
    (_NLimits: never rejected where its p is over every threshold the pairs known unrejected leave reachable,
    PairFamily.bound; rejected where it is under the strictest), and the counts are taken a part of the words at
    a time, so that a pair bounds settle early is not counted on (_PairCounts); the others are tested, their
    p-values computed once per distinct pair of counts (_PTable). 10,000 NLVR2 entries: 5 x 10^7 pairs, 3.6 x
    10^7 sure from the two entries' counts alone, 1.4 x 10^7 counted on half the words on average, 10^6 tested.
    The decisions are those of testing every pair. With `order`, the table's rows are correct[order] (primary is
    in table order): the rows are reordered once packed, 64 times smaller. `correct` may come packed already. With
    `pairs`, each Ranks also holds its decided pairs (Ranks.decided)."""
    judgements = correct if isinstance(correct, PackedJudgements) else PackedJudgements.of(correct)
    del correct
    primary = np.asarray(primary, dtype=np.float64)
    packed, right, units = judgements.packed, judgements.right, judgements.units
    del judgements  # reordered below: the unordered rows are then let go of
    k = right.size
    members = [np.arange(k) if view is None else np.asarray(view, dtype=np.int64) for view in views]
    if order is not None and k:
        packed, right = packed[order], right[order]
    table = _PTable(units)
    # Per view: its family, each table position's index in the view (-1: not in it), and each member's first
    # view index still to test (those above it are surely better, counted in the family).
    families, index, first = [], [], []
    for m in members:
        family = PairFamily(m.size, alpha, keep_pairs=pairs)
        at = np.full(k, -1, dtype=np.int64)
        at[m] = np.arange(m.size)
        above = _sure_counts(right[m], units, family.strictest * _SURE_MARGIN, table)
        family.add_sure(above)
        families.append(family)
        index.append(at)
        first.append(above)
    # A pair's p is found from its two counts (difference d, discordant n) and only grows with n, so per d two
    # limits on n settle most pairs without a p: surely rejected at n <= sure[d], never rejected at n >= never[d].
    limits = _NLimits(units)
    # On a small board the limits' bisections cost more than the p-values they save (a few ms a board, where the
    # board's own tests take less): none is then settled by its counts alone, every pair gets its p.
    counted = k >= _LIMITS_FROM
    strictest = min(family.strictest for family in families) * _SURE_MARGIN
    sure = limits.sure(strictest) if counted else limits.d - 2  # n >= d always: d - 2 settles none
    # Each table position's first column any view tests it against (its own position: none).
    reach = np.arange(k)
    for m, f in zip(members, first, strict=True):
        np.minimum.at(reach, m, m[f])
    # Word by word (words, k): each word's bits of every entry side by side, as the popcounts read them; the rows
    # as they came are let go of (a second copy of them would double a large split's 10^8 bytes).
    by_word = np.ascontiguousarray(packed.T)
    del packed
    counts = _PairCounts(by_word, right, units)
    right = right.astype(np.int32)
    for start in range(0, k, _RANK_BLOCK):
        stop = min(k, start + _RANK_BLOCK)
        lo = int(reach[start:stop].min())
        if lo >= stop - 1 or not (reach[start:stop] < np.arange(start, stop)).any():
            continue  # every pair of the block's rows is settled already
        columns = np.arange(lo, stop)
        tested = (columns[None, :] >= reach[start:stop, None]) & (columns[None, :] < np.arange(start, stop)[:, None])
        ahead = right[None, lo:stop] - right[start:stop, None]  # d: how far the column (above) is ahead
        loosest = max(family.bound for family in families)
        never_at = limits.never(loosest) if counted else np.full_like(limits.d, units + 1)  # units + 1: none
        never, rejected, p = counts.settle(start, stop, lo, tested, ahead, (never_at, sure, limits.beyond), table)
        equal = primary[None, lo:stop] == primary[start:stop, None]  # equal scores never separate
        never |= equal
        rejected &= ~equal
        block_rows = np.arange(start, stop)[:, None]
        for v, family in enumerate(families):
            view: tuple[Any, ...]
            if members[v].size == k:  # the whole table: its indices are the table's, its block the whole block
                js, column_js, view = block_rows, columns[None, :], (slice(None), slice(None))
                # Its pairs are the tested ones where it is the only view.
                ours = tested if len(families) == 1 else (column_js >= first[v][block_rows]) & (column_js < js)
            else:
                row = index[v][start:stop]  # view indices of the block's rows (-1: not in the view)
                inside = np.flatnonzero(row >= 0)
                if inside.size == 0:
                    continue
                in_view = np.flatnonzero(index[v][lo:stop] >= 0)
                js = row[inside][:, None]  # each row's view index
                column_js = index[v][lo:stop][in_view][None, :]
                view = np.ix_(inside, in_view)
                ours = (column_js >= first[v][js]) & (column_js < js)  # above the row, past its sure ones
            by_count = np.nonzero(ours & rejected[view])
            family.add_sure_pairs(column_js[0, by_count[1]], js[by_count[0], 0])
            where = np.nonzero(ours & ~(never[view] | rejected[view]))
            unrejected = int(np.count_nonzero(ours & never[view]))
            family.add(p[view][where], column_js[0, where[1]], js[where[0], 0], never=unrejected)
    result = []
    for m, family in zip(members, families, strict=True):
        # The share of units only one of two neighbours got right: the spread of a McNemar pair's difference.
        both = np.bitwise_count(by_word[:, m[:-1]] & by_word[:, m[1:]]).sum(axis=0, dtype=np.int64)
        discordant = (right[m[:-1]] + right[m[1:]] - 2 * both) / max(units, 1)
        spread = float(np.sqrt(_typical(discordant)))
        result.append(_with_resolution(family.decide(), units, spread, alpha, judgements=True))
    return result


_PAIRED_ROWS = 256  # entries whose pair statistics are held at once: (rows, k) float64 arrays
_PAIRED_UNITS = 16384  # units multiplied at a time: a float32 sum of 16,384 products of points <= 30 is exact
_PAIRED_FLOATS = 8_000_000  # float32 values of a block of units (32 MB: 8,000 units of 1,000 entries)


def paired_view_ranks(
    scores: np.ndarray,
    primary: np.ndarray,
    views: Sequence[np.ndarray | None],
    alpha: float = ALPHA,
    *,
    order: np.ndarray | None = None,
    pairs: bool = False,
    full_points: float | None = None,
) -> list[Ranks]:
    """view_ranks for units scored in points rather than right or wrong (TaskType.unit_points > 1: VQA v2's
    0/9/18/27/30 of 30 a question), where McNemar's test does not apply.

    Each pair is tested once by a paired permutation test on the units: under the null hypothesis the sign of
    each unit's difference d = a - b is as likely flipped, so T = sum(d) has mean 0 and variance sum(d^2) over
    the sign flips; z = T / sqrt(sum(d^2)) and the one-sided p = 1 - Phi(z) in the direction of the table (the
    permutation distribution's normal approximation; on 0/1 units this is McNemar's normal approximation),
    exact where a pair differs on at most 64 units and could be rejected (_exact_sign_flip_p). Each view is its
    own board: Holm over all its pairs (PairFamily), as view_ranks.

    scores: (k, units) integer points; primary: (k,) scores in table order; `order`: the table's rows are
    scores[order]; full_points: a unit's full points (30 for VQA v2; the largest found where not given), for
    the board's resolution. sum(d^2) = Q_a + Q_b - 2 G_ab with G the points' Gram matrix, exact in float32 per block of
    _PAIRED_UNITS units and summed in float64."""
    from scipy.special import ndtr

    points = np.asarray(scores)  # (k, units) in submission order, never reordered whole (448 MB at VQA size)
    primary = np.asarray(primary, dtype=np.float64)
    k = points.shape[0]
    totals = np.zeros(k)
    squares = np.zeros(k)
    gram = np.zeros((k, k))
    # Units a block: at most _PAIRED_UNITS (exact in float32), fewer on a large board (a block is k of them in float32).
    step = max(256, min(_PAIRED_UNITS, _PAIRED_FLOATS // max(k, 1)))
    for at in range(0, points.shape[1], step):
        block = points[:, at : at + step].astype(np.float32)
        totals += block.sum(axis=1, dtype=np.float64)
        squares += np.einsum("ij,ij->i", block, block, dtype=np.float64)
        gram += (block @ block.T).astype(np.float64)
    row_of = np.arange(k)  # each table position's row of `points`
    if order is not None and k:
        row_of = np.asarray(order)
        totals, squares, gram = totals[row_of], squares[row_of], gram[np.ix_(row_of, row_of)]
    top = float(points.max(initial=0))
    members = [np.arange(k) if view is None else np.asarray(view, dtype=np.int64) for view in views]
    result = []
    for m in members:
        family = PairFamily(m.size, alpha, keep_pairs=pairs)
        for start in range(0, m.size, _PAIRED_ROWS):
            rows = m[start : start + _PAIRED_ROWS]
            columns = m[: start + rows.size]  # the entries above each row (and the block itself)
            variance = squares[rows, None] + squares[None, columns] - 2.0 * gram[np.ix_(rows, columns)]
            ahead = totals[None, columns] - totals[rows, None]  # how far each column (above) is ahead of each row
            with np.errstate(divide="ignore", invalid="ignore"):
                p = ndtr(-ahead / np.sqrt(variance))
            p[(variance <= 0) | (primary[None, columns] == primary[rows, None])] = 1.0  # equal never separate
            above = np.arange(columns.size)[None, :] < np.arange(start, start + rows.size)[:, None]
            p[~above] = 1.0  # each pair once: from its lower row
            # Where few units differ the normal approximation is too bold (three questions apart: 0.04 where the
            # exact p is 1/8): a pair that could be rejected and differs on at most _EXACT_UNITS units gets its
            # exact permutation p. Any pair differing on fewer units has a variance of at most that many largest
            # squared differences, so the rest keep the approximation.
            few = (p <= alpha) & (variance <= _EXACT_UNITS * top * top)
            for r, c in zip(*np.nonzero(few), strict=True):
                differences = points[row_of[columns[c]]].astype(np.int64) - points[row_of[rows[r]]].astype(np.int64)
                if np.count_nonzero(differences) <= _EXACT_UNITS:
                    p[r, c] = _exact_sign_flip_p(differences)
            r_at, c_at = np.nonzero(p <= family.loosest)
            sure = p[r_at, c_at] <= family.strictest
            family.add_sure_pairs(c_at[sure], start + r_at[sure])
            family.add(p[r_at[~sure], c_at[~sure]], c_at[~sure], start + r_at[~sure])
        # A unit's squared difference between neighbours, in full units: the spread of a pair's difference.
        differences = squares[m[:-1]] + squares[m[1:]] - 2.0 * gram[m[:-1], m[1:]]
        full = full_points or top or 1.0
        spread = float(np.sqrt(_typical(differences / max(points.shape[1], 1)))) / full
        result.append(_with_resolution(family.decide(), points.shape[1], spread, alpha))
    return result


_EXACT_UNITS = 64  # pairs differing on at most this many units get the exact permutation p (paired_view_ranks)


def _exact_sign_flip_p(differences: np.ndarray) -> float:
    """The exact one-sided p of the paired permutation test: the chance that flipping the sign of each nonzero
    difference at random gives a sum at least the observed one (2^m equally likely flips, counted by the sums
    of the positive ones: a distribution over 0..sum|d|, built one difference at a time)."""
    sizes = np.abs(differences[differences != 0]).astype(np.int64)
    if sizes.size > _EXACT_UNITS:  # not a few: the caller's approximation stands
        raise ValueError(f"{sizes.size} differing units: the exact p is for at most {_EXACT_UNITS}")
    total = int(sizes.sum())
    chances = np.zeros(total + 1)
    chances[0] = 1.0
    for size in sizes.tolist():
        shifted = np.zeros_like(chances)
        shifted[size:] = chances[: chances.size - size]
        chances = 0.5 * (chances + shifted)
    # T = 2 U - total for U the sum of the positive ones: T >= observed <=> U >= (observed + total) / 2.
    observed = int(differences.sum())
    at_least = -(-(observed + total) // 2)
    return float(chances[max(at_least, 0) :].sum())


class _PTable:
    """Exact one-sided p-values by (discordant judgements n, difference d), each computed once for a board:
    a board repeats the same pairs of counts many times (10,000 entries: ~10^6 pairs tested, fewer distinct).
    Only the band _decisive_p computes exactly is held: d <= 1 + 7.5 sqrt(n) (35 MB of address space for 6,970
    units, 1.8 GB for 95,000). Zeroed, not filled: 0 means not computed yet (no p in the band is 0: at most
    7.5 standard errors, p > 1e-18), so the operating system hands out only the pages a board's counts touch (a
    NaN fill made every byte resident: 1.7 GB for two entries on 95,000 units)."""

    def __init__(self, units: int) -> None:
        self.width = int(_SURE_Z * np.sqrt(max(units, 1))) + 3
        self.units = units
        self.values = np.zeros((units + 1) * self.width)

    def lookup(self, above: np.ndarray, below: np.ndarray) -> np.ndarray:
        n = (above + below).astype(np.int64)
        key = n * self.width + (above - below).astype(np.int64)
        found = self.values[key]
        missing = found == 0.0
        if missing.any():
            new = np.unique(key[missing])
            n_new, d_new = np.divmod(new, self.width)
            self.values[new] = one_sided_p((n_new + d_new) // 2, (n_new - d_new) // 2)
            found[missing] = self.values[key[missing]]
        looked_up: np.ndarray = found
        return looked_up


_WORD_PARTS = 8  # a block's pairs are counted on 1/8 of the words at a time; those settled early are left out
_BLOCK_CHECKS = (0, 1, 3)  # after which parts the pairs are checked (a check costs about as much as a part)


class _PairCounts:
    """The discordant counts of a board's pairs, worked out a part of the words at a time (the words are split in
    _WORD_PARTS strided parts): after some parts, the judgements counted so far bound each pair's n from both
    sides (the rest of its judgements all discordant, or only as many as its entries' counts there differ by),
    and columns whose every pair those bounds already settle (never rejected, or surely rejected) are left out
    of the next parts. A crowded board's pairs near the diagonal (d small against the square root of n) settle
    after a part or two: about half the popcounts of counting every pair on every word (10,000 NLVR2 entries)."""

    def __init__(self, by_word: np.ndarray, right: np.ndarray, units: int) -> None:
        """by_word: (words, k) packed judgements, a word's bits of every entry in a row."""
        words = by_word.shape[0]
        steps = range(min(_WORD_PARTS, words))
        self.parts = [by_word[i::_WORD_PARTS] for i in steps]  # (words of part i, k): views, each row contiguous
        valid = _packed(np.ones((1, units), dtype=bool))[0]  # the bits that are judgements (not padding)
        self.part_units = [int(np.bitwise_count(valid[i::_WORD_PARTS]).sum()) for i in steps]
        self.part_right = [np.bitwise_count(part).sum(axis=0, dtype=np.int32) for part in self.parts]
        self.right, self.units = right.astype(np.int32), units

    def settle(
        self,
        start: int,
        stop: int,
        lo: int,
        tested: np.ndarray,
        ahead: np.ndarray,
        limits: tuple[np.ndarray, np.ndarray, int],
        table: _PTable,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For rows start..stop against columns lo..stop (`ahead`: each pair's d): (never, rejected, p), never
        rejected (n >= never_at[d]), surely rejected (n <= sure_at[d]) and, for the other `tested` pairs, their
        one-sided p (_decisive_p); limits: (never_at, sure_at, the last d they hold, which stands for the
        larger ones: _NLimits)."""
        rows, right = slice(start, stop), self.right
        never_at, sure_at, beyond = limits
        at_d = np.clip(ahead, 0, beyond)  # d <= 0: p = 1 at any n (never_at[0] = 0)
        shape = (stop - start, stop - lo)
        never, rejected = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        discordant = np.zeros(shape, dtype=np.int32)  # n so far: judgements one of the two got right
        row_right, column_right = np.zeros(shape[0], dtype=np.int32), np.zeros(shape[1], dtype=np.int32)
        counted, a, b = 0, 0, shape[1]  # judgements counted; columns a..b still counted
        for i, part in enumerate(self.parts):
            discordant[:, a:b] += _popcounts_t(part[:, rows], part[:, lo + a : lo + b], np.bitwise_xor)
            row_right += self.part_right[i][rows]
            column_right[a:b] += self.part_right[i][lo + a : lo + b]
            counted += self.part_units[i]
            if i not in _BLOCK_CHECKS or i == len(self.parts) - 1:
                continue
            # n = n so far + n of the rest; the rest's is at least |their counts' difference| and at most the
            # judgements one of the two got right there and at most those one got wrong there.
            n = discordant[:, a:b]
            rest_rows, rest_columns = right[rows] - row_right, right[lo + a : lo + b] - column_right[a:b]
            most = rest_columns[None, :] + rest_rows[:, None]
            d = at_d[:, a:b]
            settled_never = n + np.abs(rest_columns[None, :] - rest_rows[:, None]) >= never_at[d]
            settled_sure = (n + np.minimum(most, 2 * (self.units - counted) - most) <= sure_at[d]) & ~settled_never
            still = np.flatnonzero((tested[:, a:b] & ~(settled_never | settled_sure)).any(axis=0))
            a2, b2 = (a + int(still[0]), a + int(still[-1]) + 1) if still.size else (a, a)
            never[:, a:a2], rejected[:, a:a2] = settled_never[:, : a2 - a], settled_sure[:, : a2 - a]
            never[:, b2:b], rejected[:, b2:b] = settled_never[:, b2 - a :], settled_sure[:, b2 - a :]
            a, b = a2, b2
            if a == b:
                break
        p = np.zeros(shape)
        if a < b:
            n = discordant[:, a:b]
            never[:, a:b] = n >= never_at[at_d[:, a:b]]
            rejected[:, a:b] = (n <= sure_at[at_d[:, a:b]]) & ~never[:, a:b]
            exact = np.nonzero(tested[:, a:b] & ~(never[:, a:b] | rejected[:, a:b]))
            d = ahead[:, a:b][exact]
            p[exact[0], a + exact[1]] = _decisive_p((n[exact] + d) // 2, (n[exact] - d) // 2, table)
        return never, rejected, p


class _NLimits:
    """Per difference d (the entry above ahead by d judgements), the limits on the discordant count n (same
    parity as d, d <= n <= units) that settle a pair without its p: _decisive_p is 0, then exact and increasing,
    then 1 as n grows at a fixed d (the binomial tail P(X >= (n + d)/2) gains (P(X = k - 1) - P(X = k)) / 4 >= 0
    from n to n + 2, k = (n + d)/2 > n/2), so a pair is surely rejected at n <= sure(level)[d] (p <= level) and
    never at n >= never(level)[d] (p > level). Both found by bisection on n for every d at once; the never limits
    are kept for a level and found again only once the level has fallen by half (an older, higher level settles
    fewer pairs). Past the band _decisive_p computes (d > 1 + 7.5 sqrt(units): z > _SURE_Z at any n) p is 0: the
    last d, which callers clip to, stands for all those. Computed without the board's table, whose rows these
    n would scatter over (1.7 GB touched on 95,000 units)."""

    def __init__(self, units: int) -> None:
        self.units = units
        self.d = np.arange(min(units, int(_SURE_Z * np.sqrt(max(units, 1))) + 2) + 1)
        self.beyond = self.d[-1]  # d >= beyond: p = 0 at every n (or no such pair: d <= units)
        self._level = np.inf
        self._never = np.zeros(self.d.size, dtype=np.int64)

    def _first_over(self, level: float) -> np.ndarray:
        """Per d, the least m with p > level at n = d + 2m ((units - d) // 2 + 1 where there is none)."""
        d = self.d
        top = (self.units - d) // 2  # the largest m: n = d + 2m <= units
        lo, hi = np.zeros(d.size, dtype=np.int64), top + 1  # the answer lies in [lo, hi]; top + 1: none
        while True:
            active = np.flatnonzero(lo < hi)
            if active.size == 0:
                return lo
            mid = (lo[active] + hi[active]) // 2
            n, ahead = d[active] + 2 * mid, d[active]
            over = _decisive_p((n + ahead) // 2, (n - ahead) // 2) > level
            hi[active] = np.where(over, mid, hi[active])
            lo[active] = np.where(over, lo[active], mid + 1)

    def sure(self, level: float) -> np.ndarray:
        """Per d, the largest n with p <= level (d - 2 where there is none: n >= d always): rejected at
        n <= sure[d] whatever the rest (level: Holm's strictest threshold with _SURE_MARGIN for the rounding
        of the p-values)."""
        limits: np.ndarray = self.d + 2 * (self._first_over(level) - 1)
        if self.beyond > 1 + _SURE_Z * np.sqrt(max(self.units, 1)):  # every d clipped to it: any n, either parity
            limits[-1] = self.units
        return limits

    def never(self, level: float) -> np.ndarray:
        """Per d, a count from which on p > level at every n (found for a level from `level` to twice it, the
        last one found where it is still in that range): never rejected at n >= never[d] where no p over `level`
        is (PairFamily.bound), with _SURE_MARGIN for rounding."""
        if not self._level / 2.0 <= level <= self._level:  # a level found for a lower one would not hold
            m = self._first_over(level / _SURE_MARGIN)
            self._never = np.where(2 * m > self.units - self.d, self.units + 1, self.d + 2 * m)
            self._level = level
        return self._never


def _decisive_p(above_only: np.ndarray, below_only: np.ndarray, table: _PTable | None = None) -> np.ndarray:
    """One-sided exact McNemar p-values where they can decide a rank; elsewhere a stand-in on the same side
    of every threshold: 1 where the entry above is not ahead by a standard error (z < 1, so p > 0.15 while
    Holm's thresholds are at most 0.025 one-sided), 0 where it is ahead by more than _SURE_Z (p < 1e-13, under
    Holm's strictest threshold on any board; the binomial's tails are lighter than the normal's there)."""
    n = above_only + below_only
    z = (above_only - below_only - 1.0) / np.sqrt(np.maximum(n, 1.0))
    p = np.ones(n.shape)
    p[z > _SURE_Z] = 0.0
    band = (z >= 1.0) & (z <= _SURE_Z)
    above, below = above_only[band], below_only[band]
    if table is not None:
        p[band] = table.lookup(above, below)
        return p
    # p depends on the two counts alone: each distinct pair is computed once.
    distinct, inverse = np.unique(above * (2.0**32) + below, return_inverse=True)
    p[band] = one_sided_p(np.floor(distinct / 2.0**32), np.mod(distinct, 2.0**32))[inverse]
    return p


def _sure_counts(right: np.ndarray, units: int, level: float, table: _PTable | None = None) -> np.ndarray:
    """For each entry of a table (right: its judgements right, table order), how many of the first entries
    above it are significantly better than it whatever their judgements, so that their tests need not be run.

    With counts r_a > r_b, the discordant judgements n are at most min(r_a + r_b, 2 units - r_a - r_b) and the
    one-sided McNemar p for a difference r_a - r_b is largest at the largest n (_largest_p); it only falls as
    r_a grows, so the sure entries are found by bisection on the fewest right among the first t. Where that
    largest p is under `level` (Holm's strictest threshold for the board, PairFamily.strictest, with a
    margin), the exact test cannot come out otherwise (in any order, a p that low is rejected)."""
    k = right.size
    table = table if table is not None else _PTable(units)
    lowest = np.minimum.accumulate(right)  # the fewest right among the first t entries
    lo, hi = np.zeros(k, dtype=np.int64), np.arange(k)  # the answer lies in [lo, hi]; 0 always holds
    while True:
        active = np.flatnonzero(lo < hi)
        if active.size == 0:
            return lo
        mid = (lo[active] + hi[active] + 1) // 2
        sure = _largest_p(lowest[mid - 1], right[active], units, table) <= level
        lo[active] = np.where(sure, mid, lo[active])
        hi[active] = np.where(sure, hi[active], mid - 1)


def _largest_p(above: np.ndarray, below: np.ndarray, units: int, table: _PTable) -> np.ndarray:
    """The largest one-sided McNemar p two entries with these counts right can have, every judgement that can
    be discordant being so (n and the difference have the same parity); through _decisive_p's stand-ins (0 far
    under any threshold a sure count is held to, 1 far over) and its table of exact values."""
    difference = above - below
    n = np.minimum(above + below, 2 * units - above - below)
    return _decisive_p(((n + difference) // 2).astype(np.float64), ((n - difference) // 2).astype(np.float64), table)


def _packed(correct: np.ndarray) -> np.ndarray:
    """(k, units) bool -> (k, words) uint64, 64 judgements a word, for popcounts."""
    bits = np.packbits(correct, axis=1)
    bits = np.pad(bits, ((0, 0), (0, (-bits.shape[1]) % 8)))
    return np.ascontiguousarray(bits).view(np.uint64)


def _both_right(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Judgements both entries got right, for every (row, column) pair of two (entries, words) packed tables."""
    return _popcounts_t(np.ascontiguousarray(rows.T), np.ascontiguousarray(columns.T), np.bitwise_and)


def _popcounts_t(rows: np.ndarray, columns: np.ndarray, combine: np.ufunc) -> np.ndarray:
    """For every (row, column) pair of two (words, entries) packed tables, the set bits of their words combined
    (bitwise_and: judgements both got right; bitwise_xor: those only one got right): popcounts (64 a machine
    instruction, where a float matrix product spends one multiply-add on each). One word position at a time
    over every pair, into preallocated buffers: each pass stays in cache, nothing is allocated."""
    words = columns.shape[0]
    shape = (rows.shape[1], columns.shape[1])
    total = np.zeros(shape, dtype=np.uint16 if 64 * words < 2**16 else np.uint32)  # half the bytes where it holds
    combined = np.empty(shape, dtype=np.uint64)
    counts = np.empty(shape, dtype=np.uint8)
    three = np.empty(shape, dtype=np.uint8)
    # Three words' counts added in bytes (at most 192) before one widening add: a third of the widening passes.
    for start in range(0, words, 3):
        for word in range(start, min(words, start + 3)):
            combine(rows[word][:, None], columns[word][None, :], out=combined)
            if word == start:
                np.bitwise_count(combined, out=three)
            else:
                np.bitwise_count(combined, out=counts)
                three += counts
        total += three
    return total


# --- ranks from counts alone (a blind test before its reveal) ----------------------------------------------

_COUNT_BLOCK = 256  # distinct counts whose tests are held at once: (block, distinct counts) p-values


def unpaired_p(higher: np.ndarray, lower: np.ndarray, units: int) -> np.ndarray:
    """One-sided p-values that an entry with `higher` of `units` right is better than one with `lower`, from
    the two counts alone: the pooled two-proportion z-test with continuity correction (one unit), as for two
    independent Binomial(units, p). 1 where the counts are equal."""
    from scipy.special import ndtr  # see one_sided_p

    higher = np.asarray(higher, dtype=np.float64)
    lower = np.asarray(lower, dtype=np.float64)
    total = higher + lower
    # Var(higher - lower) under p = total / (2 units) for both: 2 units p (1 - p).
    variance = total * (2.0 * units - total) / (2.0 * units)
    z = (higher - lower - 1.0) / np.sqrt(np.where(variance > 0, variance, 1.0))
    p = np.asarray(ndtr(-z), dtype=np.float64)
    p[(higher <= lower) | (variance <= 0)] = 1.0
    return p


def count_ranks(
    values: np.ndarray, units: int, views: Sequence[np.ndarray | None], alpha: float = ALPHA
) -> list[Ranks]:
    """The Ranks of a table (a view None) and of sub-tables (ascending positions, as in
    view_ranks) from each entry's count alone: what a blind test's board shows before its reveal.

    values: (k,) primary percentages in table order (descending), each 100 c / units of a count c of `units`
    judgements (a released value identifies its count: ladder.count_decimals).

    The same procedure as the board's after the reveal (one test per pair, Holm over all K(K - 1)/2 pairs of
    the view, rank = 1 + B, interval [1 + B, K - W]), with an unpaired test (unpaired_p, two-sided): a paired
    test (McNemar's) reads how two entries' right judgements overlap, which the counts a blind test releases do
    not tell; the board would then show more than its figures. Both entries are judged on the same units, so
    the independent-binomial variance overstates that of the difference whenever their correctness is not
    negatively correlated (models' errors share hard examples): the test separates fewer entries than the
    paired one, never an order the counts alone do not support. Everything depends on the counts and `units`
    alone: entries with equal counts get equal ranks and intervals."""
    counts = np.rint(np.asarray(values, dtype=np.float64) * units / 100.0).astype(np.int64)
    result = []
    for view in views:
        members = np.arange(counts.size) if view is None else np.asarray(view, dtype=np.int64)
        better, worse = _count_tests(counts[members], units, alpha)
        # Two independent binomials at the board's typical share right: the spread of the unpaired difference.
        share = float(np.median(counts[members])) / max(units, 1) if members.size else 0.0
        spread = float(np.sqrt(2.0 * share * (1.0 - share)))
        result.append(_with_resolution(_ranks(better, worse), units, spread, alpha))
    return result


def _count_tests(counts: np.ndarray, units: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(B, W) of each entry after Holm over every pair of entries (as PairFamily), worked out per pair of
    distinct counts: the pairs of one pair of counts share their p-value, so they are rejected together (Holm's
    thresholds only grow along its order) and are counted with their multiplicity."""
    k = counts.size
    if k < 2:
        return np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    distinct, inverse, weight = np.unique(counts, return_inverse=True, return_counts=True)
    pairs = k * (k - 1) // 2
    strictest, loosest = alpha / (2.0 * pairs), alpha / 2.0
    better = np.zeros(distinct.size, dtype=np.int64)  # per distinct count
    worse = np.zeros(distinct.size, dtype=np.int64)
    sure = 0
    found_p, found_high, found_low = [], [], []
    for start in range(0, distinct.size, _COUNT_BLOCK):
        rows = np.arange(start, min(distinct.size, start + _COUNT_BLOCK))
        # Each row (a count) against the counts below it: p that the row's count is better.
        p = unpaired_p(distinct[rows, None], distinct[None, :], units)  # (rows, distinct); 1 where not below
        high, low = np.nonzero(p <= loosest)
        high = rows[high]
        values = p[high - start, low]
        many = weight[high] * weight[low]
        settled = values <= strictest
        sure += int(many[settled].sum())
        np.add.at(better, low[settled], weight[high[settled]])
        np.add.at(worse, high[settled], weight[low[settled]])
        found_p.append(values[~settled])
        found_high.append(high[~settled])
        found_low.append(low[~settled])
    p = np.concatenate(found_p)
    if p.size:
        high, low = np.concatenate(found_high), np.concatenate(found_low)
        many = weight[high] * weight[low]
        by_p = np.argsort(p, kind="stable")
        before = sure + np.cumsum(many[by_p]) - many[by_p]  # pairs ahead of each group's first pair
        fails = p[by_p] > alpha / (2.0 * np.maximum(pairs - before, 1))
        count = int(np.argmax(fails)) if fails.any() else p.size
        if count:
            rejected = p <= p[by_p][count - 1]
            np.add.at(better, low[rejected], weight[high[rejected]])
            np.add.at(worse, high[rejected], weight[low[rejected]])
    return better[inverse], worse[inverse]


# --- two entries compared (/compare) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """a - b on one (subset, metric), in points, with the percentile-bootstrap interval of the difference."""

    value: float
    low: float
    high: float


def difference_intervals(
    task: TaskType,
    gold: GoldSet,
    pair: np.ndarray,
    wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> dict[tuple[str, str], Difference]:
    """The difference between two stacked entries (pair: (2, *shape), a then b) on every wanted (subset, metric),
    with its 95% interval drawn on the board's own group resamples (resample_blocks: the same seed and groups), so
    that a difference and the two entries' intervals on the board come from one set of resamples. Estimate-only
    metrics get the difference of their values and no interval (NaN bounds), as on the board."""
    pair = np.asarray(pair)
    result: dict[tuple[str, str], Difference] = {}
    estimates = _estimates_only(task, gold, pair, wanted, None)
    while True:
        try:
            key, interval = next(estimates)
        except StopIteration as done:
            rest = done.value
            break
        result[key] = Difference(float(interval.values[0] - interval.values[1]), float("nan"), float("nan"))
    tail = (1.0 - confidence) / 2.0 * 100.0
    _, n_groups = group_codes(gold)
    blocks = list(resample_blocks(n_groups, resamples, seed))
    for key, ratio in metric_ratios(task, gold, pair, rest).items():
        value = float(ratio.values[0] - ratio.values[1])
        numerators = ratio.numerators.astype(np.float64)
        drawn = []
        for block in blocks:
            weights = (block if ratio.groups.size == n_groups else block[:, ratio.groups]).astype(np.float64)
            totals = weights @ ratio.denominators
            present = totals > 0
            sums = numerators @ weights.T  # (2, b)
            drawn.append((sums[0, present] - sums[1, present]) / totals[present] * 100.0)
        every = np.concatenate(drawn) if drawn else np.zeros(0)
        if every.size == 0 or not np.isfinite(value):
            result[key] = Difference(value, float("nan"), float("nan"))
            continue
        low, high = np.percentile(every, (tail, 100.0 - tail))
        result[key] = Difference(value, float(low), float(high))
    return result


def pair_p(task: TaskType, gold: GoldSet, pair: np.ndarray, indices: np.ndarray | None = None) -> float | None:
    """The two-sided p-value of the board's paired test for two stacked entries on the primary metric (on the
    examples `indices`, None: all): twice the one-sided p in the direction of the two scores, 1 where they are
    equal, as PairFamily takes each pair's. McNemar's exact test (one_sided_p) on 0/1 units; on points (TaskType.
    unit_points > 1) the paired permutation test of paired_view_ranks (its normal approximation, exact where it
    could reject and the pair differs on at most _EXACT_UNITS units). None where the units cannot be told apart
    by example (a family that leaves examples out of its units, GQA, on a subset)."""
    pair = np.asarray(pair)
    points = task.unit_points(gold) > 1
    units = task.unit_scores(gold, pair) if points else task.unit_correctness(gold, pair)
    if indices is not None:
        if units.shape[1] % max(gold.n, 1):
            return None
        units = units.reshape(2, gold.n, -1)[:, np.asarray(indices)].reshape(2, -1)
    if not points:
        a_only = int(np.count_nonzero(units[0] & ~units[1]))
        b_only = int(np.count_nonzero(units[1] & ~units[0]))
        if a_only == b_only:
            return 1.0
        one_sided = one_sided_p(np.array([max(a_only, b_only)]), np.array([min(a_only, b_only)]))[0]
        return float(min(1.0, 2.0 * one_sided))
    from scipy.special import ndtr  # see one_sided_p

    differences = units[0].astype(np.int64) - units[1].astype(np.int64)
    total, variance = int(differences.sum()), float((differences * differences).sum())
    if total == 0 or variance <= 0:
        return 1.0
    ahead = differences if total > 0 else -differences
    p = float(ndtr(-abs(total) / np.sqrt(variance)))
    if p <= ALPHA and np.count_nonzero(ahead) <= _EXACT_UNITS:
        p = _exact_sign_flip_p(ahead)
    return float(min(1.0, 2.0 * p))
