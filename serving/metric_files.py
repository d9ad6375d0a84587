"""The files behind multiprocess metrics (PROMETHEUS_MULTIPROC_DIR), kept few.

Each gunicorn worker writes its samples to files named by its pid, and a scrape reads every file in the
folder. Workers are replaced every couple of thousand requests (gunicorn.conf.py, max_requests), so on a
busy server the folder would gain files without end and scrapes would slow down with it. When a worker
exits, the master folds its counters and histograms into one file per kind and removes its own. Only the
master writes those files, so no two processes write one at the same time.
"""

from __future__ import annotations

import os

from prometheus_client import multiprocess
from prometheus_client.mmap_dict import MmapedDict

KINDS = ("counter", "histogram")  # the kinds of metric Holdout keeps (app/observability.py), summed
LAST = "gauge_mostrecent"  # and gauges of the last value, of whichever process set it last


def retire_worker(folder: str, pid: int) -> None:
    multiprocess.mark_process_dead(pid, folder)  # its live gauges, should there ever be any
    for kind in (*KINDS, LAST):
        path = os.path.join(folder, f"{kind}_{pid}.db")
        if not os.path.exists(path):
            continue
        archive = MmapedDict(os.path.join(folder, f"{kind}_retired.db"))
        try:
            for key, value, timestamp, _position in MmapedDict.read_all_values_from_file(path):
                total, when = archive.read_value(key)
                if kind != LAST:
                    archive.write_value(key, total + value, timestamp)
                elif timestamp >= when:
                    archive.write_value(key, value, timestamp)
        finally:
            archive.close()
        # A scrape in this instant may count the worker's samples twice; the next one is right again.
        os.unlink(path)


def forget_earlier_runs(folder: str) -> None:
    """At the server's start: the files of processes no longer running go (an earlier run's workers, folded or
    not), or their samples would be added to this run's. Those of a live process stay: a `flask worker` on this
    host writing to the same folder (PROMETHEUS_MULTIPROC_DIR) keeps its counts in the sum."""
    for name in os.listdir(folder):
        if not name.endswith(".db"):
            continue
        owner = name[: -len(".db")].rsplit("_", 1)[-1]
        if owner.isdigit() and _running(int(owner)):
            continue
        os.unlink(os.path.join(folder, name))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's: running
    return True
