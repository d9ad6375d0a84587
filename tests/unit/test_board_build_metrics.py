"""A board build's metrics (app/observability.py, board_computation): its time and the growth of the building
process's peak resident memory, by benchmark, split and board. The peak is reset before each build where the
kernel allows (/proc/self/clear_refs), so a build is not charged with an earlier one's peak; elsewhere the
lifetime peak counts a build only when it raised it."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from app import observability

MIB = 1 << 20
LABELS = {"benchmark": "unit-bench", "split": "unit-split", "board": "track"}


def _sample(name: str) -> float | None:
    return REGISTRY.get_sample_value(name, LABELS)


def _build(mebibytes: int) -> None:
    with observability.board_computation("unit-bench", "unit-split", "track"):
        # Fresh pages of its own (an anonymous mapping, not the allocator's: a long-lived test process may hold
        # freed heap that a small block would reuse without growing), each written so that it is resident.
        block = mmap.mmap(-1, mebibytes * MIB)
        for at in range(0, mebibytes * MIB, mmap.PAGESIZE):
            block[at] = 1
        block.close()


def _peak_can_be_reset() -> bool:
    return observability._reset_peak() and observability._status_bytes("VmHWM") is not None


@pytest.mark.skipif(not _peak_can_be_reset(), reason="this kernel or sandbox refuses /proc/self/clear_refs")
def test_each_build_is_timed_and_charged_with_its_own_peak_only():
    count = _sample("holdout_board_build_seconds_count") or 0.0
    _build(96)
    first = _sample("holdout_board_build_peak_bytes")
    assert first is not None and 90 * MIB <= first < 400 * MIB, first
    _build(8)
    second = _sample("holdout_board_build_peak_bytes")
    # Without the reset the high-water mark would still hold the first build's 96 MiB.
    assert second is not None and 7 * MIB <= second < 48 * MIB, second
    assert _sample("holdout_board_build_seconds_count") == count + 2
    assert (_sample("holdout_board_build_seconds_sum") or 0) > 0


def test_without_a_reset_a_build_counts_only_when_it_raised_the_lifetime_peak():
    """In a fresh process (this one's lifetime peak is the suite's), with clear_refs refused."""
    script = (
        "from prometheus_client import REGISTRY\n"
        "from app import observability as o\n"
        "o._CLEAR_REFS = '/nonexistent-holdout/clear_refs'\n"
        "def build(mib):\n"
        "    with o.board_computation('b', 's'):\n"
        "        block = b'x' * (mib << 20)\n"
        "        del block\n"
        "    return REGISTRY.get_sample_value('holdout_board_build_peak_bytes', "
        "{'benchmark': 'b', 'split': 's', 'board': 'whole'})\n"
        "print(build(64), build(16))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PROMETHEUS_MULTIPROC_DIR"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    raised, under = (float(word) for word in result.stdout.split())
    assert 60 * MIB <= raised < 400 * MIB, raised
    assert under == 0  # stayed under the first build's peak: nothing to tell it by


def test_a_replaced_workers_last_peak_stays_and_an_earlier_runs_files_go(tmp_path):
    """serving/metric_files.py on the files prometheus_client's multiprocess mode writes: a gunicorn worker that
    exits has its last-value gauges folded into one file (the newest value wins), not summed and not lost; at
    the next start only a running process's files are kept (a `flask worker` sharing the folder)."""
    from prometheus_client import CollectorRegistry, multiprocess
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    from serving import metric_files

    key = mmap_key(
        "holdout_board_build_peak_bytes", "holdout_board_build_peak_bytes", list(LABELS), list(LABELS.values()), "peak"
    )
    for pid, value, when in ((4_000_001, 5.0, 100.0), (4_000_002, 7.0, 200.0), (4_000_003, 3.0, 150.0)):
        written = MmapedDict(str(tmp_path / f"gauge_mostrecent_{pid}.db"))
        written.write_value(key, value, when)
        written.close()
        metric_files.retire_worker(str(tmp_path), pid)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gauge_mostrecent_retired.db"]
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(tmp_path))
    assert registry.get_sample_value("holdout_board_build_peak_bytes", LABELS) == 7.0  # the newest, set at 200

    (tmp_path / f"histogram_{os.getpid()}.db").write_bytes(b"")  # a running process's (this one)
    (tmp_path / "counter_4000004.db").write_bytes(b"")  # a process that has ended
    metric_files.forget_earlier_runs(str(tmp_path))
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"histogram_{os.getpid()}.db"]
