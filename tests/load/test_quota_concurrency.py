"""Quotas hold under concurrency: 40 simultaneous uploads from 5 teams to gunicorn with 4 worker processes,
on SQLite (BEGIN IMMEDIATE) and on PostgreSQL (SELECT ... FOR UPDATE on the team row).

Each team may make 3 scored submissions a day; exactly 3 per team must be accepted, the rest answered 429,
and the database must hold exactly 3 scored submissions per team.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from app import synthetic
from app.db import db
from app.models import Submission, Team
from tests.load.servers import TIMEOUT, running_server, send, upload_request, uploads_check

pytestmark = pytest.mark.postgres(
    reason=(
        "the quota under concurrent uploads: BEGIN IMMEDIATE on SQLite, SELECT ... FOR UPDATE on the team row"
        " on PostgreSQL (services/intake/quotas.py)"
    )
)

TEAMS = 5
PER_TEAM = 8
PER_DAY = 3


@pytest.fixture
def server(tmp_path, database_backend):
    """gunicorn with 4 sync workers on a fresh migrated database; yields (server, deployment)."""
    with running_server(tmp_path, database_backend, "load", teams=TEAMS, per_day=PER_DAY, workers=4) as served:
        yield served


@pytest.mark.slow
def test_daily_quota_holds_under_parallel_uploads(server):
    server, deployment = server
    jobs = []
    for i, (team, token) in enumerate(deployment.tokens.items()):
        for k in range(PER_TEAM):
            # A different file for every request, as real retries would be.
            data = synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=100 * i + k)
            jobs.append((team, upload_request(server.base, token, f"{team}-model-{k}", data)))

    start = threading.Barrier(len(jobs), timeout=TIMEOUT)

    def post(job):
        team, request = job
        start.wait()  # release every request at once
        status, body, _ = send(request)
        return team, status, body

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(post, jobs, timeout=4 * TIMEOUT))

    statuses: dict[str, Counter] = defaultdict(Counter)
    for team, status, body in results:
        statuses[team][status] += 1
        assert status < 500, (status, body, server.log_tail())
        if status == 429:
            assert "retry_at" in body and body["retry_at"], body
    for team in deployment.tokens:
        assert statuses[team] == Counter({201: PER_DAY, 429: PER_TEAM - PER_DAY}), (team, dict(statuses[team]))

    app = deployment.app()
    with app.app_context():
        rows = db.session.execute(
            db.select(Team.name, Submission.status, db.func.count(Submission.id))
            .join(Submission, Submission.team_id == Team.id)
            .group_by(Team.name, Submission.status)
        ).all()
        db.engine.dispose()
    assert sorted(rows) == sorted((team, "scored", PER_DAY) for team in deployment.tokens)
    # The refused uploads left no file; every stored one has its file.
    found = uploads_check(deployment)
    assert found.clean and not found.in_flight, found
