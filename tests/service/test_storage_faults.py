"""A full or failing store: an upload the upload folder cannot take is a 507 naming storage, a database
that is full a 503 that says so (no Retry-After: no retry cures it); nothing is stored either way, the
failure is counted in /metrics, and /healthz says why. Kept originals are 0600 in 0700 folders.

The failures here are the system's own errors raised where the write happens (the upload writer, the
database driver); tests/load/test_full_disk.py fills real disks."""

from __future__ import annotations

import errno
import io
import shutil
import sqlite3
import stat
from collections import namedtuple

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event, func, select

from app import create_app
from app.db import db
from app.models import Submission
from app.services.people import teams
from app.services.storage import upload_files
from tests.conftest import make_config
from tests.support.api_world import PASSWORD, build_world, post_file
from tests.support.browser import csrf_token, login

KINDS = {"storage_failures": {"store": "database"}, "database_errors": {"kind": "full"}}


def _counted(name: str, **labels) -> float:
    """This process's count (what /metrics sums over workers; tests/web/test_metrics.py checks the sum)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def world(app):
    return build_world(app)


def _count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission))


def _team_id(app, name: str) -> int:
    with app.app_context():
        return teams.find_team(name).id


def _files(app) -> list:
    root = upload_files.Path(app.config["SUBMISSIONS_DIR"])
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_an_upload_the_disk_refuses_is_a_507_and_stores_nothing(app, client, world, monkeypatch, code):
    def refuse(temp, data):
        raise OSError(code, "refused")

    monkeypatch.setattr(upload_files, "_write", refuse)
    before = _counted("holdout_storage_failures_total", store="uploads")
    quota_before = client.get("/api/v1/me", headers=world.headers("member")).json
    response = post_file(client, world, "member", world.predictions())
    assert response.status_code == 507, response.json
    message = response.json["error"]
    assert "upload storage" in message and ("is full" if code == errno.ENOSPC else "failed") in message
    assert "not stored" in message and "quota is unchanged" in message
    assert _count(app) == 0 and _files(app) == []
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    assert _counted("holdout_storage_failures_total", store="uploads") == before + 1
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json["status"] == "degraded"
    assert any(problem.startswith("uploads: a write was refused") for problem in health.json["problems"])


def test_healthz_is_ok_again_once_the_store_confirms_a_write(app, client, world, monkeypatch):
    """A refused write makes /healthz degraded; the store's next confirmed write shows it is back (a deployment
    whose bucket host returned is ok at its next upload, not minutes later: tests/deploy)."""

    def refuse(temp, data):
        raise OSError(errno.EIO, "refused")

    with monkeypatch.context() as patch:
        patch.setattr(upload_files, "_write", refuse)
        assert post_file(client, world, "member", world.predictions()).status_code == 507
    assert client.get("/healthz").json["status"] == "degraded"
    assert post_file(client, world, "member", world.predictions()).status_code == 201
    health = client.get("/healthz").json
    assert health["status"] == "ok" and "problems" not in health, health


def test_the_upload_page_answers_507_too(app, client, world, monkeypatch):
    def refuse(temp, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(upload_files, "_write", refuse)
    login(client, "member@example.org", PASSWORD)
    token = csrf_token(client, "/submit")
    response = client.post(
        "/submit",
        data={
            "csrf_token": token,
            "split": "nlvr2/dev",
            "team": str(_team_id(app, "Lab")),
            "model_name": "m",
            "file": (io.BytesIO(world.predictions()), "p.csv"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 507
    assert "upload storage is full" in response.get_data(as_text=True)
    assert _count(app) == 0


def test_a_full_database_is_a_503_without_retry_after_and_health_says_so(app, client, world):
    with app.app_context():
        engine = db.engine

    def full_on_insert(cursor, statement, parameters, context):
        # What the driver raises when SQLite cannot grow its file; SQLAlchemy wraps it as it would the real one.
        if statement.lstrip().upper().startswith("INSERT INTO SUBMISSIONS"):
            raise sqlite3.OperationalError("database or disk is full")

    event.listen(engine.dialect, "do_execute", full_on_insert)
    try:
        before = {kind: _counted(f"holdout_{kind}_total", **labels) for kind, labels in KINDS.items()}
        response = post_file(client, world, "member", world.predictions())
    finally:
        event.remove(engine.dialect, "do_execute", full_on_insert)
    assert response.status_code == 503, response.json
    assert "database is full" in response.json["error"] and "Retrying will not help" in response.json["error"]
    assert "Retry-After" not in response.headers
    assert _count(app) == 0 and _files(app) == []  # the original written before the transaction is removed
    for kind, labels in KINDS.items():
        assert _counted(f"holdout_{kind}_total", **labels) == before[kind] + 1, kind
    problems = client.get("/healthz").json["problems"]
    assert any(p.startswith("database: a write was refused") and "full" in p for p in problems)
    # Once space is back, the same upload is taken.
    assert post_file(client, world, "member", world.predictions()).status_code == 201


def test_low_free_space_is_reported_before_anything_fails(app, client, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 5 * 2**20, 5 * 2**20))
    problems = client.get("/healthz").json["problems"]
    assert any(p.startswith("uploads: 5.0 MB free") for p in problems)


def test_kept_originals_are_0600_in_0700_folders(app, client, world):
    assert post_file(client, world, "member", world.predictions()).status_code == 201
    root = upload_files.Path(app.config["SUBMISSIONS_DIR"])
    files = _files(app)
    assert files
    for path in [root, *(p.parent for p in files)]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_an_old_upload_folder_is_made_private_at_start(tmp_path, database_url):
    folder = tmp_path / "submissions" / "ab"
    folder.mkdir(parents=True, mode=0o755)
    folder.parent.chmod(0o755)
    create_app(make_config(tmp_path, database_url))
    assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
