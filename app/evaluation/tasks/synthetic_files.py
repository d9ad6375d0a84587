"""What the synthetic data of every task family shares: checked counts and accuracies, JSON lines, and
errors drawn per example or shared by a group.

Pure: standard library and numpy only. Every file is UTF-8 ``bytes`` with ``\\n`` line endings and a final
newline (an empty file is ``b""``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np


def check_count(name: str, n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return int(n)


def lines(rows: Sequence[str], crlf: bool = False) -> bytes:
    if not rows:
        return b""
    nl = "\r\n" if crlf else "\n"
    return (nl.join(rows) + nl).encode("utf-8")


def dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


def json_lines(gold: bytes | str) -> Iterator[Any]:
    text = gold.decode("utf-8-sig") if isinstance(gold, (bytes, bytearray)) else gold
    for line in text.splitlines():
        line = line.strip()
        if line:
            yield json.loads(line)


def correct_mask(rng: np.random.Generator, accuracy: float, groups: np.ndarray, group_correlation: float) -> np.ndarray:
    """Bernoulli(accuracy) per item; with probability ``group_correlation`` a
    group shares one draw (correlated errors; same expected accuracy)."""
    own = rng.random(groups.size) < accuracy
    if group_correlation <= 0 or groups.size == 0:
        return own
    n_groups = int(groups.max()) + 1
    shared = rng.random(n_groups) < accuracy
    use_shared = rng.random(n_groups) < group_correlation
    return np.where(use_shared[groups], shared[groups], own)


def check_accuracy(name: str, value: float) -> float:
    v = float(value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {value!r}")
    return v
