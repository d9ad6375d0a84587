"""Jobs on PostgreSQL with real `flask worker` processes and a gunicorn server (issue 26).

- A publication: the board's page and API answer at once with the last finished snapshot (marked as
  updating), and the worker builds the next, at its first attempt, with the new entry on it (how soon is
  `make bench`'s: benchmarks/job_queue.py; a test asserts no wall-clock time, issue 36).
- A worker killed (SIGKILL) in the middle of a rescoring job: once another worker runs, the job is taken back
  and run again, and every scored submission ends with one score per subset and metric, each equal to a fresh
  scoring against the corrected file; the board shows every entry once.
- /healthz reports the queue, /metrics its gauges and the jobs' timings.

Needs PostgreSQL: skipped where it is missing, failed in CI.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.evaluation import get_task
from app.models import Job, Score, Split, Submission, Team
from app.services import catalog
from app.services.catalog import label_files
from app.services.intake import submissions
from app.services.maintenance import label_audits
from tests.load.servers import REPO, Deployment, Gunicorn, prepare, send, upload_request
from tests.support.processes import LoggedProcess
from tests.support.smtp_sink import SmtpSink

pytestmark = [
    pytest.mark.postgres(reason="procrastinate's workers need PostgreSQL (LISTEN/NOTIFY, its tables and functions)"),
    pytest.mark.one_backend,
]

ENTRIES = 40  # published before the workers start
EXAMPLES = 1000
HEARTBEAT = 0.5  # JOB_HEARTBEAT: a killed worker's job is taken back after six missed beats (3 s)
PATIENCE = 60.0  # seconds the test waits for the new entry before it gives up (the speed is `make bench`'s)


class Worker(LoggedProcess):
    """`flask --app wsgi worker` in a process of its own, its output in a log file."""

    def __init__(self, env: dict[str, str], log: Path):
        super().__init__([str(Path(sys.executable).parent / "flask"), "--app", "wsgi", "worker"], env, log, REPO)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (the job in hand is finished first), then SIGKILL after 5 s: the test is over."""
        super().stop(grace)


@pytest.fixture(scope="module")
def deployment(postgres_cluster, tmp_path_factory):
    folder = tmp_path_factory.mktemp("jobs")
    url = postgres_cluster.url(postgres_cluster.create_database("job_workers"))
    deployment = prepare(Deployment(url, folder), teams=2, per_day=None, examples=EXAMPLES)
    app = deployment.app()
    app.config["JOB_QUEUE"] = "inline"  # the board the workers find: built here, before they start
    with app.app_context():
        split = catalog.get_split("nlvr2", "test-p")
        for index, accuracy in enumerate(np.linspace(0.55, 0.85, ENTRIES)):
            team = db.session.scalar(select(Team).where(Team.name == f"team-{index % 2}"))
            data = synthetic.predictions("nlvr2", deployment.gold, float(accuracy), seed=200 + index, split="test-p")
            submissions.store_scored(split, team, data, model_name=f"seed {index}", description="d", publish=True)
        from app.services.boards import board_snapshots

        board_snapshots.snapshot(catalog.get_split("nlvr2", "test-p"))
        db.engine.dispose()
    sink = SmtpSink().start()
    env = deployment.env | {"JOB_QUEUE": "procrastinate", "JOB_HEARTBEAT": str(HEARTBEAT)}
    env |= {key: str(value) for key, value in sink.config().items()}
    # The worker writes its metrics into the web server's folder, as one on a web host does
    # (docs/deployment/metrics.md); it starts first, so the server's start must leave its files alone.
    env["PROMETHEUS_MULTIPROC_DIR"] = str(folder / "metrics")
    (folder / "metrics").mkdir()
    workers = [Worker(env, folder / "worker-0.log")]
    web = None
    try:
        _wait(
            lambda: (folder / "metrics" / f"histogram_{workers[0].process.pid}.db").exists(),
            60,
            f"the worker wrote no metrics file (its log: {folder / 'worker-0.log'})",
        )
        web = Gunicorn(env, folder / "gunicorn.log", workers=2)
        web.wait_until_up()
        yield deployment, web, workers, env, folder, sink
    finally:
        if web is not None:
            web.stop()
        for worker in workers:
            worker.stop()
        sink.stop()
        postgres_cluster.drop_database(url.rsplit("/", 1)[1])


def _get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, json.loads(response.read())


def _board(web: Gunicorn) -> dict:
    return _get(f"{web.base}/api/v1/leaderboards/nlvr2/test-p")[1]


def _wait(what, limit: float, message: str):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.1)  # poll interval (the deadline bounds the wait)
    pytest.fail(message)


def test_a_publication_is_built_into_the_board_by_a_worker_and_readers_never_wait(deployment):
    dep, web, _, _, folder, _ = deployment
    before = _board(web)
    assert before["updating_since"] is None and len(before["entries"]) == ENTRIES
    data = synthetic.predictions("nlvr2", dep.gold, 0.99, seed=999, split="test-p")
    status, body, _ = send(upload_request(web.base, dep.tokens["team-0"], "the best", data))
    assert status == 201, body
    publish = urllib.request.Request(
        f"{web.base}/api/v1/submissions/{body['id']}/publish",
        data=json.dumps({"description": "A model for the test."}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {dep.tokens['team-0']}", "Content-Type": "application/json"},
    )
    status, published, _ = send(publish)
    assert status == 200, published
    # Right after: the last finished board (or already the new one, if the worker was quicker), never an error.
    status, first = _get(f"{web.base}/api/v1/leaderboards/nlvr2/test-p")
    assert status == 200
    ids = [entry["submission_id"] for entry in first["entries"]]
    assert len(ids) == len(set(ids))
    if body["id"] not in ids:
        assert first["updating_since"] is not None  # the reader is told the board is behind
    with urllib.request.urlopen(f"{web.base}/leaderboards/nlvr2/test-p", timeout=30) as page:
        assert page.status == 200

    def on_board():
        board = _board(web)
        return (
            board
            if board["updating_since"] is None and any(e["submission_id"] == body["id"] for e in board["entries"])
            else None
        )

    board = _wait(
        on_board,
        PATIENCE,
        f"the entry was not on the board after {PATIENCE} s:\n" + (folder / "worker-0.log").read_text()[-3000:],
    )
    assert board["entries"][0]["submission_id"] == body["id"] and len(board["entries"]) == ENTRIES + 1
    with dep.app().app_context():  # built by a worker (not by a reader) at its first attempt
        job = db.session.scalar(select(Job).where(Job.kind == "board").order_by(Job.id.desc()))
        assert (job.state, job.attempts, job.error) == ("done", 1, None) and job.worker, job.result
        db.engine.dispose()
    health = _get(f"{web.base}/healthz")[1]
    assert set(health["queue"]) >= {"waiting", "oldest_s", "failed"} and health["queue"]["failed"] == 0
    with urllib.request.urlopen(f"{web.base}/metrics", timeout=30) as response:
        metrics = response.read().decode()
    assert "holdout_jobs_waiting " in metrics and "holdout_jobs_failed 0.0" in metrics
    # The worker's own counts, through the folder it shares with the web server: the job, and the board it built.
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
    }
    board = (("benchmark", "nlvr2"), ("board", "whole"), ("split", "test-p"))
    assert samples.get(("holdout_job_seconds_count", (("kind", "board"),)), 0) >= 1
    assert samples.get(("holdout_board_build_seconds_count", board), 0) >= 1
    assert samples.get(("holdout_board_build_peak_bytes", board), -1) >= 0


def _expected_scores(app) -> dict[tuple[int, str, str], float]:
    """Every scored submission's scores against the split's gold file as it is now, computed here."""
    with app.app_context():
        split = catalog.get_split("nlvr2", "test-p")
        task = get_task(split.benchmark.task_type)
        gold = label_files.load_gold(split)
        subsets = {subset.name: subset.indices for subset in split.subsets}
        rows = db.session.execute(
            select(Submission.id, Submission.predictions).where(
                Submission.split_id == split.id, Submission.status == "scored"
            )
        ).all()
        results = task.score_batch(gold, task.decode_many([blob for _, blob in rows], gold.n), subsets)
        expected = {
            (submission_id, subset, metric): value
            for (submission_id, _), result in zip(rows, results, strict=True)
            for subset, metrics in result.items()
            for metric, value in metrics.items()
        }
        db.engine.dispose()
    return expected


def test_a_worker_killed_during_rescoring_leaves_every_score_once_and_right(deployment, postgres_cluster):
    dep, web, workers, env, folder, _ = deployment
    app = dep.app()
    app.config["JOB_QUEUE"] = "procrastinate"
    lines = dep.gold.decode().splitlines()
    flipped = [
        json.dumps({**obj, "label": "False" if obj["label"] == "True" else "True"}) if i < 40 else line
        for i, (line, obj) in enumerate((line, json.loads(line)) for line in lines)
    ]
    corrected = ("\n".join(flipped) + "\n").encode()
    # The rescoring job stops where it replaces the scores: this connection holds their table until the
    # worker running it has been killed.
    holder = postgres_cluster.connect(dep.database_url.rsplit("/", 1)[1])
    holder.execute("BEGIN")
    holder.execute("LOCK TABLE scores IN SHARE MODE")
    try:
        with app.app_context():
            label_audits.correct_labels(None, "nlvr2", "test-p", corrected, "40 labels flipped for the test")
            job_id = db.session.scalar(select(Job.id).where(Job.kind == "rescore").order_by(Job.id.desc()))
            db.session.commit()

            def running():
                db.session.rollback()
                job = db.session.get(Job, job_id)
                return job if job is not None and job.state == "running" else None

            _wait(running, 20, "the rescoring job did not start:\n" + (folder / "worker-0.log").read_text()[-3000:])
            time.sleep(2 * HEARTBEAT)
            workers[0].kill()
            db.session.rollback()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    workers.append(Worker(env, folder / "worker-1.log"))
    with app.app_context():

        def done():
            db.session.rollback()
            job = db.session.get(Job, job_id)
            return job if job is not None and job.state == "done" else None

        job = _wait(
            done,
            60,
            "the rescoring job was not taken back and run again:\n" + (folder / "worker-1.log").read_text()[-3000:],
        )
        assert job.attempts == 2 and job.error is None
        split_id = db.session.scalar(select(Split.id).where(Split.slug == "test-p"))
        stored = db.session.execute(
            select(Score.submission_id, Score.subset, Score.metric, Score.value)
            .join(Submission, Submission.id == Score.submission_id)
            .where(Submission.split_id == split_id)
        ).all()
        db.engine.dispose()
    counts = Counter((row[0], row[1], row[2]) for row in stored)
    assert counts and max(counts.values()) == 1  # one score per submission, subset and metric
    expected = _expected_scores(dep.app())
    assert {(r[0], r[1], r[2]): r[3] for r in stored} == pytest.approx(expected)
    expected_all = {key[0]: value for key, value in expected.items() if key[1:] == ("all", "accuracy")}

    def current():
        board = _board(web)
        return board if board["updating_since"] is None else None

    board = _wait(current, 30, "the board did not catch up after the rescoring")
    ids = [entry["submission_id"] for entry in board["entries"]]
    assert len(ids) == len(set(ids)) == ENTRIES + 1
    for entry in board["entries"]:
        assert entry["scores"]["all"]["accuracy"]["value"] == pytest.approx(expected_all[entry["submission_id"]])


def test_mail_asked_on_the_web_is_written_and_sent_by_a_worker(deployment):
    """A password reset asked of the web server (JOB_QUEUE=procrastinate): the request only queues the letter;
    a worker writes it (the link signed then) and sends it to the SMTP server."""
    dep, web, workers, env, folder, sink = deployment
    app = dep.app()
    app.config.update(JOB_QUEUE="procrastinate", **sink.config())
    with app.app_context():
        from app.services.people import accounts, password_resets

        accounts.create_user("worker-mail@example.org", "a long password")
        password_resets.request_reset("worker-mail@example.org")
        db.engine.dispose()
    (letter,) = sink.wait_for("worker-mail@example.org", timeout=20)
    assert "/password/reset/" in letter.get_content()
    with app.app_context():

        def finished():  # the sink has the letter a moment before the worker records it as sent
            db.session.rollback()
            job = db.session.scalar(select(Job).where(Job.kind == "mail").order_by(Job.id.desc()))
            return job if job.state == "done" else None

        job = _wait(finished, 10, "the mail job was not recorded as done")
        assert job.worker and job.result == "reset: sent"
        assert "/password/reset/" not in job.args
        db.engine.dispose()
