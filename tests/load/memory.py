"""Worker memory under uploads, shared by tests/load/test_worker_memory.py and benchmarks/worker_memory.py: a
deployment with a hidden split of every task type at its real size, prediction files of every odd shape
(hostile and valid, as large as the split's upload limit allows), and a gunicorn worker's resident size read
from /proc/<pid>/status."""

from __future__ import annotations

import contextlib
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from app import synthetic
from app.db import db
from app.evaluation.predictions import max_line_bytes, max_lines_for
from app.evaluation.tasks.vcr.formats import VCR_COLUMNS
from tests.load.servers import Deployment, Gunicorn, multipart, prepare, send

MB = 2**20
# Task type -> (benchmark slug, hidden split slug, examples, gold file maker): the real sizes.
SPLITS: dict[str, tuple[str, str, int, Callable[[int], bytes]]] = {
    "nlvr2": ("nlvr2", "test-u", 6970, lambda n: synthetic.nlvr2_gold(n, split="test2", seed=1)),
    "nlvr-structured": ("nlvr", "test-u", 5940, lambda n: synthetic.nlvr_gold(n, seed=2)),
    "nlvr-images": ("nlvr-images", "test-u", 5940, lambda n: synthetic.nlvr_gold(n, seed=3)),
    "vcr": ("vcr", "test", 26534, lambda n: synthetic.vcr_gold(n, seed=4)),
}


def deploy(folder: Path) -> Deployment:
    """A migrated SQLite deployment in ``folder`` with one team (``team-0``); ``add_splits`` adds its splits."""
    return prepare(Deployment(f"sqlite:///{folder / 'memory.sqlite3'}", folder), teams=1, per_day=None)


def add_splits(deployment: Deployment, examples: dict[str, int] | None = None) -> dict[str, bytes]:
    """A hidden split of every task type (of its real size, or ``examples[task]``), every quota off (each file
    is parsed, however many are sent); returns a valid file per task. Servers may be running meanwhile: a
    worker loads a split when an upload first asks for it."""
    from app.services import catalog

    valid = {}
    with deployment.app().app_context():
        for task, (benchmark, split, size, gold_of) in SPLITS.items():
            gold = gold_of((examples or {}).get(task, size))
            if benchmark != "nlvr2":
                catalog.add_benchmark(benchmark, task, benchmark.upper())
            catalog.add_split(benchmark, split, gold, hidden=True)
            catalog.set_policy(benchmark, split, per_day=None, per_month=None, total=None, rejected_per_day=100_000)
            valid[task] = (
                _vcr_file(gold) if task == "vcr" else synthetic.predictions(task, gold, 0.6, seed=7, split="test2")
            )
        db.engine.dispose()
    return valid


def _vcr_file(gold: bytes) -> bytes:
    """A valid VCR score file for a gold file: the same scores for every question (quicker to make than
    synthetic predictions, and as long)."""
    scores = ",".join(["0.7", "0.1", "0.1", "0.1"] + ["0.25"] * 16)
    ids = [annot_id.decode() for annot_id in re.findall(rb'"annot_id": "([^"]*)"', gold)]
    return (",".join(VCR_COLUMNS) + "\n" + "".join(f"{annot_id},{scores}\n" for annot_id in ids)).encode()


def upload(base: str, token: str, task: str, data: bytes, model_name: str = "memory") -> urllib.request.Request:
    benchmark, split, _, _ = SPLITS[task]
    body, content_type = multipart({"benchmark": benchmark, "split": split, "model_name": model_name}, data)
    return urllib.request.Request(
        f"{base}/api/v1/submissions",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )


# --- files ---------------------------------------------------------------------------------------------------


def _fill(unit: bytes, size: int) -> bytes:
    return (unit * (size // len(unit) + 1))[:size]


def _lines(valid: bytes) -> tuple[bytes, list[bytes]]:
    """(header line or b'', data lines) of a valid file."""
    lines = valid.splitlines()
    if lines[0].startswith(b"annot_id"):
        return lines[0], lines[1:]
    return b"", lines


def bounds(task: str, valid: bytes) -> tuple[int, int, int]:
    """(columns, longest line, most lines) a file of the split of ``valid`` (a valid file, a line a
    prediction) may have before any cell is read."""
    columns = len(VCR_COLUMNS) if task == "vcr" else 2
    return columns, max_line_bytes(columns), max_lines_for(len(_lines(valid)[1]))


def _widened(task: str, valid: bytes, size: int) -> bytes:
    """The valid file with its cells as wide as a line may be (ids padded with spaces, scores with zeros) and
    blank lines of spaces after it, up to the split's line bounds or ``size``: the largest file that is scored."""
    columns, longest, most = bounds(task, valid)
    header, rows = _lines(valid)
    per_line = min(longest, max(size // max(len(rows), 1) - 1, 8))
    if task == "vcr":  # 0.2500 -> 0.2500000...: the same number, read by the float parser
        widened = []
        for row in rows:
            cells = row.split(b",")
            room = max(per_line - len(row), 0) // (columns - 1)
            widened.append(b",".join([cells[0]] + [cell + b"0" * room for cell in cells[1:]]))
        body = b"\n".join([header, *widened]) + b"\n"
    else:  # '   id,true   ': padding the parser strips
        body = b"".join(b" " * max(per_line - len(row), 0) + row + b"\n" for row in rows)
    blank = b" " * (longest - 1) + b"\n"
    spare = min(most - body.count(b"\n") - 1, max(size - len(body), 0) // len(blank))
    return body + blank * max(spare, 0)


def _at_line_limit(columns: int, longest: int, most: int, size: int, cell: bytes, newline: bytes = b"\n") -> bytes:
    """Lines of the right column count, each as long as a line may be, as many as the split allows."""
    width = (longest - (columns - 1)) // columns // len(cell) * len(cell)  # whole characters
    line = b",".join([_fill(cell, width)] * columns) + newline
    return line * min(most - 1, size // len(line))


def _alternating(task: str, valid: bytes) -> bytes:
    """Every other line malformed (one column too many): the rows to read are not contiguous."""
    columns, longest, _ = bounds(task, valid)
    header, rows = _lines(valid)
    bad = b",".join([b"9" * 8] * (columns + 1)).ljust(longest // 2) + b"\n"
    return (header + b"\n" if header else b"") + b"".join(row.ljust(longest // 2) + b"\n" + bad for row in rows)


def _header(valid: bytes, newline: bytes = b"\n") -> bytes:
    header, _ = _lines(valid)
    return header + newline if header else b""


def _limit(task: str, valid: bytes, size: int, cell: bytes, newline: bytes = b"\n") -> bytes:
    return _at_line_limit(*bounds(task, valid), size, cell, newline)


# name -> (task, valid file of the split, size) -> a prediction file of at most ``size`` bytes: hostile shapes,
# each refused at the first check that can refuse it (some only once every cell is read), and valid files,
# scored and stored. Made with bytes repeats when asked for, so a 50 MB file costs milliseconds.
SHAPES: dict[str, Callable[[str, bytes, int], bytes]] = {
    "one line": lambda task, valid, size: _fill(b"x", size),
    "empty lines": lambda task, valid, size: b"\n" * size,
    "empty cells": lambda task, valid, size: _fill(b",\n", size),
    "many columns": lambda task, valid, size: _fill(b"a," * 10**6 + b"\n", size),
    "huge JSON string": lambda task, valid, size: b'{"predictions": "' + b"a" * (size - 21) + b'"}\n',
    "deep nesting": lambda task, valid, size: b"[" * (size // 2) + b"]" * (size // 2),
    "CR only": lambda task, valid, size: _fill(valid.replace(b"\n", b"\r"), size),
    "NUL bytes": lambda task, valid, size: b"\x00" * size,
    "invalid UTF-8": lambda task, valid, size: _limit(task, valid, size - 1, "é".encode())[: size - 2] + b"\xff\n",
    "BOM, long ids": lambda task, valid, size: (
        b"\xef\xbb\xbf" + _header(valid) + _limit(task, valid, size - len(_header(valid)) - 3, b"7")
    ),
    "CRLF, junk cells": lambda task, valid, size: (
        _header(valid, b"\r\n") + _limit(task, valid, size - len(_header(valid)) - 1, b"x", b"\r\n")
    ),
    "every other line malformed": lambda task, valid, size: _alternating(task, valid)[:size],
    "valid, CRLF": lambda task, valid, size: valid.replace(b"\n", b"\r\n"),
    "valid, widest cells": lambda task, valid, size: _widened(task, valid, size),
}


def shape(name: str, task: str, valid: bytes, size: int) -> bytes:
    return SHAPES[name](task, valid, size)


# --- /proc -----------------------------------------------------------------------------------------------------


def status_mib(pid: int, name: str) -> float:
    """A field of /proc/<pid>/status in MiB (VmRSS: resident now; VmHWM: the peak since it was reset)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no {name} for process {pid}")


def reset_peak(pid: int) -> None:
    """VmHWM starts again from the current resident size (Linux's clear_refs, allowed to the process owner)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


# --- measuring -------------------------------------------------------------------------------------------------


@dataclass
class Answer:
    """One upload sent to a worker, and what the worker's resident size did meanwhile."""

    task: str
    shape: str
    size: int  # bytes of the file
    status: int
    seconds: float
    peak: float  # MiB: the worker's VmHWM, reset just before the upload (the largest of the workers')
    after: float  # MiB: its VmRSS once answered (likewise)


def warm_up(server: Gunicorn, token: str) -> None:
    """Each worker loads every split's gold (a one-line file is refused after it is loaded), so that what an
    upload costs is measured apart from what loading a split costs: a few requests a split per worker."""
    workers = len(server.worker_pids())
    jobs = [task for task in SPLITS for _ in range(3 * workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda task: send(upload(server.base, token, task, b"x\n")), jobs))


def series(server: Gunicorn, token: str, files: Iterable[tuple[str, str, bytes]], report=None) -> list[Answer]:
    """Send the files (task, shape, bytes) one after another; ``report(answer)`` after each. A generator of
    files makes each only when it is sent. Whichever worker takes an upload, the answer has the largest
    peak and resident size of all the workers."""
    pids = server.worker_pids()
    answers = []
    for task, name, data in files:
        for pid in pids:
            reset_peak(pid)
        start = time.perf_counter()
        status, _, _ = send(upload(server.base, token, task, data))
        seconds = time.perf_counter() - start
        peak = max(status_mib(pid, "VmHWM") for pid in pids)
        answer = Answer(task, name, len(data), status, seconds, peak, max(status_mib(pid, "VmRSS") for pid in pids))
        answers.append(answer)
        if report:
            report(answer)
    return answers


@dataclass
class Burst:
    statuses: list[int]
    seconds: float
    peaks: dict[int, float]  # worker pid -> MiB (VmHWM, reset before the burst)
    polled: dict[int, float]  # worker pid -> the largest VmRSS seen, read every 10 ms
    after: dict[int, float]  # worker pid -> VmRSS once every upload is answered


def burst(server: Gunicorn, token: str, files: list[tuple[str, str, bytes]]) -> Burst:
    """Send every file at once (a thread each) while each worker's VmRSS is read every 10 ms."""
    pids = server.worker_pids()
    for pid in pids:
        reset_peak(pid)
    polled = dict.fromkeys(pids, 0.0)
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):  # a worker gone: the caller sees it in pids
                    polled[pid] = max(polled[pid], status_mib(pid, "VmRSS"))
            done.wait(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=len(files)) as pool:
            statuses = list(pool.map(lambda f: send(upload(server.base, token, f[0], f[2]))[0], files))
    finally:
        done.set()
        poller.join()
    seconds = time.perf_counter() - start
    alive = pids & server.worker_pids()
    return Burst(
        statuses,
        seconds,
        {pid: status_mib(pid, "VmHWM") for pid in alive},
        polled,
        {pid: status_mib(pid, "VmRSS") for pid in alive},
    )


def idle(server: Gunicorn, settle: float = 1.0) -> dict[int, float]:
    """Each worker's VmRSS (MiB) once it has had nothing to do for ``settle`` seconds."""
    time.sleep(settle)
    return {pid: status_mib(pid, "VmRSS") for pid in server.worker_pids()}
