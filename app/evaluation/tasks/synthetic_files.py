"""What the synthetic data of every task family shares: the options a prediction file is made with
(SyntheticOptions), checked counts and accuracies, JSON lines, and errors drawn per example or shared by a group.

Pure: standard library and numpy only. Every file is UTF-8 ``bytes`` with ``\\n`` line endings and a final
newline (an empty file is ``b""``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class SyntheticOptions:
    """How a synthetic prediction file is made, for every family (TaskType.synthetic_file reads it; the one
    signature callers use is TaskType.synthetic_predictions). A family reads what applies to it and ignores the
    rest: a JSON document has no header line, an example that is its own group shares no errors."""

    accuracy: float  # the expected accuracy on the primary setting, in [0, 1]
    seed: int = 0  # the file is deterministic for it
    header: bool = False  # a header line, where the format allows one
    shuffle: bool = True  # lines in a shuffled order
    split: str = "dev"  # the split's prefix, where names carry one (NLVR images: "testu")
    group_correlation: float = 0.0  # a consistency group shares its errors with this probability, in [0, 1]
    # A family's own options by name, each an accuracy (VCR's rationale_accuracy, A-OKVQA's da_accuracy): a new
    # family's option needs no field here.
    family: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accuracy", check_accuracy("accuracy", self.accuracy))
        object.__setattr__(self, "group_correlation", check_accuracy("group_correlation", self.group_correlation))

    @classmethod
    def of(cls, accuracy: float, seed: int = 0, **options: Any) -> SyntheticOptions:
        """The options from keywords: the fields above by name, any other a family's own."""
        shared = {
            name: options.pop(name) for name in ("header", "shuffle", "split", "group_correlation") if name in options
        }
        return cls(accuracy, seed, **shared, family=options)

    def share(self, name: str) -> float:
        """A family's own accuracy option, checked, or ``accuracy`` where it is not given (or None)."""
        value = self.family.get(name)
        return self.accuracy if value is None else check_accuracy(name, value)
