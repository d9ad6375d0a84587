"""`flask backup` / `flask restore`: a consistent archive of database, gold files and uploads, restored
into an empty deployment on SQLite and PostgreSQL (and from SQLite into PostgreSQL)."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
from datetime import UTC
from pathlib import Path

import pytest
from flask_migrate import upgrade
from sqlalchemy import MetaData, create_engine, select, text

from app import create_app
from app.db import db
from app.models import Split, User
from app.schema import head_revision
from app.services.intake import submissions
from app.services.maintenance import backups
from app.services.people import accounts
from tests.conftest import SqliteBackend, make_config
from tests.support.api_world import build_world, post_file, stored_submission

pytestmark = pytest.mark.postgres(
    reason=(
        "backup and restore read and write the database per dialect (services/maintenance/backups.py: sequences, COPY-"
        "free inserts, PostgreSQL branches)"
    )
)


def _populate(app):
    """Public and hidden splits, two teams, scored (published and not) and rejected submissions, and a
    leaderboard that has been looked at (its cache row)."""
    world = build_world(app)
    client = app.test_client()
    stored_submission(app, world, publish=True, model_name="published-a", seed=1, description="first")
    stored_submission(app, world, model_name="unpublished", seed=2)
    stored_submission(app, world, split="test-u", model_name="hidden-entry", seed=3)
    assert post_file(client, world, "member", world.predictions(seed=4), model_name="via-api").status_code == 201
    assert post_file(client, world, "other", b"dev-0-0-0,maybe\n", model_name="broken").status_code == 422
    assert client.get("/leaderboards/nlvr2/dev").status_code == 200
    return world


def _rows(app) -> dict[str, list[tuple]]:
    """Every row of every table, ordered by primary key, times in UTC."""

    def norm(value):
        if hasattr(value, "tzinfo") and hasattr(value, "isoformat"):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        return value

    with app.app_context():
        with db.engine.connect() as connection:
            metadata = MetaData()
            metadata.reflect(bind=connection)
            rows = {
                table.name: [
                    tuple(norm(v) for v in row)
                    for row in connection.execute(select(table).order_by(*table.primary_key.columns))
                ]
                for table in metadata.sorted_tables
                # procrastinate's tables (PostgreSQL only) hold deliveries in flight, not the deployment's data
                if table.name != "alembic_version" and not table.name.startswith("procrastinate_")
            }
        db.engine.dispose()
    return rows


@pytest.fixture
def empty_deployment(database_backend, tmp_path):
    """An app on a new, never-migrated database with empty folders (what restore expects)."""
    folder = tmp_path / "restored"
    folder.mkdir()
    url = database_backend.new_database(folder, name="restored")
    app = create_app(make_config(folder, url))
    yield app
    with app.app_context():
        db.engine.dispose()
    database_backend.drop(url)


def test_round_trip_serves_the_same_leaderboard_and_accepts_new_submissions(app, runner, empty_deployment, tmp_path):
    world = _populate(app)
    archive = tmp_path / "holdout-backup.tar.gz"
    result = runner.invoke(args=["backup", str(archive)])
    assert result.exit_code == 0, result.output
    assert "2 gold files" in result.output
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600  # it holds the hidden labels

    restored = empty_deployment
    result = restored.test_cli_runner().invoke(args=["restore", str(archive)])
    assert result.exit_code == 0, result.output
    assert f"migrated to {head_revision()}" in result.output

    assert _rows(restored) == _rows(app)
    # The same leaderboards, as JSON and as pages; the same users and tokens.
    source, target = app.test_client(), restored.test_client()
    for split in ("dev", "test-u"):
        url = f"/api/v1/leaderboards/nlvr2/{split}"
        assert target.get(url).get_json() == source.get(url).get_json()
    page = target.get("/leaderboards/nlvr2/dev")
    assert page.status_code == 200 and b"published-a" in page.data and b"unpublished" not in page.data
    with restored.app_context():
        assert accounts.authenticate("member@example.org", "not-used-here") is not None
        # Gold files are back, private (0600 in a 0700 folder), and still match their checksums.
        for split in db.session.scalars(select(Split)):
            gold = Path(restored.config["HIDDEN_LABELS_DIR"]) / split.gold_path
            assert stat.S_IMODE(gold.stat().st_mode) == 0o600
            assert stat.S_IMODE(gold.parent.stat().st_mode) == 0o700
            assert backups._sha256_file(gold) == split.gold_sha256
        # The original uploads are back.
        for submission in db.session.scalars(
            select(submissions.Submission).where(submissions.Submission.status == "scored")
        ):
            path = (
                Path(restored.config["SUBMISSIONS_DIR"]) / submission.file_sha256[:2] / f"{submission.file_sha256}.gz"
            )
            assert path.is_file()
        highest = db.session.scalar(text("SELECT MAX(id) FROM submissions"))

    # The restored deployment takes new submissions with the restored token (and new ids).
    response = post_file(target, world, "member", world.predictions(seed=9), model_name="after-restore")
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["id"] > highest


def test_restore_refuses_a_database_that_is_not_empty(app, runner, tmp_path):
    _populate(app)
    archive = tmp_path / "backup.tar.gz"
    assert runner.invoke(args=["backup", str(archive)]).exit_code == 0
    before = _rows(app)
    result = runner.invoke(args=["restore", str(archive)])
    assert result.exit_code == 2 and "not empty" in result.output
    assert _rows(app) == before


@pytest.mark.one_backend
def test_backup_refuses_to_overwrite_a_file(app, runner, tmp_path):
    """On SQLite alone: the target file is refused before the database is read."""
    existing = tmp_path / "backup.tar.gz"
    existing.write_bytes(b"keep me")
    result = runner.invoke(args=["backup", str(existing)])
    assert result.exit_code == 2 and "already exists" in result.output
    assert existing.read_bytes() == b"keep me"


def _rewrite(archive: Path, target: Path, change, extras=()) -> None:
    """Copy an archive member by member; change(name, data) returns new data, or None to drop it; `extras`
    (name, data) are added at the end."""
    with tarfile.open(archive, "r:gz") as source, tarfile.open(target, "w:gz") as out:
        members = [(member.name, source.extractfile(member).read()) for member in source]
        for name, data in members:
            data = change(name, data)
            if data is not None:
                _add(out, name, data)
        for name, data in extras:
            _add(out, name, data)


def _add(out: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    out.addfile(info, io.BytesIO(data))


def _listing_a_file_twice(name: str, data: bytes, listed: dict[str, bytes]) -> bytes:
    """files.jsonl with database/scores.jsonl's line twice, and a manifest that agrees (its sha256 and count):
    a list that names one file twice must not let another go unlisted."""
    if name == "files.jsonl":
        lines = data.splitlines(keepends=True)
        again = next(line for line in lines if b'"database/scores.jsonl"' in line)
        listed[name] = data + again
        return listed[name]
    manifest = json.loads(data)
    manifest["file_list"]["sha256"] = hashlib.sha256(listed["files.jsonl"]).hexdigest()
    manifest["file_list"]["size"] = len(listed["files.jsonl"])
    manifest["file_list"]["count"] += 1
    return json.dumps(manifest).encode()


def test_a_version_1_archive_still_restores(app, runner, empty_deployment, tmp_path):
    """Archives written before the file list became a member of its own (format version 1: every file's
    sha256 and size in the manifest) restore as before."""
    _populate(app)
    archive = tmp_path / "backup.tar.gz"
    assert runner.invoke(args=["backup", str(archive)]).exit_code == 0
    with tarfile.open(archive, "r:gz") as source:
        members = {member.name: source.extractfile(member).read() for member in source}
    listed = [json.loads(line) for line in members.pop("files.jsonl").splitlines()]
    manifest = json.loads(members.pop("manifest.json"))
    del manifest["file_list"]
    manifest["version"] = 1
    manifest["files"] = {entry["name"]: {"sha256": entry["sha256"], "size": entry["size"]} for entry in listed}
    old = tmp_path / "version-1.tar.gz"
    with tarfile.open(old, "w:gz") as out:
        for name, data in members.items():
            _add(out, name, data)
        _add(out, "manifest.json", json.dumps(manifest).encode())
    result = empty_deployment.test_cli_runner().invoke(args=["restore", str(old)])
    assert result.exit_code == 0, result.output
    assert _rows(empty_deployment) == _rows(app)


@pytest.mark.one_backend
def test_restore_refuses_an_unknown_format_version(app, runner, empty_deployment, tmp_path):
    """On SQLite alone: the archive is refused while it is unpacked and checked, before restore touches the database."""
    _populate(app)
    archive = tmp_path / "backup.tar.gz"
    assert runner.invoke(args=["backup", str(archive)]).exit_code == 0
    future = tmp_path / "future.tar.gz"

    def change(name, data):
        if name == "manifest.json":
            return json.dumps({**json.loads(data), "version": 3}).encode()
        return data

    _rewrite(archive, future, change)
    result = empty_deployment.test_cli_runner().invoke(args=["restore", str(future)])
    assert result.exit_code == 2 and "format version 3" in result.output, result.output


@pytest.mark.one_backend
@pytest.mark.parametrize(
    "damage, message",
    [
        ("flip", "does not match its sha256"),
        ("drop", "is missing"),
        ("manifest", "has no manifest.json"),
        ("list", "files.jsonl does not match its sha256"),
        ("extra", "files its manifest does not list: submissions/zz/extra.gz"),
        ("twice", "names database/scores.jsonl twice"),
    ],
)
def test_restore_refuses_a_damaged_archive(app, runner, empty_deployment, tmp_path, damage, message):
    """On SQLite alone: the archive is refused while it is unpacked and checked, before restore touches the database."""
    _populate(app)
    archive = tmp_path / "backup.tar.gz"
    assert runner.invoke(args=["backup", str(archive)]).exit_code == 0
    damaged = tmp_path / "damaged.tar.gz"

    def change(name, data):
        if damage == "flip" and name == "database/scores.jsonl":
            return data.replace(b'"value":', b'"value": ', 1)
        if damage == "drop" and name.startswith("hidden_labels/"):
            return None
        if damage == "manifest" and name == "manifest.json":
            return None
        if damage == "list" and name == "files.jsonl":
            return data.replace(b'"size":', b'"size": ', 1)
        if damage == "extra" and name == "manifest.json":
            extras.append(("submissions/zz/extra.gz", b"not listed"))
        if damage == "twice" and name in ("files.jsonl", "manifest.json"):
            return _listing_a_file_twice(name, data, listed)
        return data

    extras: list[tuple[str, bytes]] = []
    listed: dict[str, bytes] = {}

    _rewrite(archive, damaged, change, extras)
    result = empty_deployment.test_cli_runner().invoke(args=["restore", str(damaged)])
    assert result.exit_code == 2 and message in result.output, result.output
    with empty_deployment.app_context():
        with db.engine.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar() == 1
        assert not any(Path(empty_deployment.config["HIDDEN_LABELS_DIR"]).rglob("*.jsonl"))
        db.engine.dispose()


@pytest.mark.one_backend
def test_restore_refuses_paths_outside_its_folders(empty_deployment, tmp_path):
    """On SQLite alone: the archive is refused while it is unpacked and checked, before restore touches the database."""
    evil = tmp_path / "evil.tar.gz"
    manifest = json.dumps(
        {"format": "holdout-backup", "version": 1, "revision": head_revision(), "tables": {}, "files": {}}
    ).encode()
    with tarfile.open(evil, "w:gz") as out:
        for name, data in (("manifest.json", manifest), ("../escape.txt", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    result = empty_deployment.test_cli_runner().invoke(args=["restore", str(evil)])
    assert result.exit_code == 2 and "unsafe path" in result.output
    assert not (tmp_path / "escape.txt").exists()


def test_backup_reads_one_snapshot_while_others_write(app, runner, tmp_path, monkeypatch):
    """A user created by another connection while the tables are being read is in none of them."""
    _populate(app)
    original = backups._add_table
    calls = []

    def add_table_then_write_elsewhere(archive, manifest, connection, table):
        calls.append(table.name)
        if len(calls) == 1:
            engine = create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
            with engine.begin() as other:
                other.execute(
                    text(
                        "INSERT INTO users (email, password_hash, is_admin, created_at) "
                        "VALUES ('late@example.org', 'x', false, CURRENT_TIMESTAMP)"
                    )
                )
            engine.dispose()
        return original(archive, manifest, connection, table)

    monkeypatch.setattr(backups, "_add_table", add_table_then_write_elsewhere)
    archive = tmp_path / "backup.tar.gz"
    result = runner.invoke(args=["backup", str(archive)])
    assert result.exit_code == 0, result.output
    assert calls[0] != "users" and "users" in calls
    with tarfile.open(archive, "r:gz") as source:
        users = source.extractfile("database/users.jsonl").read()
    assert b"member@example.org" in users and b"late@example.org" not in users
    with app.app_context():
        assert db.session.scalar(select(User.id).where(User.email == "late@example.org")) is not None


def test_a_sqlite_backup_restores_into_postgresql(postgres_cluster, tmp_path):
    """The archive does not depend on the database: it moves a SQLite deployment onto PostgreSQL."""
    source_url = SqliteBackend().new_database(tmp_path, name="source")
    source = create_app(make_config(tmp_path / "source", source_url))
    with source.app_context():
        upgrade()
    _populate(source)
    archive = tmp_path / "backup.tar.gz"
    assert source.test_cli_runner().invoke(args=["backup", str(archive)]).exit_code == 0

    name = postgres_cluster.create_database("from_sqlite")
    target = create_app(make_config(tmp_path / "target", postgres_cluster.url(name)))
    try:
        result = target.test_cli_runner().invoke(args=["restore", str(archive)])
        assert result.exit_code == 0, result.output
        assert _rows(target) == _rows(source)
        url = "/api/v1/leaderboards/nlvr2/dev"
        assert target.test_client().get(url).get_json() == source.test_client().get(url).get_json()
    finally:
        with target.app_context():
            db.engine.dispose()
        with source.app_context():
            db.engine.dispose()
        postgres_cluster.drop_database(name)
