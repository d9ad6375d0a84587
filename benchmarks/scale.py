"""Scale, measured (issue 15): a deployment with a million stored submissions and a 10,000-entry board.

Run from the repository root: `make scale-benchmark` (or `.venv/bin/python benchmarks/scale.py`). Prints a table
and writes it into docs/performance/scale.md.

Builds, on a throwaway PostgreSQL cluster (tests/postgres.py; `--database sqlite` for a SQLite file), a
migrated deployment with one NLVR2-shaped benchmark (synthetic gold files of the real sizes: dev 6,982,
Test-P 6,967, Test-U 6,970 examples, with their balanced and unbalanced subsets) and `--submissions` stored
submissions spread over the three splits (Test-U 40%, the others 30% each) from 5,000 teams, one in a
hundred a rejected file. Rows are bulk-inserted (PostgreSQL: COPY) in the format the upload path writes: the
task's encoder for the predictions, `TaskType.score_batch` for the Score rows, the release the feedback policy
makes (`integrity.full_release` on the hidden split), the hidden split's probe summaries (probe_summaries, as
`integrity.store_probe_summary` writes them), originals kept by `upload_files.keep`. `--entries` of the
Test-U submissions are published (each its own original file; every other submission shares one of these
originals: a real deployment would keep one file per distinct upload). Test-U is a hidden split under the
Ladder, revealed, as a finished challenge's board is: its board has bootstrap intervals.

Then, each step in a fresh process (so the peak resident size, VmHWM, is the step's own):
1. the median of `--uploads` uploads through `submissions.submit` (a new team, quotas off) to Test-P and to
   Test-U, next to the same on a deployment with the same splits and no submissions (goal: at most 1.25x);
2. the first view of the Test-U board after a change: scores, intervals, ranks, rank intervals and the
   teams view computed and stored (`board_snapshots.snapshot`; goal: under 5 s);
3. a gunicorn server (2 workers, the project's gunicorn.conf.py): the cached page's rate next to /healthz
   (alternating rounds, the best of each; goal: at least 0.5x);
4. adding a subset to each split (`catalog.add_subset`, every stored submission rescored; goal: peak RSS
   under 500 MB);
5. `backups.backup` of the deployment and `backups.restore` into an empty one (goal: peak RSS under 500 MB).
Times are wall-clock seconds (CPU seconds beside them: the machine is shared). `--only uploads` stops after
step 1 (the upload medians alone, e.g. to measure the probe check).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics as stats
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import synthetic  # noqa: E402
from app.evaluation import get_task  # noqa: E402
from benchmarks.doc_tables import Page  # noqa: E402

SPLITS = (
    ("dev", "Dev", 6982, False, 0.3),
    ("test-p", "Test-P", 6967, False, 0.3),
    ("test-u", "Test-U", 6970, True, 0.4),
)
TEAMS = 5000
CHUNK = 5000
MB = 1024 * 1024


# --- a deployment ----------------------------------------------------------------------------------------


def make_app(state: dict):
    from app import create_app

    return create_app(
        {
            "SQLALCHEMY_DATABASE_URI": state["url"],
            "HIDDEN_LABELS_DIR": state["labels"],
            "SUBMISSIONS_DIR": state["uploads"],
            "SECRET_KEY": state["secret"],
        }
    )


def new_state(folder: Path, url: str) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "url": url,
        "folder": str(folder),
        "labels": str(folder / "hidden_labels"),
        "uploads": str(folder / "submissions"),
        "secret": secrets.token_hex(32),
    }


def golds() -> dict[str, bytes]:
    return {
        slug: synthetic.nlvr2_gold(size, split=slug, seed=index + 3)
        for index, (slug, _, size, _, _) in enumerate(SPLITS)
    }


def prepare(state: dict) -> None:
    """Migrate; the benchmark, its splits (Test-U hidden under the Ladder, quotas off) and an uploading user."""
    from flask_migrate import upgrade

    from app.db import db
    from app.services import catalog
    from app.services.people import accounts, teams

    with make_app(state).app_context():
        upgrade()
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2", "Synthetic NLVR2 at scale.")
        for slug, name, _, hidden, _ in SPLITS:
            catalog.add_split("nlvr2", slug, golds()[slug], hidden=hidden, name=name)
            catalog.set_policy("nlvr2", slug, per_day=None, per_month=None, total=None)
        user = accounts.create_user("uploader@scale.example", "uploader-password-long")
        state["user_id"] = user.id
        state["team_id"] = teams.create_team("Uploaders", user).id
        db.engine.dispose()


def correct_rows(rng, gold, count: int) -> np.ndarray:
    """Correctness of `count` entries, accuracies spread over 55-90%, errors correlated within sentences (a
    third of the examples, the same ones for a batch, take their sentence's draw). Random bytes, not floats:
    a million submissions are 7 x 10^9 draws."""
    threshold = rng.integers(int(0.55 * 256), int(0.90 * 256), size=(count, 1), dtype=np.uint8)
    own = rng.integers(0, 256, size=(count, gold.n), dtype=np.uint8)
    shared = rng.integers(0, 256, size=(count, int(gold.groups.max()) + 1), dtype=np.uint8)[:, gold.groups]
    together = rng.random(gold.n) < 1 / 3
    own[:, together] = shared[:, together]
    return own < threshold


def prediction_file(gold, predictions: np.ndarray) -> bytes:
    """The CSV a team would upload (identifier,True|False a line)."""
    lines = _lines(gold)
    return "".join(np.where(predictions, lines[0], lines[1]).tolist()).encode()


_line_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _lines(gold) -> tuple[np.ndarray, np.ndarray]:
    if id(gold) not in _line_cache:
        _line_cache[id(gold)] = (
            np.array([f"{i},True\n" for i in gold.ids], dtype=object),
            np.array([f"{i},False\n" for i in gold.ids], dtype=object),
        )
    return _line_cache[id(gold)]


class Writer:
    """Rows into tables: COPY on PostgreSQL, executemany on SQLite."""

    def __init__(self, connection):
        self.connection = connection
        self.postgres = connection.dialect.name == "postgresql"

    def write(self, table, rows: list[dict]) -> None:
        if not rows:
            return
        if not self.postgres:
            self.connection.execute(table.insert(), rows)
            return
        columns = list(rows[0])
        raw = self.connection.connection.driver_connection
        with raw.cursor() as cursor, cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row[c] for c in columns])


def build(state: dict, submissions: int, entries: int, seed: int = 1) -> dict:
    """Bulk-insert `submissions` stored submissions (see the module's docstring); returns counts."""
    from sqlalchemy import text

    from app.db import db
    from app.evaluation import probes
    from app.models import ProbeSummary, Score, Split, Submission, Team
    from app.names import name_key
    from app.services import catalog
    from app.services.blind_test import integrity
    from app.services.storage import checksums, upload_files

    task = get_task("nlvr2")
    rng = np.random.default_rng(seed)
    counts = {"submissions": 0, "scores": 0, "published": 0, "originals": 0}
    app = make_app(state)
    with app.app_context():
        connection = db.session.connection()
        writer = Writer(connection)
        start = datetime(2024, 1, 1, tzinfo=UTC)
        writer.write(
            Team.__table__,
            [
                {"id": 100 + i, "name": f"Team {i:05d}", "name_key": name_key(f"Team {i:05d}"), "created_at": start}
                for i in range(TEAMS)
            ],
        )
        next_id = 1 + (db.session.execute(text("SELECT COALESCE(MAX(id), 0) FROM submissions")).scalar() or 0)
        originals: list[tuple[str, int]] = []
        # The hidden split first: its published entries' originals are the ones every other row shares.
        for slug, _, _, hidden, share in sorted(SPLITS, key=lambda s: not s[3]):
            split = db.session.execute(db.select(Split).where(Split.slug == slug)).scalar_one()
            inputs = catalog.scoring_inputs(split)
            gold = inputs.gold
            total = int(round(submissions * share))
            published = min(entries, total) if hidden else 0
            runs: dict[int, list[bytes]] = {}  # the hidden split's probe records by count of correct units
            for at in range(0, total, CHUNK):
                size = min(CHUNK, total - at)
                correct = correct_rows(rng, gold, size)
                stacked = np.where(correct, gold.labels, ~gold.labels)
                results = task.score_batch(gold, stacked, inputs.subsets)
                blocks, summarised = probes.block_counts(correct), []
                rows, score_rows = [], []
                for i in range(size):
                    number, sid = at + i, next_id
                    next_id += 1
                    moment = start + timedelta(seconds=int(number * 63_072_000 / max(total, 1)))
                    if number < published:  # each published entry has its own original
                        data = prediction_file(gold, stacked[i])
                        digest = checksums.sha256(data)
                        upload_files.keep(data, digest).finish()
                        originals.append((digest, len(data)))
                    digest, file_size = originals[number % len(originals)] if originals else ("0" * 64, 0)
                    row = {
                        "id": sid,
                        "split_id": split.id,
                        "team_id": 100 + int(rng.integers(TEAMS)),
                        "user_id": None,
                        "model_name": f"model {number % 997}",
                        "description": "A synthetic model.",
                        "anonymous": number % 13 == 0,
                        "file_sha256": digest,
                        "file_size": file_size,
                        "created_at": moment,
                        "published_at": moment + timedelta(hours=1) if number < published else None,
                        "status": "scored",
                        "errors": None,
                        "predictions": task.encode(stacked[i]),
                        "released": None,
                        "release_policy": "full" if hidden else None,
                    }
                    if number >= published and number % 100 == 99:  # a rejected file: its problems, no predictions
                        row.update(
                            status="rejected",
                            predictions=None,
                            release_policy=None,
                            errors=json.dumps([{"line": 3, "message": "line 3: unknown identifier 'x'"}]),
                        )
                    else:
                        if hidden:
                            summarised.append((i, sid))
                        scores = results[i]
                        release = integrity.full_release(task, gold, inputs.subsets, scores) if hidden else scores
                        row["released"] = json.dumps(release)
                        score_rows.extend(
                            {"submission_id": sid, "subset": subset, "metric": metric, "value": value}
                            for subset, metrics in scores.items()
                            for metric, value in metrics.items()
                        )
                    rows.append(row)
                writer.write(Submission.__table__, rows)
                writer.write(Score.__table__, score_rows)
                for i, sid in summarised:
                    record = probes.encode_records(np.array([sid]), blocks[i : i + 1], gold.n)
                    runs.setdefault(int(correct[i].sum()), []).append(record)
                counts["submissions"] += len(rows)
                counts["scores"] += len(score_rows)
                print(f"  {slug}: {at + size:,} of {total:,}", file=sys.stderr, end="\r")
            writer.write(
                ProbeSummary.__table__,
                [{"split_id": split.id, "correct": k, "records": b"".join(parts)} for k, parts in sorted(runs.items())],
            )
            counts["published"] += published
            split.board_version += 1
            print(file=sys.stderr)
        counts["originals"] = len(originals)
        if writer.postgres:
            for table in ("teams", "submissions", "scores"):
                connection.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
                )
            db.session.commit()
            connection = db.session.connection()
            connection.execute(text("ANALYZE"))
        db.session.commit()
        from app.services import catalog as _catalog

        _catalog.reveal_split("nlvr2", "test-u")
        if writer.postgres:
            # At rest, as a deployment that grew to this size is: without it autovacuum's first pass over the
            # bulk-loaded tables (minutes of a core) runs under the steps below and takes the board's second core.
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as maintenance:
                maintenance.execute(text("VACUUM (ANALYZE)"))
        db.engine.dispose()
    return counts


# --- steps, each in a process of its own ------------------------------------------------------------------


def peak_mb() -> float:
    """This process's peak resident size: VmHWM, which starts afresh at exec (getrusage's maxrss would carry
    the forking parent's size over)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def step_uploads(state: dict, count: int) -> dict:
    """Median time of `count` uploads through the service (`submissions.submit`) to Test-P and Test-U."""
    from app.db import db
    from app.models import User
    from app.services import catalog
    from app.services.intake import submissions

    found = {}
    with make_app(state).app_context():
        for slug in ("test-p", "test-u"):
            split = catalog.get_split("nlvr2", slug)
            gold = catalog.gold_for(split)
            rng = np.random.default_rng(7)
            files = [
                prediction_file(gold, np.where(row, gold.labels, ~gold.labels))
                for row in correct_rows(rng, gold, count + 1)
            ]
            times = []
            for index, data in enumerate(files):
                user = db.session.get(User, state["user_id"])
                started = time.perf_counter()
                submissions.submit(
                    user, state["team_id"], "nlvr2", slug, submissions.Upload(data=data, model_name=f"upload {index}")
                )
                elapsed = time.perf_counter() - started
                db.session.remove()
                if index:  # the first loads the gold file and warms the process: not an upload's cost
                    times.append(elapsed)
            found[slug] = stats.median(times)
        db.engine.dispose()
    return found


def step_board(state: dict) -> dict:
    """The first view of Test-U after a change: compute and store its snapshot (gold already loaded)."""
    from app.db import db
    from app.services import catalog
    from app.services.boards import board_snapshots

    with make_app(state).app_context():
        split = catalog.get_split("nlvr2", "test-u")
        catalog.gold_for(split)  # parsed once per process and kept; not part of a board's computation
        split.board_version += 1  # a change
        db.session.commit()
        split = catalog.get_split("nlvr2", "test-u")
        wall, cpu = time.perf_counter(), time.process_time()
        snap = board_snapshots.snapshot(split)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        result = {"entries": len(snap.entries), "teams": len(snap.team_entries), "seconds": wall, "cpu": cpu}
        db.engine.dispose()
    return result


def step_rescore(state: dict) -> dict:
    """Add a subset to every split: each adds its subset and rescores every stored submission there."""
    from app.services import catalog

    rescored, wall, cpu = 0, time.perf_counter(), time.process_time()
    with make_app(state).app_context():
        for slug, *_ in SPLITS:
            gold = catalog.gold_for(catalog.get_split("nlvr2", slug))
            ids = "\n".join(str(ident) for ident in gold.ids[::3]).encode()
            rescored += catalog.add_subset("nlvr2", slug, "every third", ids)[1]
    return {"rescored": rescored, "seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu}


def step_backup(state: dict, path: str) -> dict:
    from app.services.maintenance import backups

    wall, cpu = time.perf_counter(), time.process_time()
    with make_app(state).app_context():
        summary = backups.backup(Path(path))
    return {
        "seconds": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "rows": summary.rows,
        "uploads": summary.uploads,
        "bytes": Path(path).stat().st_size,
    }


def step_restore(state: dict, path: str) -> dict:
    from app.services.maintenance import backups

    wall, cpu = time.perf_counter(), time.process_time()
    with make_app(state).app_context():
        summary = backups.restore(Path(path))
    return {
        "seconds": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "rows": summary.rows,
        "uploads": summary.uploads,
    }


STEPS = {
    "uploads": step_uploads,
    "board": step_board,
    "rescore": step_rescore,
    "backup": step_backup,
    "restore": step_restore,
}


def run_step(name: str, state: dict, *args) -> dict:
    """Run a step in a new Python process; its answer and its peak resident size."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--step",
        name,
        json.dumps(state),
        *[json.dumps(a) for a in args],
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"step {name} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the served page -------------------------------------------------------------------------------------


def serve(state: dict, requests: int, rounds: int) -> dict:
    from leaderboard import fetch, rate  # benchmarks/leaderboard.py

    from tests.load.servers import Gunicorn

    env = {
        **os.environ,
        "DATABASE_URL": state["url"],
        "HIDDEN_LABELS_DIR": state["labels"],
        "SUBMISSIONS_DIR": state["uploads"],
        "SECRET_KEY": state["secret"],
    }
    for name in ("HOLDOUT_DEMO", "GUNICORN_CMD_ARGS", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(name, None)
    server = Gunicorn(env, Path(state["folder"]) / "gunicorn.log", workers=2, extra=["--max-requests", "0"])
    try:
        server.wait_until_up(120)
        page = server.base + "/leaderboards/nlvr2/test-u"
        started = time.perf_counter()
        fetch(page)  # the snapshot is stored already: this worker reads it and renders
        first = time.perf_counter() - started
        rate(page, 20, 2)  # both workers have it in memory
        health = board = 0.0
        for _ in range(rounds):
            health = max(health, rate(server.base + "/healthz", requests, 8))
            board = max(board, rate(page, requests, 8))
        return {"first": first, "healthz": health, "board": board}
    finally:
        server.stop()


# --- main ------------------------------------------------------------------------------------------------


def postgres():
    from tests.postgres import PostgresCluster

    return PostgresCluster.create()


def _print_table(database: str, submissions: int, built: float, rows: list[tuple]) -> None:
    """Printed, and written into docs/performance/scale.md."""
    page = Page("scale", "scale.py")
    page.table(
        (f"case ({database}, {submissions:,} submissions; built in {built:.0f} s)", "measured", "goal", "met"),
        [(name, measured, goal, (("yes" if ok[0] else "**no**") if ok else "")) for name, measured, goal, *ok in rows],
    )
    page.write()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=1_000_000, help="stored submissions (default 1,000,000)")
    parser.add_argument("--entries", type=int, default=10_000, help="published entries on the Test-U board")
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--uploads", type=int, default=20, help="uploads timed per split and database")
    parser.add_argument("--requests", type=int, default=2000, help="requests per rate measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rate rounds; the best is shown")
    parser.add_argument("--only", choices=("uploads",), help="run step 1 alone (the upload medians)")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.step:
        result = STEPS[args.step](*[json.loads(a) for a in rest])
        result["peak_mb"] = peak_mb()
        print(json.dumps(result))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    folder = Path(tempfile.mkdtemp(prefix="holdout-scale-"))
    cluster = postgres() if args.database == "postgresql" else None
    try:

        def url(name: str) -> str:
            if cluster is None:
                return f"sqlite:///{folder / name}.sqlite3"
            return cluster.url(cluster.create_database(name))

        full, empty, restored = (new_state(folder / n, url(n)) for n in ("full", "empty", "restored"))
        for state in (full, empty):
            prepare(state)
        started = time.perf_counter()
        counts = build(full, args.submissions, args.entries)
        built = time.perf_counter() - started
        print(
            f"built {counts['submissions']:,} submissions ({counts['scores']:,} scores, {counts['published']:,} "
            f"published, {counts['originals']:,} original files) on {args.database} in {built:.0f} s",
            file=sys.stderr,
        )
        rows = []
        uploads_empty = run_step("uploads", empty, args.uploads)
        uploads_full = run_step("uploads", full, args.uploads)
        for slug, name in (("test-p", "Test-P (public)"), ("test-u", "Test-U (hidden, revealed)")):
            ratio = uploads_full[slug] / uploads_empty[slug]
            rows.append(
                (
                    f"median upload to {name}, {args.uploads} uploads: empty database",
                    f"{uploads_empty[slug] * 1000:.0f} ms",
                    "",
                )
            )
            rows.append(
                (
                    f"... with {counts['submissions']:,} stored submissions",
                    f"{uploads_full[slug] * 1000:.0f} ms ({ratio:.2f}x)",
                    "<= 1.25x",
                    ratio <= 1.25,
                )
            )
        if args.only == "uploads":
            _print_table(args.database, counts["submissions"], built, rows)
            return
        board = run_step("board", full)
        rows.append(
            (
                (f"first view of Test-U after a change ({board['entries']:,} entries, {board['teams']:,} team-best)"),
                f"{board['seconds']:.1f} s (CPU {board['cpu']:.1f} s, peak {board['peak_mb']:.0f} MB)",
                "< 5 s",
                board["seconds"] < 5,
            )
        )
        served = serve(full, args.requests, args.rounds)
        rows.append(("/healthz (gunicorn, 2 workers)", f"{served['healthz']:,.0f} requests/s", ""))
        share = served["board"] / served["healthz"]
        rows.append(
            (
                "/leaderboards/nlvr2/test-u once cached (page 1)",
                f"{served['board']:,.0f} requests/s ({share:.0%})",
                ">= 50%",
                share >= 0.5,
            )
        )
        rescore = run_step("rescore", full)
        rows.append(
            (
                f"add a subset to each split, rescoring {rescore['rescored']:,} submissions",
                f"{rescore['seconds']:.0f} s (CPU {rescore['cpu']:.0f} s), peak {rescore['peak_mb']:.0f} MB",
                "< 500 MB",
                rescore["peak_mb"] < 500,
            )
        )
        archive = str(folder / "backup.tar.gz")
        backup = run_step("backup", full, archive)
        rows.append(
            (
                (
                    f"backup: {backup['rows']:,} rows, {backup['uploads']:,} uploads, "
                    f"{backup['bytes'] / MB:,.0f} MB archive"
                ),
                f"{backup['seconds']:.0f} s (CPU {backup['cpu']:.0f} s), peak {backup['peak_mb']:.0f} MB",
                "< 500 MB",
                backup["peak_mb"] < 500,
            )
        )
        restore = run_step("restore", restored, archive)
        rows.append(
            (
                f"restore into an empty deployment: {restore['rows']:,} rows",
                f"{restore['seconds']:.0f} s (CPU {restore['cpu']:.0f} s), peak {restore['peak_mb']:.0f} MB",
                "< 500 MB",
                restore["peak_mb"] < 500,
            )
        )
        if restore["rows"] != backup["rows"]:
            raise SystemExit(f"restore loaded {restore['rows']} rows, the backup holds {backup['rows']}")
        _print_table(args.database, counts["submissions"], built, rows)
    finally:
        if cluster is not None:
            cluster.remove()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
