"""Prometheus metrics: what the server counts and times, and the hooks the services call.

Nothing here knows of HTTP: the request metrics are filled in by app/web/metrics.py, which also serves
/metrics. Under gunicorn every worker is a process of its own; with PROMETHEUS_MULTIPROC_DIR set (by
gunicorn.conf.py, before any worker imports this) each writes its samples to files there and /metrics sums
them over all workers. Without it (tests, `flask run`) the metrics live in this process's registry.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import prometheus_client
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.db import disk_full

UPLOAD_OUTCOMES = ("scored", "rejected", "over_quota", "replayed")
CONTENT_TYPE = CONTENT_TYPE_LATEST  # what /metrics answers with (the Prometheus text format)

REQUESTS = Counter(
    "holdout_http_requests", "HTTP requests answered, by endpoint, method and status", ["endpoint", "method", "status"]
)
REQUEST_SECONDS = Histogram(
    "holdout_http_request_duration_seconds",
    "Time to answer an HTTP request, by endpoint and method",
    ["endpoint", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
UPLOADS = Counter(
    "holdout_uploads",
    "Prediction files received, by outcome (scored, rejected, over_quota, replayed: a repeated Idempotency-Key)",
    ["outcome"],
)
PARSE_SCORE_SECONDS = Histogram(
    "holdout_upload_parse_score_seconds",
    "Time to parse, validate and score one prediction file",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
BOARD_SECONDS = Histogram(
    "holdout_board_computation_seconds",
    "Time to compute a leaderboard's scores, intervals and ranks (its _count is the number of computations)",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
DATABASE_ERRORS = Counter(
    "holdout_database_errors",
    "Errors raised by the database or its driver, by kind (unavailable, other)",
    ["kind"],
)

STORAGE_FAILURES = Counter(
    "holdout_storage_failures",
    "Writes refused by a full or failing store, by store (uploads: the upload folder; database: its disk)",
    ["store"],
)
STORES = ("uploads", "database")

# Jobs (app/services/jobs), counted in the process that ran them: a worker's, or a web worker's in-process.
JOB_SECONDS = Histogram(
    "holdout_job_seconds",
    "Time one attempt of a job took, by kind",
    ["kind"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
)
JOB_OUTCOMES = Counter(
    "holdout_jobs_finished",
    "Attempts of jobs by kind and outcome (done; retried: failed, to be tried again; failed: given up)",
    ["kind", "outcome"],
)

# Board builds, by benchmark and split slug and by board: the whole board, a named track's, the final one (as it
# stood at the split's close), a filtered one (a reader's ad-hoc conditions). Boards are few, so series are too.
BOARD_KINDS = ("whole", "track", "final", "filtered")
BOARD_BUILD_SECONDS = Histogram(
    "holdout_board_build_seconds",
    "Time to build a board, by benchmark, split and board (whole, track, final, filtered)",
    ["benchmark", "split", "board"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300),
)
BOARD_BUILD_PEAK_BYTES = Gauge(
    "holdout_board_build_peak_bytes",
    "Growth of the building process's peak resident memory during the last build of this board (VmHWM after, "
    "reset before, less VmRSS before)",
    ["benchmark", "split", "board"],
    multiprocess_mode="mostrecent",  # the last build's, whichever process built it
)

for store in STORES:
    STORAGE_FAILURES.labels(store)
for outcome in UPLOAD_OUTCOMES:  # present at 0 from the start, so a rate() has a series to work on
    UPLOADS.labels(outcome)
for kind in ("unavailable", "full", "other"):
    DATABASE_ERRORS.labels(kind)
# This process's last storage failure of each store: (time.time(), what the system said), for /healthz.
_last_failures: dict[str, tuple[float, str]] = {}


# --- hooks for the services --------------------------------------------------------------------------------


def upload(outcome: str) -> None:
    """Count a received prediction file as scored, rejected (stored with its problems), over_quota or replayed
    (answered as the earlier upload sent with the same Idempotency-Key)."""
    UPLOADS.labels(outcome).inc()


def storage_failure(store: str, reason: str) -> None:
    """Count a write a full or failing store refused, and remember it for the health check."""
    STORAGE_FAILURES.labels(store).inc()
    _last_failures[store] = (time.time(), reason)


def storage_confirmed(store: str) -> None:
    """A write the store has since confirmed: it is taking writes again, so its last refusal no longer counts
    against it on the health check (a store back after an outage is ok at its next write, not minutes later)."""
    _last_failures.pop(store, None)


def last_storage_failures() -> dict[str, tuple[float, str]]:
    return dict(_last_failures)


def forget_storage_failures() -> None:
    """Start afresh (the tests, between one test and the next: each gets its own process state)."""
    _last_failures.clear()


@contextmanager
def parse_and_score() -> Iterator[None]:
    with PARSE_SCORE_SECONDS.time():
        yield


def job_attempt(kind: str, outcome: str, seconds: float) -> None:
    """Record one attempt of a job: its time and how it ended (done, retried or failed)."""
    JOB_SECONDS.labels(kind).observe(seconds)
    JOB_OUTCOMES.labels(kind, outcome).inc()


@contextmanager
def board_computation(benchmark: str, split: str, board: str = "whole") -> Iterator[None]:
    """Time one board's build (the total, and by benchmark, split and board) and measure its peak memory."""
    assert board in BOARD_KINDS, board  # a new kind is named here first, and in docs/deployment/metrics.md
    peak = _PeakMeter()
    started = time.perf_counter()
    try:
        with BOARD_SECONDS.time():
            yield
    finally:
        BOARD_BUILD_SECONDS.labels(benchmark, split, board).observe(time.perf_counter() - started)
        BOARD_BUILD_PEAK_BYTES.labels(benchmark, split, board).set(peak.end())


# The peak is the kernel's high-water mark of this process's resident memory (VmHWM), which writing "5" to
# clear_refs resets to the present size (Linux 4.0+; refused in some sandboxes). Builds that overlap in one
# process (threads) share one reset, so each may count the other's memory too. The mark is the process's: whatever
# else reads VmHWM (a benchmark) sees the peak since the last build began.
_PROC_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"
_builds_lock = threading.Lock()
_builds_running = 0
_peak_was_reset = False


def _status_bytes(field: str) -> int | None:
    try:
        with open(_PROC_STATUS) as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # given in kB (KiB)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _lifetime_peak_bytes() -> int:
    """This process's peak resident memory since it started: VmHWM, else getrusage's (which keeps the peak of
    the process it was started from when that was higher: the maximum survives exec)."""
    high = _status_bytes("VmHWM")
    if high is not None:
        return high
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _reset_peak() -> bool:
    try:
        with open(_CLEAR_REFS, "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


class _PeakMeter:
    """The growth of this process's peak resident memory from now until end(): from the peak reset first where
    the kernel allows; otherwise from the lifetime peak, which counts a build only when it raised that peak (0
    when it stayed under an earlier one)."""

    def __init__(self) -> None:
        global _builds_running, _peak_was_reset
        with _builds_lock:
            # A build that starts while another runs leaves the peak alone: resetting it would lose the other's.
            if _builds_running == 0:
                _peak_was_reset = _reset_peak()
            _builds_running += 1
            self.reset = _peak_was_reset
            self.rss = _status_bytes("VmRSS")
            self.lifetime = _lifetime_peak_bytes()

    def end(self) -> int:
        global _builds_running
        with _builds_lock:
            _builds_running -= 1
        high = _status_bytes("VmHWM")
        if self.reset and high is not None and self.rss is not None:
            return max(0, high - self.rss)
        lifetime = _lifetime_peak_bytes()
        if lifetime <= self.lifetime:
            return 0
        return lifetime - (self.rss if self.rss is not None else self.lifetime)


@event.listens_for(Engine, "handle_error")
def _database_error(context) -> None:
    # A failed pre-ping only means a pooled connection is replaced: nobody saw an error.
    if context.is_pre_ping:
        return
    # Unavailable: no connection could be made (no statement yet), or the one in use was lost. Anything
    # else (a constraint, a lock timeout, a bad statement) is "other".
    unavailable = context.is_disconnect or context.connection is None
    full = disk_full(context.original_exception)
    DATABASE_ERRORS.labels("full" if full else "unavailable" if unavailable else "other").inc()


# --- for the web layer -------------------------------------------------------------------------------------


def request_answered(endpoint: str, method: str, status: int, started: float) -> None:
    """Record one answered request; `started` is its time.perf_counter() on arrival."""
    REQUESTS.labels(endpoint, method, str(status)).inc()
    REQUEST_SECONDS.labels(endpoint, method).observe(time.perf_counter() - started)


def exposition(queue: dict | None = None) -> bytes:
    """Every metric in the Prometheus text format, summed over all worker processes in multiprocess mode; with
    `queue` (the job queue's state, read from the database at each scrape), its gauges too."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    return text + (_queue_gauges(queue) if queue is not None else b"")


_QUEUE_GAUGES = {
    "waiting": "Jobs queued and not yet started (due or backing off before a retry)",
    "running": "Jobs running now",
    "oldest_s": "Age in seconds of the oldest job waiting or running (0 when none)",
    "failed": "Jobs that failed every attempt and were not since done by a later run",
    "stuck": "Jobs waiting or running for longer than JOB_STUCK_AFTER",
}


class _QueueCollector(Collector):
    """The queue's gauges as read at this scrape (not Gauge objects: in multiprocess mode each would be a
    file of this process's, summed with other processes' stale values)."""

    def __init__(self, queue: dict):
        self.queue = queue

    def collect(self):
        for name, what in _QUEUE_GAUGES.items():
            metric = "holdout_jobs_oldest_seconds" if name == "oldest_s" else f"holdout_jobs_{name}"
            yield GaugeMetricFamily(metric, what, value=float(self.queue.get(name, 0)))


def _queue_gauges(queue: dict) -> bytes:
    registry = CollectorRegistry()
    registry.register(_QueueCollector(queue))
    return generate_latest(registry)


# --- the gold cache (label_files) ----------------------------------------------------------------------------

# The gold sets a process holds (app/services/catalog/label_files.py), per process (a "pid" label in multiprocess
# mode, gone when the process ends): "private", its own memory (arrays it made, ids as strings, indexes);
# "mapped", the parsed-gold files it maps read-only, which the page cache holds once for every process.
GOLD_CACHE_BYTES = prometheus_client.Gauge(
    "holdout_gold_cache_bytes",
    "Bytes of parsed gold this process holds, by memory (private: its own; mapped: files shared between processes)",
    ["memory"],
    multiprocess_mode="liveall",
)


def gold_cache(private: int, mapped: int) -> None:
    """Record the size of this process's gold cache, as measured now (label_files measures it as it loads)."""
    GOLD_CACHE_BYTES.labels("private").set(private)
    GOLD_CACHE_BYTES.labels("mapped").set(mapped)
