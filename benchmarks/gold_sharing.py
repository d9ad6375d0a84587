"""A VQA v2 test-std-size split's gold parsed once and shared by every worker: what adding it costs, what each
gunicorn worker holds of its own after an upload, how long a first upload takes, and what a restart costs.

Run from the repository root: `.venv/bin/python benchmarks/gold_sharing.py [--questions 447793]`. It makes a
synthetic annotations file of that many questions (the family's synthetic_gold: ten human answers a question),
a temporary deployment (SQLite), and measures:

1. `flask splits add` of the file as a hidden split, in a process of its own: its peak resident size (from
   wait4), and its time;
2. gunicorn with 2 workers, each sent a valid results file (447,793 answers) at once: each worker's own memory
   (USS: Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup) before and after, its resident size, the
   time to the answer, and what /metrics says it holds (holdout_gold_cache_bytes, per pid);
3. a second upload each (warm), then a restart (a new gunicorn) and a first upload again: the parsed-gold folder
   is the one the split add wrote (same inode and mtime: nothing parsed again);
4. in this process, pinned to one core: the results file parsed, validated and scored against the mapped gold
   (the best of 3).

Goals (issue 39): the split add under 600 MB; each worker's own memory for the split under 100 MB; a restart
parses nothing; an upload parsed, validated and scored in under 3 s on one core. The tables go into
docs/performance/gold-sharing.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.doc_tables import Page  # noqa: E402
from tests.load.servers import Deployment, Gunicorn, multipart, prepare, send  # noqa: E402

MB = 2**20
TEST_STD = 447_793


def uss_mib(pid: int) -> float:
    """A process's own memory (what it alone would free): private clean and dirty pages, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0])
    return (fields["Private_Clean"] + fields["Private_Dirty"]) / 1024


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(pid)


def flask(env: dict[str, str], *args: str) -> tuple[float, float]:
    """Run `flask --app wsgi ARGS` to its end: (seconds, peak resident MiB of that process alone)."""
    start = time.perf_counter()
    process = subprocess.Popen([str(Path(sys.executable).parent / "flask"), "--app", "wsgi", *args], cwd=REPO, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"flask {' '.join(args)} failed ({process.returncode})")
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def upload(base: str, token: str, data: bytes, name: str) -> urllib.request.Request:
    body, content_type = multipart({"benchmark": "vqa", "split": "test-std", "model_name": name}, data)
    return urllib.request.Request(
        f"{base}/api/v1/submissions",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )


def gold_held(base: str) -> dict[int, tuple[float, float]]:
    """pid -> (private, mapped) MiB of gold, as /metrics shows each worker's holdout_gold_cache_bytes."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as response:
        text = response.read().decode()
    held: dict[int, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "holdout_gold_cache_bytes":
            for sample in family.samples:
                held.setdefault(int(sample.labels["pid"]), {})[sample.labels["memory"]] = sample.value / MB
    return {pid: (values.get("private", 0.0), values.get("mapped", 0.0)) for pid, values in held.items()}


def settled(server: Gunicorn) -> dict[int, float]:
    """Once both workers have loaded the app (their resident sizes stop growing): each one's own memory."""
    server.wait_for_workers(2)
    last: dict[int, float] = {}
    for _ in range(120):
        now = {pid: rss_mib(pid) for pid in server.worker_pids()}
        if len(now) == 2 and last.keys() == now.keys() and all(abs(now[p] - last[p]) < 1 for p in now):
            break
        last = now
        time.sleep(0.5)
    return {pid: uss_mib(pid) for pid in server.worker_pids()}


def both_workers(server: Gunicorn, tokens: list[str], data: bytes, label: str) -> tuple[list[float], int]:
    """Uploads two at a time (a sync worker takes one request at a time) until each worker has taken one, as
    /metrics shows (its gold mapped): the seconds of the first two, and how many were sent."""

    def one(i: int) -> float:
        start = time.perf_counter()
        status, body, _ = send(upload(server.base, tokens[i % 2], data, f"{label}-{i}"), timeout=600)
        if status != 201:
            raise SystemExit(f"upload {label}-{i}: {status} {body}")
        return time.perf_counter() - start

    sent: list[float] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(5):
            sent += pool.map(one, range(len(sent), len(sent) + 2))
            held = gold_held(server.base)
            if all(held.get(pid, (0, 0))[1] > 0 for pid in server.worker_pids()):
                break
    return sent[:2], len(sent)


def workers_table(page: Page, server: Gunicorn, before: dict[int, float], answers, title: str) -> float:
    """Print the workers' memory; the most any grew by."""
    held = gold_held(server.base)
    rows = []
    grown = 0.0
    for pid in sorted(server.worker_pids()):
        private, mapped = held.get(pid, (0.0, 0.0))
        own = uss_mib(pid)
        grown = max(grown, own - before.get(pid, 0))
        rows.append(
            [
                pid,
                f"{before.get(pid, 0):.0f} MB",
                f"{own:.0f} MB",
                f"{own - before.get(pid, 0):+.0f} MB",
                f"{rss_mib(pid):.0f} MB",
                f"{private:.2f} MB",
                f"{mapped:.1f} MB",
            ]
        )
    seconds, count = answers
    title += f" ({count} uploads sent two at a time; the first two answered in " + ", ".join(
        f"{one:.2f} s" for one in seconds
    )
    page.table(
        ["worker", "own memory before", "own memory after", "growth", "resident", "gold: own", "gold: mapped"],
        rows,
        title + ")",
    )
    return grown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=TEST_STD)
    parser.add_argument("--files", type=Path, help=argparse.SUPPRESS)  # only make the two files in this folder
    args = parser.parse_args()
    if args.files:
        make_files(args.files, args.questions)
        return
    folder = Path(tempfile.mkdtemp(prefix="holdout-gold-"))
    page = Page("gold-sharing", "gold_sharing.py")
    try:
        started = time.perf_counter()
        # In a process of its own: making them takes GBs this process would keep, and a child forked from a large
        # process starts with its resident size (wait4's peak of `splits add` would count it).
        subprocess.run(
            [sys.executable, __file__, "--files", str(folder), "--questions", str(args.questions)], check=True
        )
        results = (folder / "results.json").read_bytes()
        print(f"files made in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        deployment = prepare(Deployment(f"sqlite:///{folder / 'gold.sqlite3'}", folder), teams=2, per_day=None)
        env = deployment.env
        flask(env, "benchmarks", "add", "vqa", "--task", "vqa-v2", "--name", "VQA v2")
        seconds, peak = flask(
            env, "splits", "add", "vqa", "test-std", "--labels", str(folder / "annotations.json"), "--hidden"
        )
        with deployment.app().app_context():
            from app.db import db
            from app.services import catalog
            from app.services.catalog import label_files

            catalog.set_policy("vqa", "test-std", per_day=None, per_month=None, total=None)
            split = catalog.get_split("vqa", "test-std")
            parsed = label_files.parsed_folder(split, "vqa-v2")
            db.engine.dispose()
        size = sum(path.stat().st_size for path in parsed.iterdir())
        written = (parsed / "manifest.json").stat()
        gold_mb = (folder / "annotations.json").stat().st_size / MB
        page.table(
            ["measure", "measured", "goal"],
            [
                ["annotations file", f"{args.questions:,} questions, {gold_mb:.0f} MB", ""],
                ["`flask splits add`: peak resident size", f"{peak:.0f} MB", "< 600 MB"],
                ["... time (parse, checks, the parsed-gold folder written)", f"{seconds:.1f} s", ""],
                ["parsed-gold folder (mapped by every process)", f"{size / MB:.1f} MB", ""],
            ],
            "Adding the split:",
        )
        tokens = [deployment.tokens["team-0"], deployment.tokens["team-1"]]
        server = Gunicorn(env, folder / "gunicorn.log", workers=2)
        try:
            server.wait_until_up()
            before = settled(server)
            first = both_workers(server, tokens, results, "first")
            grown = workers_table(page, server, before, first, "Two workers, an upload each (the gold mapped)")
            second = both_workers(server, tokens, results, "second")
            grown = max(grown, workers_table(page, server, before, second, "... and two more uploads"))
        finally:
            server.stop()
        server = Gunicorn(env, folder / "gunicorn-2.log", workers=2)
        try:
            server.wait_until_up()
            before = settled(server)
            again = both_workers(server, tokens, results, "restarted")
            grown = max(grown, workers_table(page, server, before, again, "After a restart, an upload each"))
        finally:
            server.stop()
        kept = (parsed / "manifest.json").stat()
        same = (kept.st_ino, kept.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
        timing = in_process(parsed, results)
        page.table(
            ["measure", "measured", "goal"],
            [
                [
                    "a restart parses the gold file again",
                    "no (the split add's folder, unchanged)" if same else "yes",
                    "no",
                ],
                ["upload parsed, validated and scored on one core (best of 3)", f"{timing:.2f} s", "< 3 s"],
                ["a worker's own memory grown by its uploads (the gold included)", f"+{grown:.0f} MB", "< 100 MB"],
            ],
            "Restart, upload time, a worker's own memory:",
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    page.write()


def make_files(folder: Path, questions: int) -> None:
    from app.evaluation import get_task

    task = get_task("vqa-v2")
    gold = task.synthetic_gold(questions, seed=0)
    (folder / "annotations.json").write_bytes(gold)
    (folder / "results.json").write_bytes(task.synthetic_predictions(gold, 0.6, seed=1))


def in_process(parsed: Path, results: bytes) -> float:
    """Seconds to parse, validate and score the results file against the mapped gold, in this process on one core."""
    from app.evaluation import get_task, mapped_gold

    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    task = get_task("vqa-v2")
    gold = mapped_gold.read(parsed)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        task.score(gold, task.parse(results, gold), task.derive_subsets(gold))
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    main()
