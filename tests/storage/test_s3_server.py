"""Original uploads in a real S3 server (s3rver on loopback, tests/support/s3_server.py) with
STORAGE_URL=s3://bucket/prefix and S3_ENDPOINT_URL: an upload lands in the bucket under its content-hash key and
not in SUBMISSIONS_DIR; with the server down an upload is a quick 503 that stores nothing; a server killed in
the middle of an upload leaves a row with its object or no row, and `flask uploads check` reports (and
`--delete` clears) an object without a row; the check pages through the listing; a backup restores into a
fresh bucket and prefix (or a folder)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app import create_app
from app.db import db
from app.models import Submission
from app.services.storage import checksums, upload_objects, upload_store
from tests.conftest import SqliteBackend, make_config
from tests.storage.conftest import prefix_for, s3_config
from tests.support.api_world import build_world, post_file, stored_submission


@pytest.fixture
def world(s3_app):
    return build_world(s3_app)


@pytest.fixture
def prefix(request) -> str:
    return prefix_for(request)


def _rows(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission).where(Submission.status == "scored"))


def _key(prefix: str, data: bytes) -> str:
    digest = checksums.sha256(data)
    return f"{prefix}/{digest[:2]}/{digest}.gz"


def _check(app, *options: str):
    return app.test_cli_runner().invoke(args=["uploads", "check", "--min-age", "0", *options])


@pytest.mark.postgres(
    reason="the issue's check runs on PostgreSQL: the quota's row lock and the upload's transaction rolled back there"
)
def test_an_upload_lands_in_the_bucket_and_not_in_the_folder(s3_app, world, s3_server, prefix):
    data = world.predictions()
    response = post_file(s3_app.test_client(), world, "member", data)
    assert response.status_code == 201, response.json
    assert s3_server.keys(prefix) == [_key(prefix, data)]
    stored = s3_server.client().get_object(Bucket=s3_server.bucket, Key=_key(prefix, data))["Body"].read()
    assert gzip.decompress(stored) == data
    assert not any(p.is_file() for p in Path(s3_app.config["SUBMISSIONS_DIR"]).rglob("*"))
    with s3_app.app_context():
        assert upload_store.read_original(checksums.sha256(data)) == data
    result = _check(s3_app)
    assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output


@pytest.mark.postgres(
    reason="the issue's check runs on PostgreSQL: the quota's row lock and the upload's transaction rolled back there"
)
def test_with_the_server_stopped_an_upload_is_a_quick_503_and_stores_nothing(s3_app, world, s3_server, prefix):
    client = s3_app.test_client()
    quota_before = client.get("/api/v1/me", headers=world.headers("member")).json
    s3_server.stop()
    started = time.monotonic()
    response = post_file(client, world, "member", world.predictions())
    took = time.monotonic() - started
    assert response.status_code == 503, response.json
    assert response.json["error"].startswith("the server's upload storage is unavailable: the S3 server cannot be")
    assert "your file was not stored and your quota is unchanged" in response.json["error"]
    assert took < 5, took  # no long wait on a server that is not there
    assert _rows(s3_app) == 0
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    s3_server.start()
    assert s3_server.keys(prefix) == []
    # Once it is back, the same upload is taken.
    assert post_file(client, world, "member", world.predictions()).status_code == 201
    assert len(s3_server.keys(prefix)) == 1


@pytest.mark.parametrize("moment", ["inside the write", "between the write and the commit", "after the commit"])
def test_a_server_killed_mid_upload_leaves_a_row_with_its_object_or_no_row(
    s3_app, world, s3_server, prefix, monkeypatch, moment
):
    """SIGKILL at three moments of an upload, the server started again on its data afterwards. Between the write
    and the commit the worker is taken to die too (its discard then cannot reach the server either): the object
    stays without a row, which `uploads check` reports and `--delete` removes."""
    if moment == "inside the write":
        original = upload_objects.UploadBucket.put

        def killed_writing(self, key, body, md5):
            s3_server.kill()
            return original(self, key, body, md5)

        monkeypatch.setattr(upload_objects.UploadBucket, "put", killed_writing)
    elif moment == "between the write and the commit":
        wait = upload_objects.PendingObject.wait

        def written_then_killed(self):
            wait(self)
            s3_server.kill()
            raise RuntimeError("the worker died before its commit")

        monkeypatch.setattr(upload_objects.PendingObject, "wait", written_then_killed)
    else:
        finish = upload_objects.PendingObject.finish

        def committed_then_killed(self):
            s3_server.kill()
            finish(self)

        monkeypatch.setattr(upload_objects.PendingObject, "finish", committed_then_killed)
    data = world.predictions()
    response = post_file(s3_app.test_client(), world, "member", data)
    monkeypatch.undo()
    s3_server.start()
    rows, keys = _rows(s3_app), s3_server.keys(prefix)
    if moment == "inside the write":
        assert response.status_code == 503 and (rows, keys) == (0, [])
    elif moment == "between the write and the commit":
        assert response.status_code == 500 and (rows, keys) == (0, [_key(prefix, data)])
        result = _check(s3_app)
        address = f"s3://{s3_server.bucket}/{_key(prefix, data)}"
        assert result.exit_code == 1 and f"object without a row: {address}" in result.output, result.output
        result = _check(s3_app, "--delete")
        assert result.exit_code == 0 and f"object without a row (removed): {address}" in result.output
        assert s3_server.keys(prefix) == []
    else:
        assert response.status_code == 201 and (rows, keys) == (1, [_key(prefix, data)])
    result = _check(s3_app)
    assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output


def test_uploads_check_finds_an_object_without_a_row_and_a_row_without_an_object(
    s3_app, world, s3_server, prefix, monkeypatch
):
    monkeypatch.setattr(upload_objects, "PAGE_SIZE", 2)  # s3rver's continuation tokens, page after page
    sent = [world.predictions(seed=seed) for seed in range(4)]
    for data in sent:
        assert post_file(s3_app.test_client(), world, "member", data).status_code == 201
    assert _check(s3_app).exit_code == 0
    s3 = s3_server.client()
    stray = b"no row names me\n"
    s3.put_object(Bucket=s3_server.bucket, Key=_key(prefix, stray), Body=gzip.compress(stray))
    s3.delete_object(Bucket=s3_server.bucket, Key=_key(prefix, sent[1]))

    result = _check(s3_app)
    assert result.exit_code == 1
    assert f"object without a row: s3://{s3_server.bucket}/{_key(prefix, stray)}" in result.output
    assert f"stored submission without an object: sha256 {checksums.sha256(sent[1])}" in result.output
    assert _key(prefix, stray) in s3_server.keys(prefix)  # only listed
    result = _check(s3_app, "--delete")
    assert result.exit_code == 1  # the lost original cannot be brought back
    assert _key(prefix, stray) not in s3_server.keys(prefix) and len(s3_server.keys(prefix)) == 3


@pytest.mark.parametrize("target", ["bucket", "folder"])
def test_a_backup_restores_its_objects_into_a_fresh_deployment(s3_app, world, s3_server, prefix, tmp_path, target):
    client = s3_app.test_client()
    sent = [world.predictions(seed=seed) for seed in range(3)]
    for data in sent:
        assert post_file(client, world, "member", data).status_code == 201
    stored_submission(s3_app, world, model_name="imported", seed=9)  # kept through store_scored
    assert post_file(client, world, "member", b"dev-0-0-0,maybe\n").status_code == 422  # rejected: no object
    archive = tmp_path / "backup.tar.gz"
    result = s3_app.test_cli_runner().invoke(args=["backup", str(archive)])
    assert result.exit_code == 0 and "4 uploads" in result.output, result.output

    folder = tmp_path / "restored"
    folder.mkdir()
    database = SqliteBackend().new_database(folder, name="restored")  # never migrated: restore does it
    if target == "bucket":
        s3_server.client().create_bucket(Bucket="holdout-restored")
        config = s3_config(folder, database, s3_server, "fresh/prefix", bucket="holdout-restored")
    else:
        config = make_config(folder, database)
    restored = create_app(config)
    try:
        result = restored.test_cli_runner().invoke(args=["restore", str(archive)])
        assert result.exit_code == 0 and "4 uploads" in result.output, result.output
        with restored.app_context():
            for data in sent:
                assert upload_store.read_original(checksums.sha256(data)) == data
        if target == "bucket":
            keys = s3_server.keys("fresh/prefix/", bucket="holdout-restored")
            assert len(keys) == 4 and {_key("fresh/prefix", data) for data in sent} < set(keys)
        else:
            assert len(list((folder / "submissions").rglob("*.gz"))) == 4
        result = _check(restored)
        assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output
        # The restored deployment takes new uploads into its own store.
        assert post_file(restored.test_client(), world, "member", world.predictions(seed=7)).status_code == 201
    finally:
        with restored.app_context():
            db.engine.dispose()
