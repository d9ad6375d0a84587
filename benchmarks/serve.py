"""Serving speed against a running gunicorn (started here with gunicorn.conf.py on a free loopback port).

Measures, on a deployment holding --stored scored submissions (bulk-inserted, --published of them on the
public leaderboard):
  - the median wall time of an HTTP upload of a 6,970-line NLVR2 file (validated, scored, stored and
    answered; no quotas), next to the wall time of a standalone Python process that scores such a file
    the way the official NLVR2 metrics.py does (benchmarks/official_style_scorer.py, interpreter start-up
    included), the two alternated so that both see the same machine load;
  - requests per second of the leaderboard page and of /healthz (--clients concurrent clients), measured
    in alternating rounds (medians), so that both see the same machine load;
  - the resident memory (VmRSS) of every gunicorn worker afterwards.

Run from the repository root: `.venv/bin/python benchmarks/serve.py` (or `make serve-benchmark`) for a
temporary SQLite database; `--postgres` uses a throwaway PostgreSQL cluster (Debian's postgresql package).
Prints a table and writes it into docs/performance/serve.md; the targets are the issue's.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app import synthetic  # noqa: E402
from benchmarks.doc_tables import Page  # noqa: E402
from tests.load.servers import Deployment, Gunicorn, children_of, rss_kib, send, upload_request  # noqa: E402
from tests.postgres import PostgresCluster, PostgresUnavailable  # noqa: E402

UPLOAD_EXAMPLES = 6970  # NLVR2 Test-U
BOARD_EXAMPLES = 6967  # NLVR2 Test-P


def prepare(deployment: Deployment, stored: int, published: int) -> None:
    """Migrate; NLVR2 with a public Test-P (holding the stored submissions) and a hidden Test-U (taking the
    uploads, no quotas); one team with an API token."""
    from flask_migrate import upgrade
    from sqlalchemy import insert

    from app.db import db
    from app.evaluation import get_task
    from app.models import Score, Submission, Team, utcnow
    from app.services import catalog
    from app.services.catalog import label_files
    from app.services.people import accounts
    from app.services.people import teams as team_service

    app = deployment.app()
    deployment.gold = synthetic.nlvr2_gold(UPLOAD_EXAMPLES, split="test2", seed=1)
    board_gold = synthetic.nlvr2_gold(BOARD_EXAMPLES, split="test1", seed=2)
    with app.app_context():
        upgrade()
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        board = catalog.add_split("nlvr2", "test-p", board_gold, name="Test-P")
        catalog.add_split("nlvr2", "test-u", deployment.gold, name="Test-U", hidden=True)
        for split in ("test-p", "test-u"):
            catalog.set_policy("nlvr2", split, per_day=None, per_month=None, total=None)
        user = accounts.create_user("bench@example.org", "benchmark-password")
        team_service.create_team("Bench lab", user)
        deployment.tokens["bench"] = accounts.create_token(user, "bench")[1]

        # The stored submissions: random predictions of varied accuracy, scored in one vectorised pass.
        task = get_task("nlvr2")
        gold = label_files.load_gold(board)
        subsets = {subset.name: subset.indices for subset in board.subsets}
        others = Team(name="Other labs")
        db.session.add(others)
        db.session.flush()
        rng = np.random.default_rng(0)
        labels = np.asarray(gold.labels, dtype=bool)
        now = utcnow()
        for start in range(0, stored, 1000):
            count = min(1000, stored - start)
            accuracy = rng.uniform(0.5, 0.9, size=(count, 1))
            stacked = np.where(rng.random((count, gold.n)) < accuracy, labels, ~labels)
            results = task.score_batch(gold, stacked, subsets)
            rows = [
                {
                    "split_id": board.id,
                    "team_id": others.id,
                    "status": "scored",
                    "model_name": f"model {start + i}",
                    "description": "A stored submission.",
                    "anonymous": False,
                    "file_sha256": f"{start + i:064x}",
                    "file_size": 100_000,
                    "predictions": task.encode(stacked[i]),
                    "created_at": now,
                    "published_at": now if start + i < published else None,
                }
                for i in range(count)
            ]
            ids = db.session.execute(insert(Submission).returning(Submission.id), rows).scalars().all()
            db.session.execute(
                insert(Score),
                [
                    {"submission_id": submission_id, "subset": subset, "metric": metric, "value": value}
                    for submission_id, result in zip(ids, results, strict=True)
                    for subset, metrics in result.items()
                    for metric, value in metrics.items()
                ],
            )
        board.board_version += 1
        db.session.commit()
        db.engine.dispose()


def time_uploads_and_scorer(
    server: Gunicorn, deployment: Deployment, gold: Path, predictions: Path, count: int
) -> tuple[list[float], list[float]]:
    """Wall times of HTTP uploads (each a different file) and of standalone scorer runs, alternated so both
    see the same machine load. The first of each warms up (the worker's gold cache, the page cache)."""
    files = [synthetic.predictions("nlvr2", deployment.gold, 0.6 + 0.01 * (i % 30), seed=i) for i in range(count + 1)]
    command = [sys.executable, str(REPO / "benchmarks" / "official_style_scorer.py"), str(gold), str(predictions)]
    uploads, scorer = [], []
    for i, data in enumerate(files):
        request = upload_request(server.base, deployment.tokens["bench"], f"upload {i}", data, split="test-u")
        start = time.perf_counter()
        status, body, _ = send(request)
        elapsed = time.perf_counter() - start
        if status != 201:
            sys.exit(f"upload answered {status}: {body}")
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        standalone = time.perf_counter() - start
        if i:
            uploads.append(elapsed)
            scorer.append(standalone)
    return uploads, scorer


def _closed_loop(job: tuple[int, str, float]) -> int:
    """One client process: plain HTTP/1.1 GETs over new connections until `stop_at`; counts 200 answers.
    Raw sockets keep the client's own cost small next to the server's."""
    port, path, stop_at = job
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    done = 0
    while time.time() < stop_at:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(request)
            first = sock.recv(65536)
            while sock.recv(65536):
                pass
        done += first.startswith(b"HTTP/1.1 200")
    return done


def rate(server: Gunicorn, path: str, clients: int, seconds: float) -> float:
    """Completed 200 answers per second with `clients` client processes in a closed loop."""
    for _ in range(3 * clients):  # warm every worker
        urllib.request.urlopen(server.base + path, timeout=30).read()
    start = time.time()
    with multiprocessing.get_context("fork").Pool(clients) as pool:
        done = pool.map(_closed_loop, [(server.port, path, start + seconds)] * clients)
    return sum(done) / (time.time() - start)


def expected_workers() -> int:
    import runpy

    return runpy.run_path(str(REPO / "gunicorn.conf.py"))["workers"]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{len(os.sched_getaffinity(0))} cores, {cpu}, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL cluster instead of SQLite")
    parser.add_argument("--stored", type=int, default=10_000, help="stored submissions (default 10,000)")
    parser.add_argument("--published", type=int, default=100, help="of which on the leaderboard (default 100)")
    parser.add_argument(
        "--uploads",
        type=int,
        default=60,
        help="timed uploads, each followed by a timed standalone scorer run (default 60)",
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients for the rates (default 4)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per rate and round (default 2)")
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternating rounds of the page and /healthz rates; medians (default 5)"
    )
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="holdout-serve-bench-"))
    cluster = None
    try:
        if args.postgres:
            try:
                cluster = PostgresCluster.create()
            except PostgresUnavailable as exc:
                sys.exit(f"--postgres: {exc}")
            database_url = cluster.url(cluster.create_database("bench"))
        else:
            database_url = f"sqlite:///{folder / 'bench.sqlite3'}"
        deployment = Deployment(database_url, folder, secret_key=secrets.token_hex(32))
        print(
            f"preparing: {args.stored:,} stored submissions ({args.published} published) on "
            f"{'PostgreSQL' if cluster else 'SQLite'} ...",
            flush=True,
        )
        prepare(deployment, args.stored, args.published)
        gold_path, predictions_path = folder / "test2.jsonl", folder / "predictions.csv"
        gold_path.write_bytes(deployment.gold)
        predictions_path.write_bytes(synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=99))

        server = Gunicorn(deployment.env, folder / "gunicorn.log", workers=None)  # gunicorn.conf.py's count
        try:
            server.wait_until_up()
            workers = sorted(server.wait_for_workers(expected_workers()))
            uploads, scorer = time_uploads_and_scorer(server, deployment, gold_path, predictions_path, args.uploads)
            # Alternating rounds, so that both rates see the same drift in machine load; medians.
            page_rates, health_rates = [], []
            for _ in range(args.rounds):
                page_rates.append(rate(server, "/leaderboards/nlvr2/test-p", args.clients, args.seconds))
                health_rates.append(rate(server, "/healthz", args.clients, args.seconds))
            page_rate, health_rate = statistics.median(page_rates), statistics.median(health_rates)
            rss = [rss_kib(pid) / 1024 for pid in sorted(children_of(server.process.pid))]
        finally:
            server.stop()
    finally:
        if cluster is not None:
            cluster.remove()
        shutil.rmtree(folder, ignore_errors=True)

    upload, standalone = statistics.median(uploads), statistics.median(scorer)
    ratio = upload / standalone
    print(
        f"\n{datetime.now(UTC):%Y-%m-%d}, {machine()}, {'PostgreSQL' if cluster else 'SQLite'}, "
        f"gunicorn with {len(workers)} sync workers (gunicorn.conf.py), {args.stored:,} stored submissions\n"
    )
    rows = [
        (
            f"HTTP upload of a 6,970-line NLVR2 file (median of {len(uploads)})",
            f"{upload * 1000:.1f} ms",
            f"<= 0.3x scorer ({ratio:.2f}x)",
            ratio <= 0.3,
        ),
        (
            f"standalone official-style scorer process (median of {len(scorer)})",
            f"{standalone * 1000:.1f} ms",
            "",
            None,
        ),
        (
            f"leaderboard page ({args.published} entries), {args.clients} clients, median of {args.rounds}",
            f"{page_rate:.0f} req/s",
            f">= half /healthz ({page_rate / health_rate:.2f}x)",
            page_rate >= health_rate / 2,
        ),
        (f"/healthz, {args.clients} clients, median of {args.rounds}", f"{health_rate:.0f} req/s", "", None),
        (f"worker RSS, max of {len(rss)} workers", f"{max(rss):.0f} MB", "< 200 MB", max(rss) < 200),
    ]
    database = "PostgreSQL" if cluster else "SQLite"
    page = Page("serve", "serve.py", part=database)
    page.table(
        ("measure", "value", "target", "met"),
        [(name, value, target, "" if ok is None else "yes" if ok else "**no**") for name, value, target, ok in rows],
        title=f"{database}, gunicorn with {len(workers)} sync workers (gunicorn.conf.py), {args.stored:,} stored "
        "submissions:",
    )
    page.write()


if __name__ == "__main__":
    main()
