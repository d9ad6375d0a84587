"""Per-example outcomes of stacked entries: which examples each got right, and each counted metric's count.

Pure numpy, read off the family's own layout (TaskType.example_outcomes), so that the examples counted right here
are the ones the scores and the statistics count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gold import GoldSet
from .tasks.base import TaskType


@dataclass(frozen=True)
class ExampleOutcomes:
    """k entries' outcomes, example by example (arrays (k, n); `counted` and `of` are (n,))."""

    correct: np.ndarray  # bool: every judgement the primary metric counts on the example is right
    counted: np.ndarray  # bool: the primary metric counts the example at all (GQA: balanced questions only)
    # Per counted metric: the judgements (or points) right on each example, and out of how many.
    counts: dict[str, np.ndarray]
    of: dict[str, np.ndarray]


def outcomes(task: TaskType, gold: GoldSet, stacked: np.ndarray) -> ExampleOutcomes:
    stacked = np.asarray(stacked)
    found = task.example_outcomes(gold, stacked)
    counts: dict[str, np.ndarray] = {}
    of: dict[str, np.ndarray] = {}
    for metric, (by_example, per_example) in found["counts"].items():
        counts[metric] = np.asarray(by_example).T.astype(np.int64)
        of[metric] = np.broadcast_to(np.asarray(per_example, dtype=np.int64), (gold.n,)).copy()
    primary = task.primary_metric
    if primary in counts:
        correct = counts[primary] == of[primary][None, :]
        counted = of[primary] > 0
    else:
        correct = np.asarray(found["all_right"]).T.astype(bool)
        counted = np.ones(gold.n, dtype=bool)
    return ExampleOutcomes(correct & counted[None, :], counted, counts, of)


def discordant(found: ExampleOutcomes) -> np.ndarray:
    """The examples (indices) two entries (rows 0 and 1) disagree on: one right, the other wrong."""
    return np.flatnonzero(found.counted & (found.correct[0] != found.correct[1]))
