"""Probe summaries: a lower bound on how many units two prediction files differ on, from a few counts each.

The probe check (services/blind_test/integrity.py) flags a new submission on a hidden split that differs from an earlier
one on fewer than a share of the units `distances` counts (examples; NLVR images; VCR questions). Comparing
it with every earlier file is what grows with the split; these counts let it skip almost all of them, exactly.

A unit's correctness (its prediction against the gold label; VCR: answer and rationale both right, as Q->AR
counts it) depends on that unit's prediction alone. So for two files that differ on h units:
- their counts of correct units k differ by at most h (the check reads a window of k from an index);
- cut the units into BLOCKS fixed contiguous blocks: the correct counts c_b of each block differ by at most
  the number of differing units in the block, so sum_b |c1_b - c2_b| <= h (the L1 of the block counts is a
  lower bound on the distance, and at least |k1 - k2|).
Two unrelated files of the same accuracy are hundreds of units apart on that bound, near-copies never are.

Stored summaries are records (submission id, block counts) packed into bytes, one run of them per count k.
Pure numpy: no Flask, no database.
"""

from __future__ import annotations

import numpy as np

from .gold import GoldSet
from .tasks.base import TaskType

BLOCKS = 32


def threshold_units(share: float, units: int) -> int:
    """The most differing units h for which h / units < share, as `distances` computes it (-1: none)."""
    if units <= 0 or not share > 0:
        return -1
    h = min(units, int(share * units) + 1)
    while h >= 0 and h / units >= share:  # the same float division the distances make
        h -= 1
    return h


def unit_correct(task: TaskType, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
    """Correctness of each unit the distance counts, for k stacked predictions (k, *shape): bool (k, units).

    The task type's units (TaskType.unit_correctness): NLVR images flattened, example-major; VCR: one per
    question, right when Q->AR is."""
    return task.unit_correctness(gold, np.asarray(stacked))


def block_bounds(units: int) -> np.ndarray:
    """Where each of the BLOCKS blocks starts, and the end: (BLOCKS + 1,) (blocks may be empty)."""
    return (np.arange(BLOCKS + 1, dtype=np.int64) * units) // BLOCKS


def block_counts(correct: np.ndarray) -> np.ndarray:
    """Correct units per block for k rows of unit correctness (k, units): int64 (k, BLOCKS)."""
    correct = np.asarray(correct, dtype=bool)
    sums = np.zeros((correct.shape[0], correct.shape[1] + 1), dtype=np.int64)
    np.cumsum(correct, axis=1, out=sums[:, 1:])
    bounds = block_bounds(correct.shape[1])
    return sums[:, bounds[1:]] - sums[:, bounds[:-1]]


def record_dtype(units: int) -> np.dtype:
    """A stored record: the submission's id and its block counts, one byte each while a block holds at most
    255 units (NLVR2 Test-U: 218), else two."""
    largest = int(np.diff(block_bounds(units)).max()) if units else 0
    return np.dtype([("id", "<i8"), ("blocks", "<u1" if largest <= 255 else "<u2", (BLOCKS,))])


def encode_records(ids: np.ndarray, blocks: np.ndarray, units: int) -> bytes:
    records = np.zeros(len(ids), dtype=record_dtype(units))
    records["id"] = ids
    records["blocks"] = blocks
    return records.tobytes()


def decode_records(data: bytes, units: int) -> np.ndarray:
    """Records packed by encode_records (any number of runs of them joined): a structured array."""
    dtype = record_dtype(units)
    if len(data) % dtype.itemsize:
        raise ValueError(f"stored probe summaries have {len(data)} bytes, not a multiple of {dtype.itemsize}")
    return np.frombuffer(data, dtype=dtype)


def lower_bounds(stored_blocks: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """The L1 distance of each stored row of block counts (m, BLOCKS) to one (BLOCKS,): int64 (m,), never more
    than the number of units the two files differ on."""
    # Narrow integers (one-byte counts differ by at most 255): a window of 20,000 records is a few MB less.
    wide = np.int16 if stored_blocks.dtype.itemsize == 1 else np.int32
    differences = np.subtract(stored_blocks, np.asarray(blocks).astype(wide)[None], dtype=wide)
    np.abs(differences, out=differences)
    distances: np.ndarray = differences.sum(axis=1, dtype=np.int64)
    return distances
