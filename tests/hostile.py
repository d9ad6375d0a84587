"""Hostile prediction files of every shape, shared by the tests and benchmarks/hostile_uploads.py."""

from __future__ import annotations

import numpy as np

from app.evaluation.tasks.vcr.formats import VCR_COLUMNS


def _fill(unit: bytes, size: int) -> bytes:
    return (unit * (size // len(unit) + 1))[:size]


def _vcr_header() -> bytes:
    return ",".join(VCR_COLUMNS).encode() + b"\n"


def shapes(task: str, valid: bytes, size: int, seed: int = 0) -> dict[str, bytes]:
    """name -> a file of ``size`` bytes; ``valid`` is a valid file for the split (padded by one shape)."""
    rng = np.random.default_rng(seed)
    cells = 21 if task == "vcr" else 2
    wide_row = b",".join([b"x" * 60] * cells) + b"\n"  # the right column count, cells of junk
    head = _vcr_header() if task == "vcr" else b""
    return {
        "empty cells (',\\n')": _fill(b",\n", size),
        "'a,b\\n' lines": _fill(b"a,b\n", size),
        "'a\\n' lines": _fill(b"a\n", size),
        "one line": _fill(b"x", size),
        "10^6 columns": _fill(b"a," * 10**6 + b"\n", size),
        "random bytes": rng.integers(0, 256, size, dtype=np.uint8).tobytes(),
        "NUL bytes": b"\x00" * size,
        "valid, padded with spaces": valid + b" " * max(size - len(valid), 0),
        "valid, padded with blank lines": valid + _fill(b" \n", max(size - len(valid), 0)),
        "right columns, junk cells": (head + _fill(wide_row, size))[:size],
    }
