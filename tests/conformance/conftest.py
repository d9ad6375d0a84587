"""Conformance tests read the real benchmark files in ../shared/data in place (never copied here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder ($HOLDOUT_SHARED_DATA, else <repo>/../shared/data); skips when absent."""
    folder = Path(os.environ.get("HOLDOUT_SHARED_DATA") or REPO.parent / "shared" / "data")
    if not folder.is_dir():
        pytest.skip(f"real benchmark data not found at {folder} (set HOLDOUT_SHARED_DATA to its location)")
    return folder


@pytest.fixture(scope="session")
def read_shared(shared_data):
    """read_shared('nlvr2/dev.json') -> bytes; skips the test when that one file is missing."""

    def read(relative: str) -> bytes:
        path = shared_data / relative
        if not path.is_file():
            pytest.skip(f"{relative} is missing from {shared_data}")
        return path.read_bytes()

    return read
