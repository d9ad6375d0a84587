"""Fault tolerance of a real gunicorn deployment, on SQLite and PostgreSQL.

- A worker killed with SIGKILL in the middle of an upload leaves the upload either entirely stored (row,
  scores, quota consumed) or not at all, and the client can retry. The kill lands inside the upload's
  transaction (or right after its COMMIT) through the test-only hook in tests/load/pausing_wsgi.py.
- A database that goes away answers 503 with Retry-After (a page for browsers, JSON for the API), never a
  500 with a traceback, and the same server recovers by itself when the database is back.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
import urllib.error
import urllib.request

import psycopg
import pytest
from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.models import Score, Submission
from tests.load.servers import Deployment, Gunicorn, prepare, send, upload_request, uploads_check

pytestmark = pytest.mark.postgres(
    reason=(
        "a worker killed mid-upload must leave the database consistent: transaction and lock behaviour is the dialect's"
    )
)

PER_DAY = 5


@pytest.fixture
def deployment(database_backend, tmp_path):
    url = database_backend.new_database(tmp_path, name="faults")
    yield prepare(Deployment(url, tmp_path), teams=1, per_day=PER_DAY)
    database_backend.drop(url)


def _stored(deployment: Deployment, model_name: str) -> list[tuple[int, str, int]]:
    """(id, status, number of score rows) of every stored submission with this model name."""
    app = deployment.app()
    with app.app_context():
        rows = db.session.execute(
            select(Submission.id, Submission.status, func.count(Score.id))
            .outerjoin(Score, Score.submission_id == Submission.id)
            .where(Submission.model_name == model_name)
            .group_by(Submission.id, Submission.status)
            .order_by(Submission.id)
        ).all()
        db.engine.dispose()
    return [tuple(row) for row in rows]


def _transaction_is_open(deployment: Deployment) -> bool:
    """Whether some connection holds an uncommitted write transaction on the deployment's database."""
    url = deployment.database_url
    if url.startswith("sqlite:///"):
        connection = sqlite3.connect(url[len("sqlite:///") :], timeout=0, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")  # fails at once while another writer holds the lock
            connection.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError as exc:
            return "locked" in str(exc)
        finally:
            connection.close()
    name = url.rsplit("/", 1)[1]
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo, autocommit=True) as connection:
        count = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND state = 'idle in transaction' "
            "AND backend_xid IS NOT NULL",
            (name,),
        ).fetchone()[0]
    return count > 0


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["before-commit", "after-commit"])
def test_worker_killed_mid_upload_leaves_all_or_nothing_and_the_retry_is_accepted(deployment, tmp_path, phase):
    pause_dir = tmp_path / "pauses"
    pause_dir.mkdir()
    env = deployment.env | {"HOLDOUT_TEST_PAUSE_DIR": str(pause_dir)}
    server = Gunicorn(env, tmp_path / "gunicorn.log", workers=2, app="tests.load.pausing_wsgi:app")
    try:
        server.wait_until_up()
        workers = server.wait_for_workers(2)
        token = deployment.tokens["team-0"]
        name = f"pause-{phase}"
        data = synthetic.predictions("nlvr2", deployment.gold, 0.75, seed=11)

        outcome: dict = {}

        def first_attempt():
            try:
                outcome["answer"] = send(upload_request(server.base, token, name, data))
            except OSError as exc:  # the connection dies with the worker
                outcome["error"] = exc

        client = threading.Thread(target=first_attempt)
        client.start()
        marker = pause_dir / f"{name}.paused"
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text()):
            assert time.monotonic() < deadline, f"the upload never reached the pause:\n{server.log_tail()}"
            time.sleep(0.02)  # poll interval (the deadline bounds the wait)
        pid = int(marker.read_text())
        assert pid in workers
        # Before COMMIT the submission and its scores are written but uncommitted; after, nothing is open.
        assert _transaction_is_open(deployment) is (phase == "before-commit")

        os.kill(pid, signal.SIGKILL)
        client.join(timeout=30)
        assert not client.is_alive()
        assert "answer" not in outcome and isinstance(outcome.get("error"), OSError), outcome

        stored = _stored(deployment, name)
        if phase == "before-commit":
            assert stored == []  # rolled back with the dead connection: no row, no scores, no quota used
        else:
            assert len(stored) == 1 and stored[0][1] == "scored" and stored[0][2] > 0  # all of it

        # The master replaces the worker, and the client's retry is accepted once.
        server.wait_for_workers(2, exclude={pid})
        status, body, _ = send(upload_request(server.base, token, name, data))
        assert status == 201, body
        used = 1 if phase == "before-commit" else 2
        assert body["quota"]["used"]["today"] == used and body["quota"]["left"]["today"] == PER_DAY - used
        after = _stored(deployment, name)
        assert len(after) == used and after[-1][0] == body["id"]
        assert {(status, scores) for _, status, scores in after} == {("scored", after[-1][2])}
        # Every stored submission has its file, no file lacks a row. The killed worker's file is left under
        # its temporary name (written before COMMIT, moved into place only after it), which
        # `uploads check --delete` removes (the retry stored the same content).
        found = uploads_check(deployment)
        assert not found.files_without_row and not found.rows_without_file, found
        assert len(found.leftovers) == 1 and not found.restorable, found
        uploads_check(deployment, repair=True)
        assert uploads_check(deployment).clean
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text()


def _get(url: str, accept: str = "text/html") -> tuple[int, str, dict]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


PAGE_REUSE = 2.0  # seconds: LEADERBOARD_PAGE_TTL's default


def _assert_unavailable(server: Gunicorn, token: str, data: bytes) -> None:
    # A page a worker served to a visitor without a session in the last PAGE_REUSE seconds may still come
    # from its memory (never a 5xx); after that the page needs the database. Poll until four requests in a
    # row (so every worker and its stale pooled connection is hit) answer 503, every answer meanwhile a 200
    # or a 503; the deadline bounds the wait.
    deadline = time.monotonic() + PAGE_REUSE + 15
    in_a_row = 0
    while in_a_row < 4:
        assert time.monotonic() < deadline, f"the board was still served {PAGE_REUSE} s into the outage"
        status, page, headers = _get(f"{server.base}/leaderboards/nlvr2/test-p")
        assert status in (200, 503), (status, page[:500])
        if status == 503:
            in_a_row += 1
            assert headers.get("Retry-After", "").isdigit()
            assert "Briefly unavailable" in page and "Traceback" not in page
        else:
            in_a_row = 0
            time.sleep(0.05)  # poll interval
    status, body, headers = send(urllib.request.Request(f"{server.base}/api/v1/benchmarks"))
    assert status == 503 and "unavailable" in body["error"] and headers.get("Retry-After")
    status, body, headers = send(upload_request(server.base, token, "during-outage", data))
    assert status == 503 and headers.get("Retry-After"), body


def _wait_for_recovery(server: Gunicorn, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while True:
        statuses = [_get(f"{server.base}/leaderboards/nlvr2/test-p")[0] for _ in range(4)]
        if statuses == [200] * 4:
            return
        assert time.monotonic() < deadline, f"still {statuses} after the database came back"
        time.sleep(0.1)  # poll interval (the deadline bounds the wait)


@pytest.mark.slow
def test_postgres_outage_answers_503_and_the_server_recovers(own_postgres_cluster, tmp_path):
    cluster = own_postgres_cluster
    url = cluster.url(cluster.create_database("outage"))
    deployment = prepare(Deployment(url, tmp_path), teams=1, per_day=None)
    server = Gunicorn(deployment.env, tmp_path / "gunicorn.log", workers=2)
    token = deployment.tokens["team-0"]
    data = synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=3)
    try:
        server.wait_until_up()
        assert send(upload_request(server.base, token, "before-outage", data))[0] == 201
        assert _get(f"{server.base}/leaderboards/nlvr2/test-p")[0] == 200

        cluster.stop("fast")  # closes every connection the workers hold
        _assert_unavailable(server, token, data)

        cluster.start()  # same port: the workers' pools reconnect by themselves
        _wait_for_recovery(server)
        status, body, _ = send(upload_request(server.base, token, "after-outage", data))
        assert status == 201, body
    finally:
        server.stop()
    assert [row[1] for row in _stored(deployment, "before-outage")] == ["scored"]
    assert _stored(deployment, "during-outage") == []
    log = server.log.read_text()
    assert "database unavailable" in log and "Traceback" not in log


@pytest.mark.slow
def test_sqlite_database_gone_answers_503_and_the_server_recovers(tmp_path):
    folder = tmp_path / "db"
    folder.mkdir()
    deployment = prepare(Deployment(f"sqlite:///{folder / 'holdout.sqlite3'}", tmp_path), teams=1, per_day=None)
    server = Gunicorn(deployment.env, tmp_path / "gunicorn.log", workers=1)
    token = deployment.tokens["team-0"]
    data = synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=3)
    try:
        server.wait_until_up()
        assert _get(f"{server.base}/leaderboards/nlvr2/test-p")[0] == 200
        folder.rename(tmp_path / "db-away")
        # A worker restarted while the database is gone (as when its volume is remounted) still boots,
        # answers 503 and connects once the file is back.
        worker = next(iter(server.wait_for_workers(1)))
        os.kill(worker, signal.SIGKILL)
        server.wait_for_workers(1, exclude={worker})
        _assert_unavailable(server, token, data)
        (tmp_path / "db-away").rename(folder)
        _wait_for_recovery(server)
        assert send(upload_request(server.base, token, "after-outage", data))[0] == 201
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text()
