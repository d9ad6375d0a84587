"""Scoring speed: parse + validate + score typical files, and rescoring 10,000 stored submissions.

Run from the repository root: `.venv/bin/python benchmarks/scoring.py` (or `make benchmarks`).
Prints a table and writes it into docs/performance/scoring.md; the targets are the issue's, measured on the
project's 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import synthetic  # noqa: E402
from app.evaluation import get_task  # noqa: E402
from benchmarks.doc_tables import Page  # noqa: E402


def best_of(fn, repeat: int) -> tuple[float, float]:
    """Median and best wall time in milliseconds (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def scoring_case(task_name: str, gold: bytes, predictions: bytes, subsets_from_gold: bool):
    task = get_task(task_name)
    parsed_gold = task.read_gold(gold)
    subsets = task.derive_subsets(parsed_gold) if subsets_from_gold else {}

    def run():
        task.score(parsed_gold, task.parse(predictions, parsed_gold), subsets)

    return run


def rescoring_case(count: int) -> float:
    """Seconds to add a subset to a split holding `count` scored submissions (parse ids, rescore all, store)."""
    os.environ.setdefault("HOLDOUT_DEMO", "1")
    from flask_migrate import upgrade
    from sqlalchemy import insert

    from app import create_app
    from app.db import db
    from app.models import Submission, Team
    from app.services import catalog

    folder = Path(tempfile.mkdtemp(prefix="holdout-bench-"))
    app = create_app(
        {
            "TESTING": True,
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'bench.sqlite3'}",
            "HIDDEN_LABELS_DIR": str(folder / "hidden"),
            "SUBMISSIONS_DIR": str(folder / "uploads"),
        }
    )
    gold = synthetic.nlvr2_gold(6970, split="test", seed=1)
    with app.app_context():
        upgrade()
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        split = catalog.add_split("nlvr2", "test-u", gold, hidden=True)
        team = Team(name="bench")
        db.session.add(team)
        db.session.commit()
        task = get_task("nlvr2")
        rng = np.random.default_rng(0)
        rows = [
            {
                "split_id": split.id,
                "team_id": team.id,
                "status": "scored",
                "model_name": f"m{i}",
                "description": "",
                "anonymous": False,
                "file_sha256": f"{i:064x}",
                "file_size": 1,
                "predictions": task.encode(rng.random(6970) < 0.5),
            }
            for i in range(count)
        ]
        db.session.execute(insert(Submission), rows)
        db.session.commit()
        ids = "\n".join(
            line.split('"identifier": "')[1].split('"')[0] for line in gold.decode().splitlines()[::3]
        ).encode()
        start = time.perf_counter()
        _, rescored = catalog.add_subset("nlvr2", "test-u", "every-third", ids)
        elapsed = time.perf_counter() - start
        assert rescored == count
        db.engine.dispose()
    return elapsed


_VQA_MEMORY = """
import resource, sys, time, tracemalloc
from app.evaluation import get_task
task = get_task("vqa-v2")
gold = task.read_gold(open(sys.argv[1], "rb").read())
subsets = task.derive_subsets(gold)
data = open(sys.argv[2], "rb").read()
tracemalloc.start()
start = time.perf_counter()
task.score(gold, task.parse(data, gold), subsets)
seconds = time.perf_counter() - start
print(seconds, tracemalloc.get_traced_memory()[1] / 2**20, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def vqa_case(questions: int) -> tuple[float, float, float]:
    """(seconds, peak MB allocated while parsing and scoring, the process's peak MB with the gold) for a VQA v2
    results file of `questions` questions (test-dev + test-std: 214,354), in a fresh process holding the parsed
    gold (one core: BLAS threads off). The time is the fastest of three runs, without tracemalloc's cost."""
    import subprocess

    task = get_task("vqa-v2")
    folder = Path(tempfile.mkdtemp(prefix="holdout-bench-vqa-"))
    gold = task.synthetic_gold(questions, seed=5)
    (folder / "gold.json").write_bytes(gold)
    (folder / "results.json").write_bytes(task.synthetic_predictions(gold, 0.65, seed=6))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    root = Path(__file__).resolve().parent.parent
    runs = []
    for traced in (False, False, True):
        out = subprocess.run(
            [sys.executable, "-c", _VQA_MEMORY if traced else _VQA_MEMORY.replace("tracemalloc.start()", ""),
             str(folder / "gold.json"), str(folder / "results.json")],
            capture_output=True, text=True, check=True, cwd=root, env=env,
        )  # fmt: skip
        runs.append(tuple(float(x) for x in out.stdout.split()))
    return min(r[0] for r in runs[:2]), runs[2][1], runs[2][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--stored", type=int, default=10_000, help="stored submissions to rescore")
    args = parser.parse_args()

    nlvr2_gold = synthetic.nlvr2_gold(6970, split="test", seed=1)
    nlvr_gold = synthetic.nlvr_gold(985, seed=2)  # 985 examples x 6 images = 5,910 lines
    vcr_gold = synthetic.vcr_gold(25_263, seed=3)
    cases = [
        (
            "NLVR2 Test-U size (6,970 lines)",
            "20 ms",
            scoring_case("nlvr2", nlvr2_gold, synthetic.predictions("nlvr2", nlvr2_gold, 0.7), True),
            20.0,
        ),
        (
            "NLVR images (5,910 lines)",
            "20 ms",
            scoring_case("nlvr-images", nlvr_gold, synthetic.predictions("nlvr-images", nlvr_gold, 0.7), False),
            20.0,
        ),
        (
            "VCR size (25,263 rows x 21 columns)",
            "150 ms",
            scoring_case("vcr", vcr_gold, synthetic.predictions("vcr", vcr_gold, 0.5), False),
            150.0,
        ),
    ]
    page = Page("scoring", "scoring.py")
    rows = []
    for name, target_text, fn, target in cases:
        median, best = best_of(fn, args.repeat)
        rows.append(
            (f"parse + validate + score {name}", f"{median:.1f} ms", f"{best:.1f} ms", target_text, median < target)
        )
    seconds, megabytes, process = vqa_case(214_354)
    rows.append(
        (
            "parse + validate + score a VQA v2 results file, 214,354 questions",
            f"{seconds:.2f} s",
            "",
            "2 s",
            seconds < 2,
        )
    )
    rows.append(("its peak memory allocated (tracemalloc)", f"{megabytes:.0f} MB", "", "300 MB", megabytes < 300))
    rows.append(("the process with the parsed gold, peak RSS", f"{process:.0f} MB", "", "", None))
    seconds = rescoring_case(args.stored)
    rows.append(
        (
            f"add a subset and rescore {args.stored:,} stored NLVR2 submissions",
            f"{seconds:.2f} s",
            "",
            "10 s",
            seconds < 10,
        )
    )
    page.table(
        ("case", f"median of {args.repeat}", "best", "target", "met"),
        [(*row[:4], "" if row[4] is None else "yes" if row[4] else "**no**") for row in rows],
    )
    page.write()


if __name__ == "__main__":
    main()
