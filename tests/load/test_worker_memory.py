"""Worker memory under uploads (issue 23): a real gunicorn worker (gunicorn.conf.py) stays under 300 MB
resident while it takes a series of hostile and valid uploads of every task type, one at a time and then 8
at once, and is back under 200 MB once idle. One worker takes them all, so whatever an upload left behind
would add up (benchmarks/worker_memory.py also sends the 8 to two workers).

Every file is as large as the red team's (45 MB; the 50 MB limit stands) or as large as its split's line
bounds let a file be and still reach its cells; each shape goes where it costs the most (tests/load/memory.py
makes them; benchmarks/worker_memory.py measures every shape on every task type and prints the table). The
VCR split has 10,000 questions rather than 26,534: its bounds still let a 45 MB file reach every cell, and
its gold loads in a third of the time. Memory is read from /proc/<pid>/status: VmHWM (the peak, reset before
each upload) and VmRSS.
"""

from __future__ import annotations

import pytest

from tests.load.memory import MB, Answer, add_splits, burst, deploy, idle, series, shape
from tests.load.servers import Gunicorn

pytestmark = pytest.mark.slow

PEAK_LIMIT = 300  # MiB a worker may reach while it handles uploads
IDLE_LIMIT = 200  # MiB a worker must be back under once idle
SIZE = 45 * MB
EXAMPLES = {"vcr": 10_000}

# One at a time: shapes refused before any cell is read (each costs its body, whichever split: one task
# type each), then files whose cells are read, on every task type.
ONE_AT_A_TIME = [
    ("vcr", "one line"),
    ("nlvr-images", "huge JSON string"),
    ("nlvr-structured", "NUL bytes"),
    ("vcr", "invalid UTF-8"),
    # NLVR structured files go through NLVR2's parser (one binary task): its shapes are sent once, as NLVR2's.
    *[
        ("nlvr2", name)
        for name in ("BOM, long ids", "CRLF, junk cells", "every other line malformed", "valid, widest cells")
    ],
    ("nlvr2", "valid, CRLF"),
    ("nlvr-images", "BOM, long ids"),
    ("nlvr-images", "valid, widest cells"),
    ("nlvr-images", "valid, CRLF"),
    ("vcr", "BOM, long ids"),
    ("vcr", "every other line malformed"),
    ("vcr", "valid, CRLF"),
]
# Then 8 at once: the other large files whose cells are read, and more shapes refused early.
AT_ONCE = [
    ("nlvr-images", "CRLF, junk cells"),
    ("nlvr-images", "every other line malformed"),
    ("vcr", "CRLF, junk cells"),
    ("vcr", "valid, widest cells"),
    ("nlvr2", "many columns"),
    ("nlvr-structured", "deep nesting"),
    ("vcr", "CR only"),
    ("nlvr-images", "empty lines"),
]


def table(answers: list[Answer]) -> str:
    return "\n".join(
        f"{a.task} / {a.shape}: {a.size / MB:.1f} MB -> {a.status} in {a.seconds:.2f} s, "
        f"peak {a.peak:.0f} MB, after {a.after:.0f} MB"
        for a in answers
    )


def test_workers_stay_under_300_mb_through_hostile_uploads_and_return_under_200_mb_idle(tmp_path):
    deployment = deploy(tmp_path)
    token = deployment.tokens["team-0"]
    server = Gunicorn(deployment.env, tmp_path / "gunicorn.log", workers=1)
    try:
        valid = add_splits(deployment, EXAMPLES)  # while the workers start
        server.wait_until_up()
        workers = server.wait_for_workers(1)

        def files(jobs):
            return ((task, name, shape(name, task, valid[task], SIZE)) for task, name in jobs)

        answers = series(server, token, files(ONE_AT_A_TIME))
        report = table(answers)
        assert [a.status for a in answers] == [201 if name.startswith("valid") else 422 for _, name in ONE_AT_A_TIME], (
            report
        )
        assert max(a.peak for a in answers) < PEAK_LIMIT, report

        at_once = burst(server, token, list(files(AT_ONCE)))
        measured = f"{report}\n8 at once: {at_once}"
        assert at_once.statuses == [201 if name.startswith("valid") else 422 for _, name in AT_ONCE], measured
        assert max(at_once.peaks.values()) < PEAK_LIMIT, measured
        assert max(at_once.polled.values()) < PEAK_LIMIT, measured

        rest = idle(server)
        assert set(rest) == workers, f"a worker was replaced: {sorted(workers)} -> {sorted(rest)}\n{measured}"
        assert max(rest.values()) < IDLE_LIMIT, f"idle: {rest}\n{measured}"
    finally:
        server.stop()
