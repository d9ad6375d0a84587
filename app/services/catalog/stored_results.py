"""Each scored submission's compact per-example results (TaskType.results_dtype), stamped with the gold file they
were counted against: what a board reads in place of the predictions (VQA v2 test-std: 448 KB of points an entry,
before compression, where its predictions are 7.2 MB). Written with the submission and again when its split is
rescored; results stamped with another gold file are never read (the board counts them from the predictions)."""

from __future__ import annotations

import numpy as np

from app.evaluation import GoldSet, encoding
from app.models import Split


def stamp(split: Split) -> str:
    """What a split's results are counted against: its gold file as it is now."""
    return split.gold_sha256[:16]


def packed(task, gold: GoldSet, split: Split, predictions: np.ndarray) -> bytes | None:
    """One submission's results as stored, or None for a family that keeps none apart from its predictions."""
    if task.results_dtype is None:
        return None
    return encoding.pack_results(task.results(gold, np.asarray(predictions)[None])[0], task.results_dtype, stamp(split))


def unpacked(task, split: Split, blob: bytes | None, n: int) -> np.ndarray | None:
    """The stored results if they are the split's current ones (n values, its gold file's stamp), else None."""
    return encoding.unpack_results(blob, n, task.results_dtype, stamp(split))
