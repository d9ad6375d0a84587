"""Serving in production: engine options, gunicorn.conf.py, and startup refusing an outdated schema."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys

import pytest
from flask_migrate import upgrade

from app import create_app
from app.db import db, engine_options
from app.schema import SchemaOutOfDate, head_revision, require_current
from tests.conftest import make_config
from tests.load.servers import REPO, Deployment, Gunicorn

pytestmark = pytest.mark.postgres(
    reason=("engine options and the schema check at startup differ by dialect (config.engine_options, pool settings)")
)


def test_postgres_connections_are_pinged_and_time_out(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://holdout@127.0.0.1:5432/holdout")
    options = create_app({"TESTING": True}).config["SQLALCHEMY_ENGINE_OPTIONS"]
    assert options["pool_pre_ping"] is True and options["connect_args"]["connect_timeout"] > 0
    assert engine_options("sqlite:///x.sqlite3") == {}


@pytest.mark.one_backend
def test_a_postgres_connection_whose_host_vanished_is_dropped_within_seconds():
    """A sent packet left unacknowledged (the host gone, no reset ever coming) ends the connection within 10 s
    instead of TCP's quarter of an hour (tests/deploy cuts the database host off); the URL's own value wins.
    Options computed from a URL, no database: on SQLite alone."""
    assert engine_options("postgresql://holdout@db/holdout")["connect_args"]["tcp_user_timeout"] == 10_000
    given = engine_options("postgresql://holdout@db/holdout?tcp_user_timeout=1500&connect_timeout=2")
    assert given["connect_args"] == {}


def test_gunicorn_conf_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    # Given, so the file does not set it in this process (a later test's /metrics would read that folder).
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    settings = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    cores = len(os.sched_getaffinity(0))
    assert settings["workers"] == min(2 * cores + 1, 12)
    assert settings["preload_app"] is False and settings["accesslog"] == "-"
    assert settings["timeout"] > 0 and 0 < settings["graceful_timeout"] <= settings["timeout"]
    if os.path.isdir("/dev/shm"):
        assert settings["worker_tmp_dir"] == "/dev/shm"
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    assert runpy.run_path(str(REPO / "gunicorn.conf.py"))["workers"] == 3


@pytest.fixture
def unmigrated(database_backend, tmp_path):
    url = database_backend.new_database(tmp_path, name="startup")
    app = create_app(make_config(tmp_path, url))
    yield app, url
    with app.app_context():
        db.engine.dispose()
    database_backend.drop(url)


def test_schema_check_names_the_command_to_run(unmigrated):
    app, _ = unmigrated
    with pytest.raises(SchemaOutOfDate, match=r"empty .*run `flask --app wsgi db upgrade`"):
        require_current(app)
    with app.app_context():
        upgrade(revision="0002")
    with pytest.raises(SchemaOutOfDate, match=rf"at revision 0002 but this code needs revision {head_revision()}"):
        require_current(app)
    with app.app_context():
        upgrade()
    require_current(app)


@pytest.mark.one_backend
@pytest.mark.slow
def test_gunicorn_refuses_an_outdated_schema_and_flask_db_upgrade_still_runs(unmigrated, tmp_path):
    """On SQLite alone: the schema check reads alembic_version through SQLAlchemy alike on both dialects; gunicorn on
    PostgreSQL is run by the load tests (fault tolerance, quotas, the shared throttle)."""
    app, url = unmigrated
    with app.app_context():
        upgrade(revision="0002")
        db.engine.dispose()
    env = Deployment(url, tmp_path).env

    server = Gunicorn(env, tmp_path / "refused.log", workers=2)
    try:
        code = server.process.wait(timeout=90)
    finally:
        server.stop()
    log = server.log.read_text()
    # The master stops: no endless worker restarts. Its exit code is 4 (a worker failed to load), or 1 when
    # both workers fail at the same moment: gunicorn then meets the second failure while halting for the
    # first and exits through the resulting traceback.
    assert code in (1, 4), log
    assert "App failed to load" in log, log
    assert "refusing to serve" in log and "run `flask --app wsgi db upgrade`" in log, log

    def flask(*args):
        return subprocess.run(
            [sys.executable, "-m", "flask", "--app", "wsgi", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    # The command line is never refused: it is how the schema is brought up to date. (A command that reads
    # tables changed since 0002 would fail on the old schema by itself, so ask Alembic where it stands.)
    listed = flask("db", "current")
    assert listed.returncode == 0 and "0002" in listed.stdout, listed.stderr
    migrated = flask("db", "upgrade")
    assert migrated.returncode == 0, migrated.stderr
    server = Gunicorn(env, tmp_path / "served.log", workers=1)
    try:
        server.wait_until_up()
    finally:
        server.stop()


def test_trusted_proxy_headers(tmp_path):
    """Behind nginx (TRUSTED_PROXIES=1) the client's address comes from X-Forwarded-For, not the proxy."""
    seen = {}

    def build(proxies: int):
        app = create_app(make_config(tmp_path, tmp_path / "proxy.sqlite3") | {"TRUSTED_PROXIES": proxies})

        @app.get("/_test/remote")
        def remote():
            from flask import request

            seen[proxies] = (request.remote_addr, request.scheme)
            return ""

        return app

    for proxies in (0, 1):
        build(proxies).test_client().get(
            "/_test/remote",
            environ_base={"REMOTE_ADDR": "10.0.0.2"},
            headers={"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"},
        )
    assert seen == {0: ("10.0.0.2", "http"), 1: ("203.0.113.9", "https")}


def test_nul_characters_are_refused_before_any_query(app, client):
    """PostgreSQL cannot store or even compare text with NUL; the answer is a 4xx naming the field, on both."""
    from tests.support.api_world import build_world, post_file

    world = build_world(app)
    assert client.get("/leaderboards/nlvr2%00").status_code in (404, 422)
    assert client.get("/api/v1/leaderboards/nlvr2/dev%00").status_code in (404, 422)
    response = client.get("/api/v1/leaderboards/nlvr2/dev?sort=a%00b")
    assert response.status_code == 422 and "sort" in response.get_json()["error"]
    response = post_file(client, world, "member", world.predictions(), model_name="model\x00name")
    assert response.status_code == 422 and "model_name" in response.get_json()["error"]
    assert post_file(client, world, "member", world.predictions(), model_name="model name").status_code == 201
