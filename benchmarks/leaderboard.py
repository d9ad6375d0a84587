"""Leaderboard speed: intervals and ranks for 100 / 1,000 / 10,000 entries, and page requests per second.

Run from the repository root: `.venv/bin/python benchmarks/leaderboard.py`. Prints a table and writes it into
docs/performance/leaderboard.md.

1. Cold computation of a board's statistics on synthetic NLVR2 Test-U-size predictions (6,970 examples,
   1,743 sentence groups, packed as stored), as the service computes them (board_snapshots._statistics):
   decode, scores and 95% cluster-bootstrap intervals of every column (1,000 shared resamples) and ranking on
   one thread, while a second works out the significance-aware ranks (one exact McNemar test per pair of
   entries, Holm over all the board's pairs) and simultaneous 95% rank intervals; and the ranks with their
   intervals alone. Wall-clock and CPU time (time.process_time: both threads; the machine may be shared).
   Also the whole service step on a database (read the rows, compute, store the compressed payload).
2. A gunicorn server (2 workers, a free loopback port) on a temporary SQLite database prepared with the
   migrations and 1,000 published entries (bulk insert): requests per second to the leaderboard page once
   its cache is warm, next to /healthz on the same server; a fixed count of requests from a thread pool,
   each sending `Accept-Encoding: gzip` as browsers do.
Targets (issues 4, 11 and 39): under 2 s for 1,000 entries cold, under 4 s for 10,000; the page at no less
than half the /healthz rate.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import synthetic  # noqa: E402
from app.evaluation import get_task, statistics  # noqa: E402
from benchmarks.doc_tables import Page  # noqa: E402

N_EXAMPLES = 6970  # NLVR2 Test-U


def synthetic_blobs(task, gold, count: int, seed: int = 0) -> list[bytes]:
    """Stored predictions of `count` entries with accuracies spread over 55-90%, sentence-correlated."""
    rng = np.random.default_rng(seed)
    accuracy = rng.uniform(0.55, 0.90, size=(count, 1))
    shared = rng.random((count, int(gold.groups.max()) + 1))[:, gold.groups]  # one draw per sentence ...
    own = rng.random((count, gold.n))  # ... or one per example
    draw = np.where(rng.random((count, gold.n)) < 0.3, shared, own)
    correct = draw < accuracy
    return [task.encode(np.where(row, gold.labels, ~gold.labels)) for row in correct]


def board_statistics(task, gold, subsets, blobs: list[bytes]) -> dict[str, object]:
    """What the service computes for a board, without the database (board_snapshots._statistics: the ranks on a
    second thread while the columns are bootstrapped), from the stored predictions: wall-clock and CPU seconds
    (both threads), and the table order it found. Each entry is its own team and model: the board is its only
    view."""
    from app.services.boards import board_snapshots

    count = len(blobs)
    rows = [SimpleNamespace(id=i + 1, anonymous=False, team_id=i + 1, model_name=f"Model {i}") for i in range(count)]
    start_at = datetime(2024, 1, 1, tzinfo=UTC)
    moments = [start_at + timedelta(hours=i) for i in range(count)]
    split = SimpleNamespace(hidden=False, revealed_at=None)  # a public split: paired ranks (visibility.counts_only)
    # Each thread's own CPU time as well: on a machine shared with other work the wall clock stretches, while the
    # busier thread's CPU time is about what the board takes on two free cores.
    ranks_cpu: list[float] = []
    rank = board_snapshots._rank

    def timed_rank(*args):
        began = time.thread_time()
        try:
            return rank(*args)
        finally:
            ranks_cpu.append(time.thread_time() - began)

    board_snapshots._rank = timed_rank
    try:
        start, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
        stacked = task.decode_many(blobs, gold.n)
        wanted = {"all": (None, task.metrics), **{name: (idx, task.subset_metrics) for name, idx in subsets.items()}}
        table, order, _, _ = board_snapshots._statistics(task, gold, stacked, wanted, rows, moments, split)
        wall, cpu, own = time.perf_counter() - start, time.process_time() - cpu, time.thread_time() - own
    finally:
        board_snapshots._rank = rank
    return {
        "wall": wall,
        "cpu": cpu,
        "threads": (own, ranks_cpu[0]),
        "order": order,
        "primary": table[("all", "accuracy")].values[order],
    }


def ranks_alone(task, gold, blobs: list[bytes], order: np.ndarray, primary: np.ndarray) -> tuple[float, float]:
    """The ranks' thread's work alone (board_snapshots._rank), in the table order a whole-board run found:
    correctness packed, the tests' library loaded, significance ranks and rank intervals (statistics.view_ranks:
    one exact McNemar test per pair, Holm over all of them). Wall-clock and CPU seconds."""
    stacked = task.decode_many(blobs, gold.n)
    start, cpu = time.perf_counter(), time.process_time()
    judgements = statistics.PackedJudgements.of_predictions(task, gold, stacked)
    statistics.load_tests()
    statistics.view_ranks(judgements, primary, [None], order=order)
    return time.perf_counter() - start, time.process_time() - cpu


def time_statistics(counts: list[int]) -> list[tuple[str, float, str, float]]:
    """(case, wall-clock seconds, CPU time, target) for each board size: the ranks alone, then the whole
    board as the service computes it (both threads, and each thread's own)."""
    task = get_task("nlvr2")
    gold = task.read_gold(synthetic.nlvr2_gold(N_EXAMPLES, split="test2", seed=3))
    subsets = task.derive_subsets(gold)
    # Two entries first: numpy's and BLAS's one-time set-up is not part of computing a board.
    board_statistics(task, gold, subsets, synthetic_blobs(task, gold, 2))
    rows = []
    nan = float("nan")  # no target: reported
    for count in counts:
        blobs = synthetic_blobs(task, gold, count)
        runs = 3  # the median: a machine shared with other work slows a run now and then
        boards, ranks = [], []
        for _ in range(runs):  # nothing is cached between runs: each is cold; the median is shown
            board = board_statistics(task, gold, subsets, blobs)
            main, ranking = board["threads"]
            boards.append((board["wall"], f"{board['cpu']:.2f} s (threads {main:.2f} s and {ranking:.2f} s)"))
            ranks.append(ranks_alone(task, gold, blobs, board["order"], board["primary"]))
        target = 2.0 if count <= 1000 else 4.0  # issues 4 and 11; issue 39 for 10,000 entries
        what = f"median of {runs}" if runs > 1 else "one run"
        wall, seconds = sorted(ranks)[len(ranks) // 2]
        rows.append((f"ranks + rank intervals alone, {count:,} entries (cold, {what})", wall, f"{seconds:.2f} s", nan))
        wall, said = sorted(boards)[len(boards) // 2]
        rows.append(
            (f"whole board: intervals and ranks on two threads, {count:,} entries (cold, {what})", wall, said, target)
        )
    return rows


# --- a database with published entries -------------------------------------------------------------------


def prepare_database(folder: Path, count: int) -> dict[str, str]:
    """A migrated SQLite database with benchmark nlvr2, hidden split test-u (feedback full) and `count`
    published entries; returns the environment a server needs to use it."""
    from flask_migrate import upgrade
    from sqlalchemy import insert

    from app import create_app
    from app.db import db
    from app.models import Score, Submission, Team
    from app.services import catalog

    env = {
        "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}",
        "HIDDEN_LABELS_DIR": str(folder / "hidden"),
        "SUBMISSIONS_DIR": str(folder / "uploads"),
        "SECRET_KEY": secrets.token_hex(32),
    }
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"],
            "HIDDEN_LABELS_DIR": env["HIDDEN_LABELS_DIR"],
            "SUBMISSIONS_DIR": env["SUBMISSIONS_DIR"],
            "SECRET_KEY": env["SECRET_KEY"],
        }
    )
    gold_bytes = synthetic.nlvr2_gold(N_EXAMPLES, split="test2", seed=3)
    with app.app_context():
        upgrade()
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2", "Synthetic NLVR2 for the benchmark.")
        split = catalog.add_split("nlvr2", "test-u", gold_bytes, hidden=True, name="Test-U")
        task = get_task("nlvr2")
        gold = task.read_gold(gold_bytes)
        blobs = synthetic_blobs(task, gold, count, seed=1)
        scores = task.score_batch(gold, task.decode_many(blobs, gold.n), catalog.scoring_inputs(split).subsets)
        teams = [Team(name=f"Team {i}") for i in range(50)]
        db.session.add_all(teams)
        db.session.flush()
        start = datetime(2024, 1, 1, tzinfo=UTC)
        rows = [
            {
                "id": i + 1,
                "split_id": split.id,
                "team_id": teams[i % 50].id,
                "status": "scored",
                "model_name": f"Model {i}",
                "description": f"Entry {i}: a synthetic model.",
                "anonymous": i % 7 == 0,
                "paper_url": f"https://example.org/paper/{i}" if i % 3 == 0 else None,
                "code_url": None,
                "file_sha256": f"{i:064x}",
                "file_size": 1,
                "predictions": blob,
                "created_at": start + timedelta(hours=7 * i),
                "published_at": start + timedelta(hours=7 * i + 1),
            }
            for i, blob in enumerate(blobs)
        ]
        db.session.execute(insert(Submission), rows)
        db.session.execute(
            insert(Score),
            [
                {"submission_id": i + 1, "subset": subset, "metric": metric, "value": value}
                for i, result in enumerate(scores)
                for subset, metrics in result.items()
                for metric, value in metrics.items()
            ],
        )
        split.board_version += 1
        db.session.commit()
        db.engine.dispose()
    return env


def time_service(env: dict[str, str]) -> tuple[str, float, float]:
    """The whole first-reader step on the prepared database: read rows, compute, store the payload."""
    from app import create_app
    from app.db import db
    from app.services import catalog
    from app.services.boards import board_snapshots

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"],
            "HIDDEN_LABELS_DIR": env["HIDDEN_LABELS_DIR"],
            "SUBMISSIONS_DIR": env["SUBMISSIONS_DIR"],
            "SECRET_KEY": env["SECRET_KEY"],
        }
    )
    with app.app_context():
        split = catalog.get_split("nlvr2", "test-u")
        catalog.gold_for(split)  # gold files are parsed once per process and kept; not part of the board
        start = time.perf_counter()
        count = len(board_snapshots.snapshot(split).entries)
        elapsed = time.perf_counter() - start
        # A change again, so that the server's first page view below computes the board itself.
        split = catalog.get_split("nlvr2", "test-u")
        split.board_version += 1
        db.session.commit()
        db.engine.dispose()
    return f"first view after a change: read {count:,} entries, compute, store", elapsed, 2.0


# --- requests per second ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str) -> int:
    # As a browser asks; the body is read, not unzipped (the client's work is not the server's).
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
        return response.status


def rate(url: str, requests: int, concurrency: int) -> float:
    with ThreadPoolExecutor(concurrency) as pool:
        start = time.perf_counter()
        statuses = list(pool.map(fetch, [url] * requests))
        elapsed = time.perf_counter() - start
    bad = [status for status in statuses if status != 200]
    if bad:
        raise SystemExit(f"{len(bad)} requests to {url} failed")
    return requests / elapsed


def serve_and_measure(env: dict[str, str], requests: int, concurrency: int, rounds: int) -> list[tuple[str, float]]:
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    process = subprocess.Popen(
        # The project's gunicorn.conf.py, but no worker recycling (max_requests) in the middle of a measurement.
        [
            str(gunicorn),
            "-c",
            str(ROOT / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--max-requests",
            "0",
            "wsgi:app",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                fetch(base + "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("gunicorn did not start: " + process.stderr.read().decode()[-2000:])
        page = base + "/leaderboards/nlvr2/test-u"
        start = time.perf_counter()
        fetch(page)  # warm-up: the first reader computes and stores the board
        first = time.perf_counter() - start
        rate(page, 20, 2)  # ... and both workers load it into memory
        # Alternating rounds, best of each: other load on the machine only ever slows a round down.
        health = board = 0.0
        for _ in range(rounds):
            health = max(health, rate(base + "/healthz", requests, concurrency))
            board = max(board, rate(page, requests, concurrency))
        return [
            ("first page view after a change (reads gold, computes, stores)", first),
            ("/healthz", health),
            ("/leaderboards/nlvr2/test-u (1,000 entries, page 1 of 10)", board),
        ]
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1000, help="published entries on the served board")
    parser.add_argument(
        "--statistics",
        type=int,
        nargs="+",
        default=[100, 1000, 10000],
        help="board sizes whose cold statistics are timed",
    )
    parser.add_argument("--requests", type=int, default=2000, help="requests per rate measurement")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent client threads")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each; the best is shown")
    args = parser.parse_args()

    page = Page("leaderboard", "leaderboard.py")
    rows = []
    for name, seconds, cpu, target in time_statistics(args.statistics):
        met = "" if target != target else "yes" if seconds < target else "**no**"  # NaN: reported, no target
        rows.append((name, f"{seconds:.2f} s", cpu, "" if target != target else f"{target:.0f} s", met))
    folder = Path(tempfile.mkdtemp(prefix="holdout-board-"))
    try:
        env = prepare_database(folder, args.entries)
        name, seconds, target = time_service(env)
        rows.append((name, f"{seconds:.2f} s", "", f"{target:.0f} s", "yes" if seconds < target else "**no**"))
        page.table(("case", "measured", "CPU", "target", "met"), rows)
        results = serve_and_measure(env, args.requests, args.concurrency, args.rounds)
        (first_name, first), (health_name, health), (page_name, rate) = results
        ratio = rate / health
        page.table(
            ("endpoint", "measured", "target", "met"),
            [
                (first_name, f"{first:.2f} s", "", ""),
                (health_name, f"{health:,.0f} requests/s", "", ""),
                (page_name, f"{rate:,.0f} requests/s ({ratio:.0%} of `/healthz`)", "≥ 50% of `/healthz`",
                 "yes" if ratio >= 0.5 else "**no**"),
            ],
            title=f"gunicorn, 2 workers; {args.requests:,} requests from {args.concurrency} threads a round, "
            f"best of {args.rounds} alternating rounds, after a warm-up request:",
        )  # fmt: skip
        page.write()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
