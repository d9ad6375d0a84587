"""Uncertainty for leaderboards: cluster-bootstrap intervals, exact McNemar tests, Holm, rank tiers.

Pure (numpy and the standard library). Every metric of a task is a ratio of per-group sums:
accuracy on a subset is (correct judgements of the subset's examples in each group) over (how many
there are), consistency is (1 if the whole group is right) over 1. The bootstrap resamples *groups*
(consistency groups: NLVR2 and NLVR sentences; VCR questions, one per group), because examples of
one sentence are not independent; an example-level bootstrap would give intervals that are too narrow.

The resamples are drawn once for a split (a fixed seed and the number of groups decide them) and
shared by every entry, so a whole table is one matrix product per metric: per-group counts
(entries x groups) times resample weights (groups x resamples). An entry's interval is the same on
the leaderboard and on its own page, and two entries are compared on the same resamples.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .gold import GoldSet
from .metrics import vcr_staged

RESAMPLES = 1000
SEED = 20190706  # fixed: the same predictions always get the same interval
CONFIDENCE = 0.95
ALPHA = 0.05  # significance level for rank tiers (after Holm's correction)
_BLOCK = 200  # resamples generated and multiplied at a time: bounds memory for VCR-size splits


@dataclass(frozen=True)
class Ratio:
    """One metric of k entries as a ratio of per-group sums, over the groups the subset touches.

    value[e] = 100 * sum_g numerators[e, g] / sum_g denominators[g]
    """

    groups: np.ndarray  # (G_s,) indices into the split's groups 0..n_groups-1
    numerators: np.ndarray  # float32 (k, G_s)
    denominators: np.ndarray  # float64 (G_s,)

    @property
    def values(self) -> np.ndarray:
        total = self.denominators.sum()
        if total == 0:
            return np.full(self.numerators.shape[0], np.nan)
        return self.numerators.sum(axis=1, dtype=np.float64) / total * 100.0


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
    """(k, m) values of m examples with group codes (m,) -> (present groups, float32 sums (k, G_s))."""
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    if ordered.size == 0:
        return ordered, np.zeros((values.shape[0], 0), dtype=np.float32)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sums = np.add.reduceat(values[:, order], starts, axis=1, dtype=np.float32)
    return ordered[starts], sums


def _accuracy_ratio(correct_counts: np.ndarray, per_example: int, codes: np.ndarray,
                    indices: np.ndarray | None) -> Ratio:
    """Accuracy over the examples `indices` (None: all); correct_counts (k, n) judgements right per example."""
    if indices is not None:
        correct_counts, codes = correct_counts[:, indices], codes[indices]
    groups, sums = _group_sums(correct_counts, codes)
    sizes = np.bincount(codes, minlength=1)[groups] if groups.size else np.zeros(0)
    return Ratio(groups, sums, sizes.astype(np.float64) * per_example)


def _consistency_ratio(all_right: np.ndarray, codes: np.ndarray) -> Ratio:
    """Consistency: a group counts when every example in it is right; all_right (k, n) bool."""
    groups, wrong = _group_sums(~all_right, codes)
    return Ratio(groups, (wrong == 0).astype(np.float32), np.ones(groups.size))


def metric_ratios(
    task, gold: GoldSet, stacked: np.ndarray, wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]]
) -> dict[tuple[str, str], Ratio]:
    """Per-group counts of every wanted (subset, metric) for k stacked submissions.

    wanted: subset name -> (example indices or None for the whole split, metrics). The task's own
    metric names are understood: binary tasks (accuracy over judgements, consistency over groups) and
    VCR (q_a, qa_r, q_ar per question).
    """
    stacked = np.asarray(stacked)
    codes, _ = group_codes(gold)
    ratios: dict[tuple[str, str], Ratio] = {}
    outcomes = _outcomes(task, gold, stacked)
    for subset, (indices, metrics) in wanted.items():
        for metric in metrics:
            if metric == "consistency":
                if indices is not None:
                    raise ValueError("consistency is defined on the whole split only")
                ratios[(subset, metric)] = _consistency_ratio(outcomes["all_right"], codes)
            elif metric in outcomes["counts"]:
                counts, per_example = outcomes["counts"][metric]
                ratios[(subset, metric)] = _accuracy_ratio(counts, per_example, codes, indices)
            else:
                raise ValueError(f"no interval for metric {metric!r} of task {task.name!r}")
    return ratios


def _outcomes(task, gold: GoldSet, stacked: np.ndarray) -> dict:
    k = stacked.shape[0]
    if task.name == "vcr":
        staged = dict(zip(("q_a", "qa_r", "q_ar"), vcr_staged(stacked, gold.labels)))
        return {"counts": {metric: (correct, 1) for metric, correct in staged.items()},
                "all_right": staged["q_ar"]}
    if set(task.metrics) == {"accuracy", "consistency"}:
        labels = gold.labels.reshape(gold.labels.shape + (1,) * (stacked.ndim - 2))
        correct = (stacked.astype(bool, copy=False) == labels).reshape(k, gold.n, -1)
        per_example = correct.shape[-1]  # 6 images an example for nlvr-images, else 1
        counts = correct.sum(axis=-1, dtype=np.uint8) if per_example > 1 else correct[..., 0]
        return {"counts": {"accuracy": (counts, per_example)}, "all_right": correct.all(axis=-1)}
    raise ValueError(f"intervals are not defined for task type {task.name!r}")


def primary_correctness(task, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
    """(k, units) bool: each judgement the primary metric counts (NLVR images: every image; VCR: Q->AR)."""
    stacked = np.asarray(stacked)
    k = stacked.shape[0]
    if task.name == "vcr":
        return vcr_staged(stacked, gold.labels)[2]
    labels = gold.labels.reshape(gold.labels.shape + (1,) * (stacked.ndim - 2))
    return (stacked.astype(bool, copy=False) == labels).reshape(k, -1)


# --- the bootstrap ---------------------------------------------------------------------------------------


def resample_blocks(n_groups: int, resamples: int = RESAMPLES, seed: int = SEED) -> Iterator[np.ndarray]:
    """Bootstrap weights in blocks: float32 (b, n_groups), how often each group is drawn in a resample.

    Deterministic for (n_groups, resamples, seed), whatever the entries: the same resamples serve a
    whole table and every entry's own page.
    """
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, _BLOCK):
        b = min(_BLOCK, resamples - start)
        draws = rng.integers(0, n_groups, size=(b, n_groups))
        draws += (np.arange(b) * n_groups)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n_groups).reshape(b, n_groups).astype(np.float32)


def bootstrap(
    ratios: Mapping[tuple[str, str], Ratio], n_groups: int, *, resamples: int = RESAMPLES, seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> dict[tuple[str, str], Interval]:
    """Percentile intervals for every ratio of k entries, on shared group resamples."""
    draws: dict[tuple[str, str], list[np.ndarray]] = {key: [] for key in ratios}
    for weights in resample_blocks(n_groups, resamples, seed):
        for key, ratio in ratios.items():
            if ratio.groups.size == n_groups:
                w = weights  # the whole split: every group is present, in order
            else:
                w = weights[:, ratio.groups]
            denominators = w.astype(np.float64) @ ratio.denominators  # (b,)
            numerators = ratio.numerators @ w.T  # (k, b) -- the matrix product that does the work
            keep = denominators > 0  # a subset can miss every one of its groups in a resample
            draws[key].append(numerators[:, keep] / denominators[keep] * 100.0)
    tail = (1.0 - confidence) / 2.0 * 100.0
    result = {}
    for key, ratio in ratios.items():
        values = ratio.values
        samples = np.concatenate(draws[key], axis=1) if draws[key] else np.empty((values.size, 0))
        if samples.shape[1] == 0:
            nan = np.full(values.size, np.nan)
            result[key] = Interval(values, nan, nan.copy())
            continue
        low, high = np.percentile(samples, [tail, 100.0 - tail], axis=1)
        result[key] = Interval(values, low, high)
    return result


def intervals(
    task, gold: GoldSet, stacked: np.ndarray, wanted: Mapping[str, tuple[np.ndarray | None, Sequence[str]]], *,
    resamples: int = RESAMPLES, seed: int = SEED,
) -> dict[tuple[str, str], Interval]:
    """Point estimates and 95% cluster-bootstrap intervals of every wanted (subset, metric), k entries."""
    _, n_groups = group_codes(gold)
    return bootstrap(metric_ratios(task, gold, stacked, wanted), n_groups, resamples=resamples, seed=seed)


# --- paired tests and tiers ------------------------------------------------------------------------------


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])


def mcnemar_exact(b: Sequence[int] | np.ndarray, c: Sequence[int] | np.ndarray) -> np.ndarray:
    """Two-sided exact McNemar p-values for discordant counts b (only A right) and c (only B right).

    Under the null each discordant pair goes either way with probability 1/2:
    p = min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); summed in log space, so 30,000
    discordant pairs are as exact as 30.
    """
    b = np.atleast_1d(np.asarray(b, dtype=np.int64))
    c = np.atleast_1d(np.asarray(c, dtype=np.int64))
    n = b + c
    p = np.ones(n.shape, dtype=np.float64)
    if n.size == 0 or n.max() == 0:
        return p
    log_fact = _log_factorials(int(n.max()))
    log_half = math.log(2.0)
    for i, (trials, smaller) in enumerate(zip(n.tolist(), np.minimum(b, c).tolist())):
        if trials == 0 or 2 * smaller >= trials:
            continue  # no discordant pairs, or a perfect split: p = 1
        j = np.arange(smaller + 1)
        terms = log_fact[trials] - log_fact[j] - log_fact[trials - j] - trials * log_half
        top = terms.max()
        tail = math.exp(top) * float(np.exp(terms - top).sum())
        p[i] = min(1.0, 2.0 * tail)
    return p


def discordant(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts over the last axis of (only a right, only b right) for bool arrays of the same shape."""
    a = np.asarray(a, dtype=bool)
    b = np.asarray(b, dtype=bool)
    return (a & ~b).sum(axis=-1), (~a & b).sum(axis=-1)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order as given), capped at 1."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


@dataclass(frozen=True)
class Tiers:
    ranks: list[int]  # 1-based; an entry shares the rank of the one above when not significantly worse
    p_values: np.ndarray  # (k-1,) raw McNemar p between each entry and the one above
    adjusted: np.ndarray  # (k-1,) Holm-adjusted along the table


def tiers(correct_in_rank_order: np.ndarray, alpha: float = ALPHA) -> Tiers:
    """Significance-aware ranks for k entries already in ranking order.

    correct_in_rank_order: (k, units) bool, per-judgement correctness on the primary metric. Each entry
    is compared with the one above by an exact McNemar test; the k-1 p-values are Holm-corrected
    together; an entry keeps the rank of the entry above unless the adjusted p is below alpha, and
    otherwise takes its position (1, 1, 3, ...).
    """
    correct = np.asarray(correct_in_rank_order, dtype=bool)
    k = correct.shape[0]
    if k == 0:
        return Tiers([], np.ones(0), np.ones(0))
    only_above, only_below = discordant(correct[:-1], correct[1:])
    p = mcnemar_exact(only_above, only_below)
    adjusted = holm(p)
    ranks = [1]
    for position in range(1, k):
        ranks.append(ranks[-1] if adjusted[position - 1] >= alpha else position + 1)
    return Tiers(ranks, p, adjusted)
