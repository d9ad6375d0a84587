"""Boards at VQA size (issue 39): a VQA v2 test-std-size split (447,793 questions) on PostgreSQL, with 100, 1,000
and 3,000 published entries, each board built by the board job in a process of its own pinned to one core.

Run from the repository root: `.venv/bin/python benchmarks/vqa_board.py [--entries 100,1000,3000] [--questions
447793]`. Prints a table and writes it into docs/performance/vqa-board.md.

1. A throwaway PostgreSQL cluster (tests/postgres.py); the split added as a maintainer adds it (catalog.add_split
   of a synthetic official annotations file: ten humans a question, the three answer types as subsets).
2. Entries added in rounds up to each count (bulk insert, as stored by an upload: the predictions, two 64-bit
   answer hashes a question, 7.2 MB an entry; the compact results, a question's points in a byte, compressed;
   the scores). Past `--predictions-up-to` (1,000) an entry is stored without its predictions (null): no board
   reads them (a board reads the results), and 2,000 more entries' 14 GB of them took this machine 40 minutes to
   store; their scores are counted from the points, as an upload's are from its predictions. Each entry answers a
   question with one of its humans' answers (so 0 to 10 of them match) with a probability around its accuracy
   (45-75%), sharing the questions' difficulty, else with an answer no human gave.
3. After each round, a fresh Python process pinned to one core (`taskset -c 0`) runs the board job
   (board_snapshots.build: what `flask worker` runs on a change) and reports its own peak resident size (its
   VmHWM) and CPU time (the process's from os.wait4). The board it stored is then checked: every entry's overall
   score equal to the score stored at upload, ranks 1..N with the rows agreeing (sum of rank_low - 1 = sum of N -
   rank_high).
Targets: the 1,000-entry board under 1.5 GB peak and under 60 s on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.doc_tables import Page  # noqa: E402

TEST_STD = 447_793
BATCH = 20  # entries inserted a transaction (144 MB of predictions)

# What the process of its own runs: the board job, as a worker runs it, and what it says it did.
# The split's gold is loaded first (as a worker has it after its first job): its cost is shown apart.
BUILD = """
import json, re, sys, time
from app import create_app
from app.db import db
from app.models import Split
from app.services.boards import board_snapshots
from app.services.catalog import label_files
from app.services.jobs import queue

def peak_mb():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) / 1024

app = create_app()
with app.app_context():
    started = time.perf_counter()
    label_files.load_gold(db.session.get(Split, int(sys.argv[1])))
    gold_seconds, gold_peak = time.perf_counter() - started, peak_mb()
    open("/proc/self/clear_refs", "w").write("5")  # the high-water mark from here: the build's own
    started, cpu = time.perf_counter(), time.process_time()
    said = board_snapshots.build({"split_id": int(sys.argv[1])}, queue.Deadline(3600))
    print(json.dumps({"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu, "said": said,
                      "gold_seconds": gold_seconds, "gold_peak_mb": gold_peak, "peak_mb": peak_mb()}))
"""


def add_entries(
    app, split_id: int, gold, start: int, stop: int, rng: np.random.Generator, difficulty, full_up_to: int
) -> None:
    """Entries start..stop as an upload stores them; those from `full_up_to` on without their predictions (null), which
    no board reads (it reads the results): the scores are counted from the results instead."""
    from sqlalchemy import insert, select

    from app.db import db
    from app.evaluation import encoding, get_task
    from app.models import Score, Split, Submission, SubmissionResults, Team
    from app.services import catalog
    from app.services.catalog import stored_results

    task = get_task("vqa-v2")
    answers = gold.labels["answers"]  # (n, m) the hashes that count
    n, humans = answers.shape
    with app.app_context():
        split = db.session.get(Split, split_id)
        subsets = catalog.scoring_inputs(split).subsets
        stamp = stored_results.stamp(split)
        team_ids = db.session.scalars(select(Team.id).order_by(Team.id)).all()
        moment = datetime(2024, 1, 1, tzinfo=UTC)
        for first in range(start, stop, BATCH):
            rows, stacked, results = [], [], []
            for i in range(first, min(stop, first + BATCH)):
                accuracy = rng.uniform(0.45, 0.75)
                right = 0.5 * difficulty + 0.5 * rng.random(n) < accuracy
                human = answers[np.arange(n), rng.integers(0, humans, size=n)]
                wrong = rng.integers(1, 2**63, size=n, dtype=np.uint64)
                hashed = np.where(right, human, wrong)
                predictions = np.stack([hashed, hashed], axis=1)
                points = task.results(gold, predictions[None])[0]
                stacked.append(predictions if i < full_up_to else points)
                results.append(encoding.pack_results(points, task.results_dtype, stamp))
                rows.append(
                    {
                        "split_id": split_id,
                        "team_id": team_ids[i % len(team_ids)],
                        "status": "scored",
                        "model_name": f"Model {i}",
                        "description": f"Entry {i}: a synthetic model.",
                        "anonymous": False,
                        "file_sha256": f"{i:064x}",
                        "file_size": 1,
                        "predictions": task.encode(predictions) if i < full_up_to else None,
                        "created_at": moment + timedelta(hours=i),
                        "published_at": moment + timedelta(hours=i, minutes=5),
                    }
                )
            added = insert(Submission).returning(Submission.id, sort_by_parameter_order=True)
            ids = db.session.scalars(added, rows).all()
            db.session.execute(
                insert(SubmissionResults),
                [{"submission_id": i, "data": blob} for i, blob in zip(ids, results, strict=True)],
            )
            full = [x for x in stacked if x.ndim == 2]
            scored = task.score_batch(gold, np.stack(full), subsets) if full else []
            lean = [x for x in stacked if x.ndim == 1]
            if lean:  # the family's own columns, counted from the points (what score_batch counts from predictions)
                columns = task._score_columns(gold, np.stack(lean), subsets)
                scored += [
                    {
                        subset: {metric: float(values[j]) for metric, values in metrics.items()}
                        for subset, metrics in columns.items()
                    }
                    for j in range(len(lean))
                ]
            db.session.execute(
                insert(Score),
                [
                    {"submission_id": submission_id, "subset": subset, "metric": metric, "value": value}
                    for submission_id, result in zip(ids, scored, strict=True)
                    for subset, metrics in result.items()
                    for metric, value in metrics.items()
                ],
            )
            db.session.commit()
            print(f"  {min(stop, first + BATCH):,} entries stored", file=sys.stderr, flush=True)


def build_board(env: dict[str, str], split_id: int) -> dict:
    """The board job in a fresh process on one core: its own report (its peak resident size is its own VmHWM: the
    kernel's maxrss of a child counts the parent's pages it had between fork and exec) and its CPU time."""
    command = ["taskset", "-c", "0", sys.executable, "-c", BUILD, str(split_id)]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = process.stdout.read() if process.stdout else b""
    err = process.stderr.read() if process.stderr else b""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the board job failed: {err.decode()[-3000:]}")
    found = json.loads(out.decode().strip().splitlines()[-1])
    return found | {"wall": wall, "process_cpu": usage.ru_utime + usage.ru_stime}


def check_board(app, split_id: int, entries: int) -> str:
    """The stored board against the stored scores, and its ranks' agreement: what a reader would be shown."""
    from sqlalchemy import select

    from app.db import db
    from app.models import Score, Split
    from app.services.boards import board_snapshots

    with app.app_context():
        split = db.session.get(Split, split_id)
        board = board_snapshots.snapshot(split)
        stored = dict(
            db.session.execute(
                select(Score.submission_id, Score.value).where(Score.subset == "all", Score.metric == "accuracy")
            ).all()
        )
        rows = board.entries
        assert len(rows) == entries, (len(rows), entries)
        assert all(abs(e.scores["all"]["accuracy"] - stored[e.submission_id]) < 1e-9 for e in rows)
        ranks = sorted(e.rank for e in rows)
        assert ranks[0] == 1 and ranks[-1] <= entries
        low = sum(e.rank_low - 1 for e in rows)
        high = sum(entries - e.rank_high for e in rows)
        assert low == high, (low, high)
        distinct = len({(e.rank_low, e.rank_high) for e in rows})
        return f"scores = stored; ranks 1..{max(ranks)}; {distinct} distinct rank intervals; agreement {low} = {high}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", default="100,1000,3000", help="board sizes, ascending, comma-separated")
    parser.add_argument("--questions", type=int, default=TEST_STD)
    parser.add_argument(
        "--predictions-up-to",
        type=int,
        default=1000,
        help="entries stored with their predictions (7.2 MB each on test-std); the later ones without (a board reads "
        "results alone)",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.entries.split(",")]
    from flask_migrate import upgrade
    from sqlalchemy import update

    from app import create_app
    from app.db import db
    from app.evaluation import get_task
    from app.models import Split, Team
    from app.services import catalog
    from app.services.catalog import label_files
    from tests.postgres import PostgresCluster

    cluster = PostgresCluster.create()
    folder = Path(tempfile.mkdtemp(prefix="holdout-vqa-bench-"))
    try:
        url = cluster.url(cluster.create_database("vqa_bench"))
        env = {
            "DATABASE_URL": url,
            "HIDDEN_LABELS_DIR": str(folder / "hidden"),
            "SUBMISSIONS_DIR": str(folder / "uploads"),
            "SECRET_KEY": secrets.token_hex(32),
            "JOB_QUEUE": "procrastinate",
        }
        app = create_app(
            {
                "SQLALCHEMY_DATABASE_URI": url,
                "HIDDEN_LABELS_DIR": env["HIDDEN_LABELS_DIR"],
                "SUBMISSIONS_DIR": env["SUBMISSIONS_DIR"],
                "SECRET_KEY": env["SECRET_KEY"],
                "JOB_QUEUE": "procrastinate",
            }
        )
        task = get_task("vqa-v2")
        print(f"generating a {args.questions:,}-question annotations file ...", file=sys.stderr, flush=True)
        annotations = task.synthetic_gold(args.questions, seed=7)
        with app.app_context():
            upgrade()
            catalog.add_benchmark("vqa", "vqa-v2", "VQA v2", "Synthetic VQA v2 at test-std size.")
            split = catalog.add_split("vqa", "test-std", annotations, name="test-std")
            db.session.add_all([Team(name=f"Team {i}") for i in range(100)])
            db.session.commit()
            split_id = split.id
            gold = label_files.load_gold(split)
        del annotations
        rng = np.random.default_rng(11)
        difficulty = rng.random(gold.n)
        page = Page("vqa-board", "vqa_board.py")
        rows = []
        have = 0
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("JOB_", "DATABASE_", "STORAGE_"))}
        for size in sizes:
            print(f"storing entries up to {size:,} ...", file=sys.stderr, flush=True)
            add_entries(app, split_id, gold, have, size, rng, difficulty, args.predictions_up_to)
            have = size
            with app.app_context():  # a change on the board (a Core update: no job queued from here)
                bumped = update(Split).where(Split.id == split_id).values(board_version=Split.board_version + 1)
                db.session.execute(bumped)
                db.session.commit()
            print(f"building the {size:,}-entry board ...", file=sys.stderr, flush=True)
            found = build_board(base_env | env, split_id)
            checked = check_board(app, split_id, size)
            peak = max(found["peak_mb"], found["gold_peak_mb"])  # the worker's: the gold's load, or the build's
            met = "yes" if peak < 1536 and found["seconds"] < 60 else "no"
            target = "< 1.5 GB, < 60 s" if size == 1000 else ""
            rows.append(
                (
                    f"{size:,}",
                    f"{found['wall']:.1f} s",
                    f"{found['gold_seconds']:.1f} s, {found['gold_peak_mb']:,.0f} MB",
                    f"{found['seconds']:.1f} s ({found['cpu']:.1f} s CPU)",
                    f"{found['process_cpu']:.1f} s",
                    f"{found['peak_mb']:,.0f} MB",
                    f"{peak:,.0f} MB",
                    target,
                    met if target else "",
                    checked,
                )
            )
            print(rows[-1], file=sys.stderr, flush=True)
        page.add(
            f"A {gold.n:,}-question VQA v2 split (ten humans a question, 3 answer-type subsets shown), PostgreSQL; "
            "each board built by the board job in a fresh process pinned to one core:"
        )
        page.table(
            [
                "entries",
                "process wall time",
                "of which the gold loaded (time, peak so far)",
                "the board job",
                "the process's CPU time",
                "the build's peak RSS",
                "the worker's peak RSS",
                "target",
                "met",
                "the stored board, checked",
            ],
            rows,
        )
        page.write()
    finally:
        cluster.remove()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
