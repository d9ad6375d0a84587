"""serving/memory.py: a gunicorn worker's allocator gives back what a large request freed (issue 23)."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from serving import memory

REPO = Path(__file__).resolve().parents[2]
glibc_only = pytest.mark.skipif(memory.glibc() is None, reason="mallopt and malloc_trim are glibc's")

# Blocks of a few MB freed while small blocks after them stay (what parsing a large upload leaves): by default
# glibc's mmap threshold has risen past them, so they come from the heap and stay in it once freed.
PROGRAM = """
import sys
from serving import memory

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

if sys.argv[1] == "configured":
    assert memory.configure()
big = b"\\x01" * (24 << 20)
del big  # freeing a mapped block raises glibc's mmap threshold to its size
before = rss()
blocks, pins = [], []
for _ in range(40):
    blocks.append(b"\\x01" * (4 << 20))
    pins.append(b"\\x02" * (256 << 10))
del blocks
if sys.argv[1] == "trimmed":
    memory.trim()
print(rss() - before)
"""


def retained_mb(mode: str) -> int:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    )
    return int(result.stdout)


@glibc_only
def test_freed_blocks_stay_resident_by_default_and_go_back_configured_or_trimmed():
    assert retained_mb("default") > 100  # 160 MB freed, kept by the heap (10 MB of small blocks stay)
    assert retained_mb("configured") < 40
    assert retained_mb("trimmed") < 40


def test_only_large_or_chunked_requests_end_with_a_trim(monkeypatch):
    trims = []
    monkeypatch.setattr(memory, "trim", lambda: trims.append(1))
    for environ in (
        {},
        {"CONTENT_LENGTH": ""},
        {"CONTENT_LENGTH": "junk"},
        {"CONTENT_LENGTH": str(memory.TRIM_AFTER_BODY)},
    ):
        memory.after_request(environ)
    assert trims == []
    memory.after_request({"CONTENT_LENGTH": str(memory.TRIM_AFTER_BODY + 1)})
    memory.after_request({"HTTP_TRANSFER_ENCODING": "chunked"})
    assert len(trims) == 2


def test_gunicorn_conf_configures_each_worker_and_trims_after_requests(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))  # else reading the file makes a folder
    calls = []
    monkeypatch.setattr(memory, "configure", lambda: calls.append("configure"))
    monkeypatch.setattr(memory, "after_request", lambda environ: calls.append(environ["CONTENT_LENGTH"]))
    settings = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    settings["post_fork"](None, None)
    settings["post_request"](None, None, {"CONTENT_LENGTH": "5"}, None)
    assert calls == ["configure", "5"]
