"""Two gunicorn servers on one PostgreSQL: a dozen teams upload in parallel to both while one worker is
killed with SIGKILL in the middle of an upload.

Every client retries a request once when its connection fails (or, were there one, on a 5xx). Afterwards:
no team has more scored submissions than its daily quota; every acknowledged (201) submission is stored,
scored and the one acknowledged; nothing is stored that was not acknowledged or retried; the only failure
is the killed worker's connection, and no response is a 5xx.

Needs PostgreSQL: skipped where it is missing, failed in CI.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.models import Score, Submission, Team
from tests.load.servers import Deployment, Gunicorn, prepare, send, upload_request, uploads_check

TEAMS = 12
PER_TEAM = 8  # uploads each team attempts, alternating between the two servers
PER_DAY = 4
WORKERS = 3  # per server
COMMIT_DELAY = 0.25  # seconds each upload holds its transaction open (tests/load/pausing_wsgi.py)
BURST_LIMIT = 180  # seconds for the whole burst


@pytest.fixture
def servers(postgres_cluster, tmp_path):
    url = postgres_cluster.url(postgres_cluster.create_database("two_servers"))
    deployment = prepare(Deployment(url, tmp_path), teams=TEAMS, per_day=PER_DAY)
    pause_dir = tmp_path / "pauses"
    pause_dir.mkdir()
    env = deployment.env | {"HOLDOUT_TEST_PAUSE_DIR": str(pause_dir), "HOLDOUT_TEST_COMMIT_DELAY": str(COMMIT_DELAY)}
    pair = [
        Gunicorn(env, tmp_path / f"gunicorn-{name}.log", workers=WORKERS, app="tests.load.pausing_wsgi:app")
        for name in ("a", "b")
    ]
    try:
        for server in pair:
            server.wait_until_up()
            server.wait_for_workers(WORKERS)
        yield deployment, pair, pause_dir
    finally:
        for server in pair:
            server.stop()
        postgres_cluster.drop_database(url.rsplit("/", 1)[1])


def _kill_a_busy_worker(server: Gunicorn, pause_dir, started: threading.Event, done: Counter) -> int | None:
    """Once the burst is under way, SIGKILL a worker of `server` that has just opened an upload's
    transaction (its busy marker is fresh, so it is mid-request, before COMMIT)."""
    started.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if done["responses"] >= 6:
            workers = server.worker_pids()
            for marker in (pause_dir / "busy").glob("*"):
                try:
                    age = time.time() - marker.stat().st_mtime
                except FileNotFoundError:
                    continue
                pid = int(marker.name)
                if pid in workers and age < COMMIT_DELAY / 3:
                    os.kill(pid, signal.SIGKILL)
                    return pid
        time.sleep(0.005)  # poll interval (the deadline bounds the wait)
    return None


@pytest.mark.slow
def test_two_servers_one_database_a_worker_killed_mid_burst(servers):
    deployment, (server_a, server_b), pause_dir = servers
    jobs = []
    for i in range(TEAMS):
        team = f"team-{i}"
        for k in range(PER_TEAM):
            data = synthetic.predictions("nlvr2", deployment.gold, 0.6 + 0.03 * k, seed=100 * i + k)
            jobs.append((team, f"{team}-upload-{k}", server_a if (i + k) % 2 == 0 else server_b, data))

    started = threading.Event()
    done: Counter = Counter()
    lock = threading.Lock()

    def attempt(server, token, name, data):
        try:
            status, body, _ = send(upload_request(server.base, token, name, data))
            return status, body, None
        except OSError as exc:
            return None, None, exc

    def client(job):
        team, name, server, data = job
        token = deployment.tokens[team]
        started.set()
        first = attempt(server, token, name, data)
        retried = first[0] is None or first[0] >= 500
        final = attempt(server, token, name, data) if retried else first
        with lock:
            done["responses"] += 1
        return {"team": team, "name": name, "server": server, "first": first, "final": final, "retried": retried}

    killed: dict = {}
    killer = threading.Thread(target=lambda: killed.update(pid=_kill_a_busy_worker(server_a, pause_dir, started, done)))
    killer.start()
    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(client, jobs, timeout=BURST_LIMIT))
    killer.join(timeout=70)
    logs = {server.base: server.log_tail(6000) for server in (server_a, server_b)}

    # The kill landed mid-request: exactly that connection failed, on server A, and was retried.
    assert killed.get("pid"), f"no worker was killed mid-upload: {done}\n{logs}"
    failed = [r for r in results if r["first"][0] is None]
    assert len(failed) == 1 and failed[0]["server"] is server_a, [(r["name"], r["first"]) for r in failed]
    assert isinstance(failed[0]["first"][2], OSError)
    # No 5xx anywhere, and every request ended 201 or 429 (over quota).
    statuses = Counter(r["final"][0] for r in results)
    assert set(statuses) <= {201, 429} and not any((r["first"][0] or 0) >= 500 for r in results), (statuses, logs)

    acknowledged = {r["name"]: r["final"][1] for r in results if r["final"][0] == 201}
    retried = {r["name"] for r in results if r["retried"]}
    per_team_201 = Counter(r["team"] for r in results if r["final"][0] == 201)
    assert per_team_201 == Counter({f"team-{i}": PER_DAY for i in range(TEAMS)}), per_team_201

    app = deployment.app()
    with app.app_context():
        stored = db.session.execute(
            select(Submission.id, Submission.model_name, Submission.status, Team.name, func.count(Score.id))
            .join(Team, Team.id == Submission.team_id)
            .outerjoin(Score, Score.submission_id == Submission.id)
            .group_by(Submission.id, Submission.model_name, Submission.status, Team.name)
        ).all()
        accuracy = dict(
            db.session.execute(
                select(Submission.model_name, Score.value)
                .join(Score, Score.submission_id == Submission.id)
                .where(Score.subset == "all", Score.metric == "accuracy")
            ).all()
        )
        db.engine.dispose()

    names = Counter(row.model_name for row in stored)
    # No quota overshoot: exactly the daily quota of scored submissions per team, across both servers.
    assert Counter(row.name for row in stored if row.status == "scored") == per_team_201
    assert all(row.status == "scored" and row[4] > 0 for row in stored)
    # Every acknowledged submission is stored (under the id it was acknowledged with) and scored.
    by_id = {row.id: row for row in stored}
    for name, body in acknowledged.items():
        assert body["id"] in by_id and by_id[body["id"]].model_name == name
        assert accuracy[name] == pytest.approx(body["scores"]["all"]["accuracy"])
    # Nothing stored that was neither acknowledged nor retried; the killed attempt left no row (the kill
    # came before its COMMIT), so no upload is stored twice.
    assert set(names) <= set(acknowledged) | retried
    assert max(names.values()) == 1
    # Both servers took part.
    assert {r["server"].base for r in results if r["final"][0] == 201} == {server_a.base, server_b.base}
    for base, log in logs.items():
        assert "Traceback" not in log, (base, log)
    # Every stored submission has its file and every file its row; the killed upload may have left its
    # temporary file, which `uploads check --delete` removes.
    found = uploads_check(deployment)
    assert not found.files_without_row and not found.rows_without_file and not found.restorable, found
    assert len(found.leftovers) <= 1, found
    uploads_check(deployment, repair=True)
    assert uploads_check(deployment).clean
