"""A blind test's sealed part: which consistency groups no feedback touches, and the gap test.

A hidden split may be divided once, at random from a secret seed, into a *queried* part (everything released
to teams is computed on it) and a *sealed* part (scored, shown to nobody but maintainers until the reveal).
After the reveal an entry's gap, its primary score on the queried part minus that on the sealed part,
measures how far it was tuned to the feedback (adaptive overfitting): an honest entry's gap is sampling noise.

Pure (numpy and the standard library): the services keep the seed and the parts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .gold import GoldSet
from .statistics import RESAMPLES, SEED, group_codes, metric_ratios, resample_blocks
from .subsets import PARTS as PARTS
from .subsets import QUERIED as QUERIED
from .subsets import SEALED as SEALED

if TYPE_CHECKING:
    from .tasks.base import TaskType

MAX_FRACTION = 0.9
ALPHA = 0.05  # one-sided level of the gap test


def check_fraction(fraction: float) -> float:
    """The sealed share of groups, 0 (no sealed part) to MAX_FRACTION; ValueError otherwise."""
    try:
        value = float(fraction)
    except (TypeError, ValueError):
        raise ValueError(f"the sealed fraction must be a number from 0 to {MAX_FRACTION}, got {fraction!r}") from None
    if not 0.0 <= value <= MAX_FRACTION:
        raise ValueError(f"the sealed fraction must be from 0 to {MAX_FRACTION}, got {fraction!r}")
    return value


def sealed_mask(groups: np.ndarray, fraction: float, seed: str) -> np.ndarray:
    """(n,) bool: the examples of the sealed part. round(fraction * G) of the G consistency groups are drawn
    without replacement by a generator seeded from `seed` (a secret string), so the same seed, groups and
    fraction always give the same part, and whole groups fall on one side (consistency stays defined)."""
    fraction = check_fraction(fraction)
    uniques, codes = np.unique(np.asarray(groups), return_inverse=True)
    count = round(fraction * uniques.size)
    if fraction > 0 and uniques.size > 1:
        count = min(max(count, 1), uniques.size - 1)  # both parts keep at least one group
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:16], "little"))
    chosen = np.zeros(uniques.size, dtype=bool)
    chosen[rng.permutation(uniques.size)[:count]] = True
    return chosen[codes]


def parts(mask: np.ndarray) -> dict[str, np.ndarray]:
    """{'queried': indices, 'sealed': indices} (sorted int32) from a sealed mask."""
    mask = np.asarray(mask, dtype=bool)
    return {QUERIED: np.flatnonzero(~mask).astype(np.int32), SEALED: np.flatnonzero(mask).astype(np.int32)}


def restrict(gold: GoldSet, indices: np.ndarray) -> GoldSet:
    """The gold set of the examples `indices` alone (a part), in gold order: what a team's figures are
    computed on before the reveal."""
    return gold.part(indices)


def restrict_subsets(subsets: dict[str, np.ndarray], indices: np.ndarray) -> dict[str, np.ndarray]:
    """Subsets intersected with a part, renumbered to positions within it (for `restrict`'s gold set)."""
    indices = np.asarray(indices)
    result = {}
    for name, members in subsets.items():
        if name in PARTS:
            continue
        inside = np.isin(indices, members, assume_unique=True)
        result[name] = np.flatnonzero(inside).astype(np.int32)
    return result


# --- the gap test ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gaps:
    """Per entry: the gap (queried minus sealed, percentage points), its bootstrap standard error, the
    one-sided p-value that the queried score exceeds the sealed one by more than sampling explains, and
    whether that is significant at ALPHA."""

    gap: np.ndarray
    std_error: np.ndarray
    p: np.ndarray
    larger_than_sampling: np.ndarray


def gap_test(
    task: TaskType,
    gold: GoldSet,
    stacked: np.ndarray,
    queried: np.ndarray,
    sealed: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    alpha: float = ALPHA,
) -> Gaps:
    """The gap of k stacked entries on the primary metric, tested one-sided: z = gap / sd, where sd is the
    standard deviation of the gap over cluster-bootstrap resamples (whole consistency groups drawn with
    replacement, as statistics.bootstrap draws them), p = 1 - Phi(z); marked where p < alpha."""
    from scipy.special import ndtr  # as statistics.one_sided_p: only a board computation needs scipy

    metric = task.primary_metric
    wanted = {QUERIED: (np.asarray(queried), (metric,)), SEALED: (np.asarray(sealed), (metric,))}
    ratios = metric_ratios(task, gold, np.asarray(stacked), wanted)
    q, s = ratios[(QUERIED, metric)], ratios[(SEALED, metric)]
    _, n_groups = group_codes(gold)
    gap = q.values - s.values
    total = np.zeros(gap.size)
    square = np.zeros(gap.size)
    count = 0
    q_sums, s_sums = q.numerators, s.numerators  # made once (Ratio.numerators builds them from the sums by group)
    for weights in resample_blocks(n_groups, resamples, seed):
        w_q, w_s = weights[:, q.groups].astype(np.float64), weights[:, s.groups].astype(np.float64)
        d_q, d_s = w_q @ q.denominators, w_s @ s.denominators
        present = (d_q > 0) & (d_s > 0)
        diff = (q_sums @ w_q.T.astype(np.float32))[:, present] / d_q[present] * 100.0 - (
            s_sums @ w_s.T.astype(np.float32)
        )[:, present] / d_s[present] * 100.0
        total += diff.sum(axis=1)
        square += (diff * diff).sum(axis=1)
        count += int(present.sum())
    if count < 2:
        nan = np.full(gap.size, np.nan)
        return Gaps(gap, nan, nan.copy(), np.zeros(gap.size, dtype=bool))
    mean = total / count
    std_error = np.sqrt(np.maximum(square / count - mean * mean, 0.0) * count / (count - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(std_error > 0, gap / std_error, np.where(gap > 0, np.inf, -np.inf))
    p = 1.0 - ndtr(z)
    return Gaps(gap, std_error, p, p < alpha)
