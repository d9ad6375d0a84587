"""Hostile uploads against a real server: time to answer and the worker's peak memory per shape and task type,
then 8 at once against 2 sync workers while /healthz is polled.

Run from the repository root: `.venv/bin/python benchmarks/hostile_uploads.py [--mb 50]`. It creates a
temporary deployment (SQLite) with one split of each task type at its real size (synthetic gold), starts
gunicorn with gunicorn.conf.py on a free loopback port and prints two tables (every file's row, and 8 at
once); the summary of the first and the second are written into docs/performance/hostile-uploads.md.
Targets (issue 12): a hostile file of 50 MB answered within 3 s with a worker's peak RSS under 300 MB; 8 at
once kill no worker.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app import synthetic  # noqa: E402
from app.db import db  # noqa: E402
from benchmarks.doc_tables import Page  # noqa: E402
from tests.hostile import shapes  # noqa: E402
from tests.load.servers import Deployment, Gunicorn, multipart, prepare, send  # noqa: E402

MB = 2**20
SPLITS = {  # task type -> (benchmark slug, split slug, gold at the real size)
    "nlvr2": ("nlvr2", "test-p", lambda: synthetic.nlvr2_gold(6970, split="test1", seed=1)),
    "nlvr-structured": ("nlvr", "test-p", lambda: synthetic.nlvr_gold(5940, seed=2)),
    "nlvr-images": ("nlvr-images", "test-p", lambda: synthetic.nlvr_gold(5940, seed=3)),
    "vcr": ("vcr", "val", lambda: synthetic.vcr_gold(26534, seed=4)),
}


def status_field(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise ValueError(name)


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM starts again from the current RSS


def request_for(base: str, token: str, benchmark: str, split: str, data: bytes) -> urllib.request.Request:
    body, content_type = multipart({"benchmark": benchmark, "split": split, "model_name": "hostile"}, data)
    return urllib.request.Request(
        f"{base}/api/v1/submissions",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )


def setup(folder: Path) -> tuple[Deployment, dict[str, bytes]]:
    from app.services import catalog

    deployment = prepare(Deployment(f"sqlite:///{folder / 'bench.sqlite3'}", folder), teams=1, per_day=None)
    valid = {}
    app = deployment.app()
    with app.app_context():
        for task, (benchmark, split, gold_of) in SPLITS.items():
            gold = gold_of()
            if benchmark != "nlvr2":
                catalog.add_benchmark(benchmark, task, benchmark.upper())
            if (benchmark, split) != ("nlvr2", "test-p"):
                catalog.add_split(benchmark, split, gold)
            else:
                gold = deployment.gold
            # No quota may refuse a file before it is parsed: the point is what parsing it costs.
            catalog.set_policy(benchmark, split, per_day=None, rejected_per_day=100_000)
            valid[task] = (
                synthetic.predictions("vcr", gold, 0.5)
                if task == "vcr"
                else synthetic.all_true(task, gold, **({"split": "test1"} if task == "nlvr-images" else {}))
            )
        db.engine.dispose()
    return deployment, valid


def sequential(server: Gunicorn, token: str, valid: dict[str, bytes], size: int) -> list[tuple]:
    [worker] = server.wait_for_workers(1)
    rows = []
    for task, (benchmark, split, _) in SPLITS.items():
        send(request_for(server.base, token, benchmark, split, b"x\n"))  # loads the split's gold (once a worker)
        for name, data in shapes(task, valid[task], size).items():
            before = status_field(worker, "VmRSS") / 1024
            reset_peak(worker)
            request = request_for(server.base, token, benchmark, split, data)
            start = time.perf_counter()
            status, body, _ = send(request)
            elapsed = time.perf_counter() - start
            peak = status_field(worker, "VmHWM") / 1024
            first = (body.get("details") or [{}])[0].get("message") or body.get("error", "")
            rows.append((task, name, status, elapsed, peak, first[:60], peak - before))
            print(
                f"| {task} | {name} | {status} | {elapsed:.2f} s | {peak:.0f} MB | +{peak - before:.0f} MB | "
                f"{first[:60]} |",
                flush=True,
            )
    return rows


def concurrent(server: Gunicorn, token: str, valid: dict[str, bytes], size: int) -> dict:
    workers = server.wait_for_workers(2)
    # Every split's gold loaded in both workers first (a few requests each, whichever worker takes them).
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(
                pool.map(
                    lambda job: send(request_for(server.base, token, job[0], job[1], b"x\n")),
                    [(b, s) for b, s, _ in SPLITS.values()] * 2,
                )
            )
    for pid in workers:
        reset_peak(pid)
    base = max(status_field(pid, "VmRSS") / 1024 for pid in workers)
    jobs = []
    for i, task in enumerate(["nlvr2", "nlvr-images", "vcr", "nlvr-structured"] * 2):
        benchmark, split, _ = SPLITS[task]
        name = ["empty cells (',\\n')", "'a,b\\n' lines", "right columns, junk cells", "10^6 columns"][i % 4]
        jobs.append((task, benchmark, split, shapes(task, valid[task], size)[name]))
    latencies, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            start = time.perf_counter()
            with urllib.request.urlopen(f"{server.base}/healthz", timeout=60) as response:
                response.read()
            latencies.append(time.perf_counter() - start)
            time.sleep(0.05)

    poller = threading.Thread(target=poll)
    poller.start()
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda job: send(request_for(server.base, token, job[1], job[2], job[3]))[0], jobs))
    elapsed = time.perf_counter() - start
    stop.set()
    poller.join()
    alive = server.worker_pids()
    peaks = [status_field(pid, "VmHWM") / 1024 for pid in workers & alive]
    return {
        "statuses": statuses,
        "elapsed": elapsed,
        "healthz_worst": max(latencies),
        "healthz_n": len(latencies),
        "died": len(workers - alive),
        "peak": max(peaks) if peaks else float("nan"),
        "base": base,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50, help="size of each hostile file (default 50)")
    args = parser.parse_args()
    size = int(args.mb * MB)
    folder = Path(tempfile.mkdtemp(prefix="holdout-hostile-"))
    try:
        deployment, valid = setup(folder)
        token = deployment.tokens["team-0"]
        env = deployment.env | {"MAX_UPLOAD_MB": str(int(args.mb) + 1)}
        print(
            f"{datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, Python {platform.python_version()}; "
            f"hostile files of {args.mb:g} MB\n"
        )
        print(
            "| task | shape | status | answered in | worker peak RSS (VmHWM) | above its RSS before | first problem |"
        )
        print("|---|---|---|---|---|---|---|")
        server = Gunicorn(env, folder / "gunicorn-1.log", workers=1)
        try:
            server.wait_until_up()
            rows = sequential(server, token, valid, size)
        finally:
            server.stop()
        print()
        page = Page("hostile-uploads", "hostile_uploads.py")
        slowest = max(rows, key=lambda r: r[3])
        tasks = len({r[0] for r in rows})
        page.table(
            ("case", "measured", "target", "met"),
            [
                (
                    f"{len(rows)} uploads ({tasks} task types × {len(rows) // max(tasks, 1)} shapes): answers",
                    "all 4xx, each naming a line" if all(400 <= r[2] < 500 for r in rows) else "**not all 4xx**",
                    "4xx",
                    "yes" if all(400 <= r[2] < 500 for r in rows) else "**no**",
                ),
                (
                    "slowest answer",
                    f"{slowest[3]:.2f} s ({slowest[0]}, {slowest[1]})",
                    "3 s",
                    "yes" if slowest[3] < 3 else "**no**",
                ),
                (
                    "worker peak RSS (VmHWM) while refusing",
                    f"{min(r[4] for r in rows):.0f}-{max(r[4] for r in rows):.0f} MB",
                    "300 MB",
                    "yes" if max(r[4] for r in rows) < 300 else "**no**",
                ),
                (
                    "... above the worker's RSS before the upload",
                    f"+{min(r[6] for r in rows):.0f} to +{max(r[6] for r in rows):.0f} MB",
                    "",
                    "",
                ),
            ],
            title=f"One worker taking the {len(rows)} files in a row:",
        )
        server = Gunicorn(env, folder / "gunicorn-2.log", workers=2)
        try:
            server.wait_until_up()
            result = concurrent(server, token, valid, size)
        finally:
            server.stop()
        page.table(
            ("8 hostile uploads at once, 2 sync workers", "measured"),
            [
                ("statuses", sorted(result["statuses"])),
                ("all answered in", f"{result['elapsed']:.2f} s"),
                (
                    f"`/healthz` meanwhile: worst latency ({result['healthz_n']} requests)",
                    f"{result['healthz_worst']:.2f} s",
                ),
                ("workers that died", result["died"]),
                (
                    "largest worker peak RSS (VmHWM)",
                    f"{result['peak']:.0f} MB (largest RSS before: {result['base']:.0f} MB)",
                ),
            ],
        )
        page.write()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
