"""The parameter-free Ladder: what a team may learn from its submissions to a hidden split.

Reference: Avrim Blum and Moritz Hardt, "The Ladder: A Reliable Leaderboard for Machine Learning
Competitions", ICML 2015 (arXiv:1502.04585), Algorithm 2 ("parameter-free Ladder").

Per team (and per account, below) and split the Ladder keeps the best released loss R (start +inf) and the
per-example 0/1 loss vector of the submission that set it. For a new submission with loss vector l of mean L
over n examples:

    s = sample standard deviation (ddof=1) of l            (first submission)
        sample standard deviation (ddof=1) of l - best     (afterwards)
    if L < R - s / sqrt(n):  R = round(L * n) / n;  best = l
    release R (unchanged otherwise)

A new score is released only when it beats the team's best by more than the noise of a paired
comparison, so a team learns next to nothing from submissions that do not really improve. That is what
defeats adaptive attacks such as submitting many random vectors and keeping the lucky ones.

People, not teams: one person with several teams would otherwise hold a fresh Ladder per team, whose first
submission always releases its own score. The services keep a Ladder per account too (its submissions through
every team) and step the stricter of the two (`step_shared`): a new score must beat the best either holds.

Pure functions over numpy arrays; the services keep the state in the database.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .display import Figure, figure
from .gold import GoldSet
from .tasks.base import TaskType


@dataclass(frozen=True)
class Ladder:
    """One team's Ladder on one split.

    best_loss: R, the last released loss (+inf before the first submission).
    best_losses: the 0/1 loss vector (float, shape (n,)) of the submission that set R, or None.
    """

    best_loss: float = math.inf
    best_losses: np.ndarray | None = None

    @property
    def started(self) -> bool:
        return math.isfinite(self.best_loss)


@dataclass(frozen=True)
class Step:
    """The Ladder after one submission: its new state and whether the submission set a new best."""

    ladder: Ladder
    improved: bool
    loss: float  # L, the new submission's mean loss (kept for maintainers, never released)
    threshold: float  # s / sqrt(n), the margin the submission had to beat R by

    @property
    def released_loss(self) -> float:
        return self.ladder.best_loss


def _sample_std(values: np.ndarray) -> float:
    # One example has no sample deviation; a margin of 0 then leaves only "strictly better" to decide.
    return float(np.std(values, ddof=1)) if values.size > 1 else 0.0


def step(ladder: Ladder, losses: np.ndarray) -> Step:
    """Feed one submission's per-example 0/1 losses (shape (n,)) to the Ladder."""
    losses = np.asarray(losses, dtype=np.float64).ravel()
    n = losses.size
    if n == 0:
        raise ValueError("the Ladder needs at least one example")
    if ladder.best_losses is not None and ladder.best_losses.shape != losses.shape:
        raise ValueError(f"loss vectors differ in length: {ladder.best_losses.size} and {n}")
    mean = float(losses.mean())
    # Without the best vector (first submission, or the best submission was deleted) the deviation is
    # that of l itself, as for the first submission.
    reference = losses if ladder.best_losses is None else losses - ladder.best_losses
    threshold = _sample_std(reference) / math.sqrt(n)
    if mean < ladder.best_loss - threshold:
        # The losses are 0/1, so L * n is a whole count up to floating-point noise: round it away.
        released = round(mean * n) / n
        return Step(Ladder(released, losses.copy()), True, mean, threshold)
    return Step(ladder, False, mean, threshold)


def stricter(ladders: Sequence[Ladder]) -> Ladder:
    """The Ladder a new score must beat when several hold (a team's, its submitting account's): the one with
    the lowest released loss, the first of equals; a fresh Ladder when there is none."""
    return min(ladders, key=lambda ladder: ladder.best_loss, default=Ladder())


def step_shared(ladders: Sequence[Ladder], losses: np.ndarray) -> tuple[Step, list[Ladder]]:
    """One submission counted by several Ladders at once: step the stricter of them; a new best becomes every
    one's best, and otherwise each keeps its own. Returns the step and the Ladders after it, in order (each
    releases its own best: what a team has been told is its own)."""
    result = step(stricter(ladders), losses)
    return result, [result.ladder if result.improved else ladder for ladder in ladders]


def run(loss_vectors: Iterable[np.ndarray]) -> list[Step]:
    """Feed a sequence of loss vectors from a fresh Ladder (for tests and analyses)."""
    ladder, steps = Ladder(), []
    for losses in loss_vectors:
        result = step(ladder, losses)
        steps.append(result)
        ladder = result.ladder
    return steps


def zero_one_losses(task: TaskType, gold: GoldSet, predictions: np.ndarray) -> np.ndarray:
    """The per-unit 0/1 loss vector of the task's primary metric, as float64 (1.0 = wrong).

    The task type's units (TaskType.zero_one_losses): NLVR images flattened to one entry per image (what
    accuracy counts); VCR: one entry per question for Q->AR (right only if answer and rationale are).
    """
    return task.zero_one_losses(gold, predictions)


def count_decimals(n: int) -> int:
    """Decimals that tell every count k of n apart as a percentage 100*k/n, and no more.

    Two counts differ by 100/n percentage points; rounding to d decimals keeps them apart as long as
    10**-d <= 100/n, so d = ceil(log10(n / 100)) (at least 0). NLVR2 Test-U (6,967 examples): 2 decimals.
    """
    if n < 1:
        raise ValueError("a count resolution needs at least one example")
    return max(0, math.ceil(math.log10(n / 100) - 1e-12))


def percentage_of_count(k: int, n: int) -> Figure:
    """100*k/n rounded to count_decimals(n) (half up, as every score is written: display.figure): the value
    identifies k and carries nothing more, and is written with those decimals wherever it is shown."""
    return figure(100.0 * k / n, count_decimals(n))


def round_percentage(value: float, n: int, decimals: int | None = None) -> Figure:
    """A percentage computed over n units, snapped to its count k = round(value*n/100) and rounded to
    `decimals` (default count_decimals(n)): the one rounding of every figure a blind test releases."""
    k = int(round(value * n / 100.0))
    return percentage_of_count(k, n) if decimals is None else figure(100.0 * k / n, decimals)


def widen_to(low: float, high: float, decimals: int) -> tuple[Figure, Figure]:
    """An interval written to `decimals`, rounded outward (it never covers less than the one computed)."""
    scale = 10**decimals
    # Snapped to 9 decimals first: float noise (71.2300000001) must not push a bound out a whole step.
    low_step, high_step = math.floor(round(low * scale, 9)), math.ceil(round(high * scale, 9))
    return figure(low_step / scale, decimals), figure(high_step / scale, decimals)


def released_accuracy(ladder: Ladder, n: int) -> Figure | None:
    """The percentage the Ladder releases: accuracy 1 - R, to the count resolution (None before any)."""
    if not ladder.started:
        return None
    errors = int(round(ladder.best_loss * n))
    return percentage_of_count(n - errors, n)
