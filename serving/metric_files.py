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

KINDS = ("counter", "histogram")  # the kinds of metric Holdout keeps (app/observability.py)


def retire_worker(folder: str, pid: int) -> None:
    multiprocess.mark_process_dead(pid, folder)  # its live gauges, should there ever be any
    for kind in KINDS:
        path = os.path.join(folder, f"{kind}_{pid}.db")
        if not os.path.exists(path):
            continue
        archive = MmapedDict(os.path.join(folder, f"{kind}_retired.db"))
        try:
            for key, value, timestamp, _position in MmapedDict.read_all_values_from_file(path):
                total, _ = archive.read_value(key)
                archive.write_value(key, total + value, timestamp)
        finally:
            archive.close()
        # A scrape in this instant may count the worker's samples twice; the next one is right again.
        os.unlink(path)
