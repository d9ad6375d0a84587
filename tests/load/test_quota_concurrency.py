"""Quotas hold under concurrency: 40 simultaneous uploads from 5 teams to gunicorn with 4 worker processes,
on SQLite (BEGIN IMMEDIATE) and on PostgreSQL (SELECT ... FOR UPDATE on the team row).

Each team may make 3 scored submissions a day; exactly 3 per team must be accepted, the rest answered 429,
and the database must hold exactly 3 scored submissions per team.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from flask_migrate import upgrade

from app import create_app, synthetic
from app.db import db
from app.models import Submission, Team
from app.services import accounts, catalog, teams

REPO = Path(__file__).resolve().parents[2]
TEAMS = 5
PER_TEAM = 8
PER_DAY = 3
TIMEOUT = 60  # seconds, for any one request


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _prepare(env: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """Migrate a fresh database, add an NLVR2 split with a daily quota, and 5 one-user teams with tokens."""
    app = create_app({
        "SECRET_KEY": env["SECRET_KEY"],
        "SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"],
        "HIDDEN_LABELS_DIR": env["HIDDEN_LABELS_DIR"],
        "SUBMISSIONS_DIR": env["SUBMISSIONS_DIR"],
    })
    gold = synthetic.nlvr2_gold(1000, split="test-p", seed=5)
    tokens: dict[str, str] = {}
    with app.app_context():
        upgrade()
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-p", gold, name="Test-P")
        catalog.set_policy("nlvr2", "test-p", per_day=PER_DAY)
        for i in range(TEAMS):
            user = accounts.create_user(f"user{i}@example.org", f"password-{i}-long")
            teams.create_team(f"team-{i}", user)
            tokens[f"team-{i}"] = accounts.create_token(user, "load")[1]
        db.engine.dispose()
    return gold, tokens


def _multipart(fields: dict[str, str], file_data: bytes) -> tuple[bytes, str]:
    boundary = "holdout-" + secrets.token_hex(12)
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="predictions.csv"\r\n'
        "Content-Type: text/csv\r\n\r\n".encode() + file_data + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _post(url: str, token: str, body: bytes, content_type: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        payload = exc.read()
        try:
            return exc.code, json.loads(payload)
        except ValueError:
            return exc.code, {"raw": payload[:500].decode("utf-8", "replace")}


def _wait_until_up(base: str, server: subprocess.Popen, log: Path, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"gunicorn exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"gunicorn did not answer /healthz within {limit} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def server(tmp_path, database_backend):
    """gunicorn with 4 sync workers on a fresh migrated database; yields (base URL, gold, tokens, database
    URL, log)."""
    database = database_backend.new_database(tmp_path, name="load")
    env = {
        **os.environ,
        "SECRET_KEY": secrets.token_hex(32),
        "DATABASE_URL": database,
        "HIDDEN_LABELS_DIR": str(tmp_path / "hidden_labels"),
        "SUBMISSIONS_DIR": str(tmp_path / "submissions"),
    }
    env.pop("HOLDOUT_DEMO", None)
    env.pop("MAX_UPLOAD_MB", None)
    gold, tokens = _prepare(env)

    port = _free_port()
    log = tmp_path / "gunicorn.log"
    gunicorn = Path(sys.executable).parent / "gunicorn"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(gunicorn), "--bind", f"127.0.0.1:{port}", "--workers", "4", "--worker-class", "sync",
             "--timeout", "60", "--graceful-timeout", "5", "wsgi:app"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base, process, log)
        yield base, gold, tokens, database, log
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        database_backend.drop(database)


@pytest.mark.slow
def test_daily_quota_holds_under_parallel_uploads(server):
    base, gold, tokens, database, log = server
    jobs = []
    for i, (team, token) in enumerate(tokens.items()):
        for k in range(PER_TEAM):
            # A different file for every request, as real retries would be.
            data = synthetic.predictions("nlvr2", gold, 0.7, seed=100 * i + k)
            body, content_type = _multipart(
                {"benchmark": "nlvr2", "split": "test-p", "model_name": f"{team}-model-{k}"}, data
            )
            jobs.append((team, token, body, content_type))

    start = threading.Barrier(len(jobs), timeout=TIMEOUT)

    def send(job):
        team, token, body, content_type = job
        start.wait()  # release every request at once
        return team, *_post(f"{base}/api/v1/submissions", token, body, content_type)

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(send, jobs, timeout=4 * TIMEOUT))

    statuses: dict[str, Counter] = defaultdict(Counter)
    for team, status, body in results:
        statuses[team][status] += 1
        assert status < 500, (status, body, log.read_text()[-3000:])
        if status == 429:
            assert "retry_at" in body and body["retry_at"], body
    for team in tokens:
        assert statuses[team] == Counter({201: PER_DAY, 429: PER_TEAM - PER_DAY}), (team, dict(statuses[team]))

    app = create_app({"SECRET_KEY": "x", "SQLALCHEMY_DATABASE_URI": database})
    with app.app_context():
        rows = db.session.execute(
            db.select(Team.name, Submission.status, db.func.count(Submission.id))
            .join(Submission, Submission.team_id == Team.id)
            .group_by(Team.name, Submission.status)
        ).all()
        db.engine.dispose()
    assert sorted(rows) == sorted((team, "scored", PER_DAY) for team in tokens)
