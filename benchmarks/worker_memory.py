"""A gunicorn worker's memory over a series of uploads of every shape and task type, then 8 at once.

Run from the repository root: `.venv/bin/python benchmarks/worker_memory.py [--mb 45]`. It creates a
temporary deployment (SQLite) with a hidden split of each task type at its real size (synthetic gold; NLVR2
6,970 examples, NLVR 5,940, NLVR images 35,640 images, VCR 26,534 questions; quotas off, so every file is
parsed), starts gunicorn with gunicorn.conf.py on a free loopback port and prints:

1. one worker taking every file in a row (tests/load/memory.py: hostile shapes of ``--mb`` MB, or as large as
   the split's line bounds let a file reach its cells, and valid files, which are scored and stored): each
   upload's answer, the worker's peak resident size while it was handled (VmHWM, reset before it), its
   resident size (VmRSS) once answered, and the time to answer; then its VmRSS after a second idle;
2. two workers taking 8 of the largest files at once: each worker's peak, and its VmRSS after.

The summary of 1 and the table of 2 are written into docs/performance/worker-memory.md.

Targets (issue 23): every worker under 300 MB throughout, and back under 200 MB once idle.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.doc_tables import Page  # noqa: E402
from tests.load.memory import (  # noqa: E402
    MB,
    SHAPES,
    SPLITS,
    Answer,
    add_splits,
    burst,
    deploy,
    idle,
    series,
    shape,
    status_mib,
    warm_up,
)
from tests.load.servers import Gunicorn  # noqa: E402

# The burst: per task type, the two files that reach the most cells.
BURST_SHAPES = ("valid, widest cells", "CRLF, junk cells")


def row(answer: Answer) -> None:
    print(
        f"| {answer.task} | {answer.shape} | {answer.size / MB:.1f} MB | {answer.status} | {answer.peak:.0f} MB "
        f"| {answer.after:.0f} MB | {answer.seconds:.2f} s |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=45, help="size of each hostile file (default 45)")
    parser.add_argument("--task", action="append", choices=list(SPLITS), help="only these task types")
    args = parser.parse_args()
    size = int(args.mb * MB)
    tasks = args.task or list(SPLITS)
    folder = Path(tempfile.mkdtemp(prefix="holdout-memory-"))
    try:
        deployment = deploy(folder)
        valid = add_splits(deployment)
        token = deployment.tokens["team-0"]
        print(
            f"{datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, Python {platform.python_version()}; "
            f"files of up to {args.mb:g} MB, upload limit 50 MB\n"
        )
        server = Gunicorn(deployment.env, folder / "gunicorn-1.log", workers=1)
        try:
            server.wait_until_up()
            warm_up(server, token)
            [pid] = server.worker_pids()
            before = status_mib(pid, "VmRSS")
            print(f"one worker, every split's gold loaded: VmRSS {before:.0f} MB\n")
            print("| task | shape | size | status | peak RSS | RSS after | seconds |")
            print("|---|---|---|---|---|---|---|")
            files = ((task, name, shape(name, task, valid[task], size)) for task in tasks for name in SHAPES)
            answers = series(server, token, files, row)
            rest = idle(server)
            print()
            page = Page("worker-memory", "worker_memory.py")
            peaks = {task: max(a.peak for a in answers if a.task == task) for task in tasks}
            page.table(
                ("measure", "measured", "target", "met"),
                [
                    ("a worker with every split's gold loaded, before any upload", f"{before:.0f} MB", "", ""),
                    (
                        f"{len(answers)} uploads in a row: largest peak ({' / '.join(peaks)})",
                        " / ".join(f"{peak:.0f}" for peak in peaks.values()) + " MB",
                        "< 300 MB",
                        "yes" if max(peaks.values()) < 300 else "**no**",
                    ),
                    ("... largest resident size once answered", f"{max(a.after for a in answers):.0f} MB", "", ""),
                    (
                        "... idle 1 s after the series",
                        f"{max(rest.values()):.0f} MB",
                        "< 200 MB",
                        "yes" if max(rest.values()) < 200 else "**no**",
                    ),
                    ("slowest answer", f"{max(a.seconds for a in answers):.2f} s", "", ""),
                ],
                title="One worker taking every file in a row:",
            )
        finally:
            server.stop()
        server = Gunicorn(deployment.env, folder / "gunicorn-2.log", workers=2)
        try:
            server.wait_until_up()
            server.wait_for_workers(2)
            warm_up(server, token)
            jobs = [(task, name, shape(name, task, valid[task], size)) for task in tasks for name in BURST_SHAPES]
            jobs = (jobs * 8)[:8]
            result = burst(server, token, jobs)
            rest = idle(server)
            page.table(
                ("8 uploads at once, 2 workers", "measured"),
                [
                    ("files", ", ".join(f"{t} {n} ({len(d) / MB:.0f} MB)" for t, n, d in jobs)),
                    ("statuses", sorted(result.statuses)),
                    ("all answered in", f"{result.seconds:.2f} s"),
                    ("peak RSS per worker (VmHWM)", ", ".join(f"{v:.0f} MB" for v in result.peaks.values())),
                    ("RSS once answered", ", ".join(f"{v:.0f} MB" for v in result.after.values())),
                    ("RSS after 1 s idle", ", ".join(f"{v:.0f} MB" for v in rest.values())),
                ],
            )
            page.write()
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
