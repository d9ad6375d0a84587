"""Original uploads in an S3 bucket (services/storage/upload_objects.py), against moto's in-process S3: the same
gzip bytes as the folder under the content-hash key, written before the commit and removed when nothing is
stored (unless another stored submission has the same content); read back; `uploads check` and its repair;
every kind of S3 failure answered 503 (507 for a server that says it is full) with nothing stored and no quota
used; the client's settings."""

from __future__ import annotations

import gzip
import io
import threading
from types import SimpleNamespace

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from prometheus_client import REGISTRY
from sqlalchemy import func, select

from app import create_app
from app.db import db
from app.models import Submission
from app.services.errors import StorageFailed
from app.services.storage import checksums, upload_files, upload_objects, upload_store
from app.settings import S3Location
from tests.conftest import make_config
from tests.storage.conftest import MOTO_BUCKET
from tests.support.api_world import PASSWORD, build_world, post_file
from tests.support.browser import csrf_token, login

PREFIX = "uploads"


@pytest.fixture
def world(moto_app):
    return build_world(moto_app)


@pytest.fixture
def bucket(moto_app):
    with moto_app.app_context():
        yield upload_store.current()


def _keys(app) -> list[str]:
    with app.app_context():
        client = upload_objects.client_for(upload_store.current().location)
        return sorted(item["Key"] for item in client.list_objects_v2(Bucket=MOTO_BUCKET).get("Contents", ()))


def _object(app, key: str) -> bytes:
    with app.app_context():
        client = upload_objects.client_for(upload_store.current().location)
        return client.get_object(Bucket=MOTO_BUCKET, Key=key)["Body"].read()


def _folder_files(app) -> list:
    root = upload_files.Path(app.config["SUBMISSIONS_DIR"])
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission))


def _counted() -> float:
    return REGISTRY.get_sample_value("holdout_storage_failures_total", {"store": "uploads"}) or 0.0


def test_an_upload_lands_in_the_bucket_under_its_hash_as_the_folder_would_keep_it(moto_app, world):
    data = world.predictions()
    digest = checksums.sha256(data)
    response = post_file(moto_app.test_client(), world, "member", data)
    assert response.status_code == 201, response.json
    key = f"{PREFIX}/{digest[:2]}/{digest}.gz"
    assert _keys(moto_app) == [key]
    assert _folder_files(moto_app) == []  # nothing in SUBMISSIONS_DIR
    with moto_app.app_context():
        assert upload_store.read_original(digest) == data
        # The folder's file for the same content, byte for byte.
        upload_files.Pending(data, digest, background=False).finish()
        assert upload_files.path_for(digest).read_bytes() == _object(moto_app, key)
    assert gzip.decompress(_object(moto_app, key)) == data


def test_the_team_downloads_its_file_from_the_bucket_byte_for_byte(moto_app, world):
    """GET /api/v1/submissions/<id>/file (issue 27) reads the original from whichever store keeps it."""
    client = moto_app.test_client()
    data = b"\xef\xbb\xbf" + world.predictions(seed=3).replace(b"\n", b"\r\n")  # a BOM, CRLF line ends
    sid = post_file(client, world, "member", data).json["id"]
    assert _folder_files(moto_app) == []  # in the bucket alone
    answer = client.get(f"/api/v1/submissions/{sid}/file", headers=world.headers("member"))
    assert answer.status_code == 200 and answer.get_data() == data
    assert client.get(f"/api/v1/submissions/{sid}/file", headers=world.headers("other")).status_code == 404


def test_the_object_is_written_before_the_commit_and_removed_when_nothing_is_stored(moto_app, bucket):
    data = b"some predictions\n"
    digest = checksums.sha256(data)
    kept = bucket.keep(data, digest)
    kept.wait()
    assert _keys(moto_app) == [bucket.key_for(digest)]  # before any commit
    kept.discard()  # no row names it
    assert _keys(moto_app) == []


def test_the_client_is_made_before_the_budget_starts(moto_app, bucket, monkeypatch):
    """A worker's first upload makes its S3 client (boto3 imported, S3's model loaded: a second or more on a busy
    host) in the request, before STORAGE_TIMEOUT starts counting, not in the write the budget bounds."""
    made = []
    real = upload_objects.client_for

    def recording(location, budget=upload_objects.DEFAULT_STORAGE_TIMEOUT):
        if not upload_objects._clients:
            made.append(threading.current_thread())
        return real(location, budget)

    upload_objects.forget_clients()
    monkeypatch.setattr(upload_objects, "client_for", recording)
    data = b"a first upload\n"
    kept = bucket.keep(data, checksums.sha256(data))
    kept.wait()
    assert made == [threading.current_thread()]
    kept.discard()


def test_discard_keeps_an_object_a_stored_submission_shares(moto_app, world, bucket):
    data = world.predictions()
    assert post_file(moto_app.test_client(), world, "member", data).status_code == 201
    digest = checksums.sha256(data)
    kept = bucket.keep(data, digest)  # the same content again, whose upload is then refused
    kept.wait()
    kept.discard()
    assert _keys(moto_app) == [bucket.key_for(digest)]
    assert bucket.read_original(digest) == data


def test_discard_after_a_failed_write_deletes_nothing(moto_app, bucket, monkeypatch):
    client = bucket.client
    deleted = []
    monkeypatch.setattr(client, "put_object", _raising(EndpointConnectionError(endpoint_url="http://s3.test")))
    monkeypatch.setattr(client, "delete_object", lambda **kw: deleted.append(kw))
    kept = bucket.keep(b"x", checksums.sha256(b"x"))
    with pytest.raises(StorageFailed) as info:
        kept.wait()
    assert info.value.status == 503
    kept.discard()
    assert deleted == []


def test_finish_writes_the_object_again_if_it_vanished_before_the_commit_ended(moto_app, bucket):
    """A concurrent upload of the same content whose commit failed may delete the object in between."""
    data = b"shared content\n"
    digest = checksums.sha256(data)
    kept = bucket.keep(data, digest)
    kept.wait()
    bucket.client.delete_object(Bucket=MOTO_BUCKET, Key=bucket.key_for(digest))
    kept.finish()
    assert bucket.read_original(digest) == data


def test_reading_a_missing_original(bucket):
    digest = "ab" + "0" * 62
    assert bucket.read_compressed(digest) is None and bucket.compressed_sha256(digest) is None
    with pytest.raises(FileNotFoundError, match=f"s3://{MOTO_BUCKET}/{PREFIX}/ab/{digest}.gz"):
        bucket.read_original(digest)


def test_uploads_check_finds_and_repairs_both_kinds_page_by_page(moto_app, world, monkeypatch):
    monkeypatch.setattr(upload_objects, "PAGE_SIZE", 2)  # several pages of the listing
    client = moto_app.test_client()
    cli = moto_app.test_cli_runner()
    sent = [world.predictions(seed=seed) for seed in range(4)]
    for data in sent:
        assert post_file(client, world, "member", data).status_code == 201
    result = cli.invoke(args=["uploads", "check", "--min-age", "0"])
    assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output

    with moto_app.app_context():
        bucket = upload_store.current()
        stray = "cd" + "1" * 62
        bucket.put(bucket.key_for(stray), gzip.compress(b"x"), _md5(gzip.compress(b"x")))
        lost = checksums.sha256(sent[0])
        bucket.client.delete_object(Bucket=MOTO_BUCKET, Key=bucket.key_for(lost))
        bucket.client.put_object(Bucket=MOTO_BUCKET, Key=f"{PREFIX}/notes.txt", Body=b"not ours")

    young = cli.invoke(args=["uploads", "check", "--delete"])  # the default --min-age: the stray is too young
    assert f"upload in flight, left alone: s3://{MOTO_BUCKET}/{PREFIX}/cd/{stray}.gz" in young.output
    assert young.exit_code == 1  # the lost one
    result = cli.invoke(args=["uploads", "check", "--min-age", "0"])
    assert result.exit_code == 1
    assert f"object without a row: s3://{MOTO_BUCKET}/{PREFIX}/cd/{stray}.gz" in result.output
    assert f"stored submission without an object: sha256 {lost}" in result.output
    assert f"{PREFIX}/cd/{stray}.gz" in _keys(moto_app)  # only listed

    result = cli.invoke(args=["uploads", "check", "--delete", "--min-age", "0"])
    assert "object without a row (removed)" in result.output
    assert result.exit_code == 1  # a lost original cannot be brought back; it is still reported
    assert f"{PREFIX}/cd/{stray}.gz" not in _keys(moto_app) and f"{PREFIX}/notes.txt" in _keys(moto_app)
    with moto_app.app_context():
        found = upload_store.check(min_age=0)
        assert found.rows_without_object == [lost] and found.objects_without_row == []


def _raising(exc: Exception):
    def fail(**_kw):
        raise exc

    return fail


def _md5(body: bytes) -> bytes:
    import hashlib

    return hashlib.md5(body, usedforsecurity=False).digest()


def _client_error(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject"
    )


FAILURES = [
    (EndpointConnectionError(endpoint_url="http://s3.test"), 503, "unavailable: the S3 server cannot be reached"),
    (ConnectTimeoutError(endpoint_url="http://s3.test"), 503, "unavailable: the S3 server did not answer in time"),
    (ReadTimeoutError(endpoint_url="http://s3.test"), 503, "unavailable: the S3 server did not answer in time"),
    (_client_error(500, "InternalError"), 503, "unavailable: the S3 server answered 500 InternalError"),
    (_client_error(503, "SlowDown"), 503, "unavailable: the S3 server answered 503 SlowDown"),
    (_client_error(403, "AccessDenied"), 503, "unavailable: the S3 server refused access (AccessDenied)"),
    (_client_error(404, "NoSuchBucket"), 503, "unavailable: the S3 server answered 404 NoSuchBucket"),
    (NoCredentialsError(), 503, "unavailable: no S3 credentials are set"),
    (_client_error(507, "XMinioStorageFull"), 507, "upload storage is full"),
]


@pytest.mark.parametrize("exc, status, says", FAILURES, ids=[f"{type(f[0]).__name__}-{f[1]}" for f in FAILURES])
def test_each_s3_failure_has_its_status_and_a_message_for_the_team(exc, status, says):
    before = _counted()
    failed = upload_objects.storage_failed(exc, "writing s3://holdout-unit/uploads/ab/ab.gz")
    assert failed.status == status
    assert says in failed.message and "not stored" in failed.message and "quota is unchanged" in failed.message
    assert "s3.test" not in failed.message  # the server's address is for the log, not for the team
    assert _counted() == before + 1
    # Retry-After only where a retry later may succeed: not for refused access, a missing bucket or credentials,
    # nor a full store.
    assert failed.retry_after == (30 if "answered 5" in says or "reached" in says or "in time" in says else None)


@pytest.mark.parametrize("exc, status", [(FAILURES[0][0], 503), (FAILURES[5][0], 503), (FAILURES[-1][0], 507)])
def test_an_upload_the_bucket_refuses_is_answered_so_and_stores_nothing(moto_app, world, monkeypatch, exc, status):
    client = moto_app.test_client()
    with moto_app.app_context():
        monkeypatch.setattr(upload_store.current().client, "put_object", _raising(exc))
    quota_before = client.get("/api/v1/me", headers=world.headers("member")).json
    before = _counted()
    response = post_file(client, world, "member", world.predictions())
    assert response.status_code == status, response.json
    assert "upload storage" in response.json["error"] and "not stored" in response.json["error"]
    assert _count(moto_app) == 0 and _keys(moto_app) == []
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    assert _counted() == before + 1
    problems = client.get("/healthz").json["problems"]
    assert any(problem.startswith("uploads: a write was refused") for problem in problems)


def test_the_upload_page_answers_503_beside_the_file(moto_app, world, monkeypatch):
    client = moto_app.test_client()
    with moto_app.app_context():
        monkeypatch.setattr(
            upload_store.current().client, "put_object", _raising(EndpointConnectionError(endpoint_url="http://x"))
        )
        from app.services.people import teams

        team_id = teams.find_team("Lab").id
    login(client, "member@example.org", PASSWORD)
    response = client.post(
        "/submit",
        data={
            "csrf_token": csrf_token(client, "/submit"),
            "split": "nlvr2/dev",
            "team": str(team_id),
            "model_name": "m",
            "file": (io.BytesIO(world.predictions()), "p.csv"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 503 and response.headers["Retry-After"] == "30"
    assert "upload storage is unavailable: the S3 server cannot be reached" in response.get_data(as_text=True)
    assert _count(moto_app) == 0


@pytest.mark.parametrize("same_content", [False, True])
def test_an_upload_refused_under_the_lock_removes_its_object_unless_a_row_shares_it(
    moto_app, world, monkeypatch, same_content
):
    """Two uploads pass the early count; the second is refused under the lock after its object was written:
    its object goes, unless it is the first one's too (the same content)."""
    from app.services import catalog
    from app.services.intake import quotas

    client = moto_app.test_client()
    with moto_app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=1)
    strict, calls = quotas.check_quota, []

    def lenient_first_check(status, now):
        calls.append(1)
        return None if len(calls) % 2 == 1 else strict(status, now)  # as for a parallel upload

    monkeypatch.setattr(quotas, "check_quota", lenient_first_check)
    first = world.predictions()
    assert post_file(client, world, "member", first).status_code == 201
    second = first if same_content else world.predictions(seed=5)
    assert post_file(client, world, "member", second).status_code == 429
    assert _keys(moto_app) == [f"{PREFIX}/{checksums.sha256(first)[:2]}/{checksums.sha256(first)}.gz"]
    with moto_app.app_context():
        assert upload_store.check(min_age=0).clean


def test_the_client_fails_fast_and_speaks_to_other_s3_servers(monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask a metadata service for credentials
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    location = S3Location("holdout-unit", "p", endpoint_url="http://127.0.0.1:9", region="eu-west-1")
    upload_objects.forget_clients()
    try:
        config = upload_objects.client_for(location).meta.config
        # Two attempts fit the budget (STORAGE_TIMEOUT, 10 s unless set): a hanging server costs no more.
        assert (config.connect_timeout, config.read_timeout) == (3, 5)
        assert config.retries["total_max_attempts"] == 2
        small = upload_objects.client_for(location, budget=1).meta.config
        assert (small.connect_timeout, small.read_timeout) == (0.5, 0.5)
        assert config.s3["addressing_style"] == "path"
        assert config.request_checksum_calculation == "when_required"
        assert config.response_checksum_validation == "when_required"
        assert upload_objects.client_for(location).meta.region_name == "eu-west-1"
        aws = upload_objects.client_for(S3Location("holdout-unit", "p", region="eu-west-1")).meta.config
        assert not (aws.s3 or {}).get("addressing_style")  # AWS itself: its default addressing
    finally:
        upload_objects.forget_clients()


def test_a_store_that_cannot_be_read_fails_check_and_backup_with_a_message(moto_app, world, monkeypatch, tmp_path):
    assert post_file(moto_app.test_client(), world, "member", world.predictions()).status_code == 201
    failure = _raising(EndpointConnectionError(endpoint_url="http://s3.test"))
    with moto_app.app_context():
        client = upload_store.current().client
    monkeypatch.setattr(client, "get_paginator", lambda name: SimpleNamespace(paginate=failure))
    monkeypatch.setattr(client, "get_object", failure)
    cli = moto_app.test_cli_runner()
    result = cli.invoke(args=["uploads", "check"])
    assert result.exit_code == 2 and "upload storage is unavailable: the S3 server cannot be reached" in result.output
    archive = tmp_path / "backup.tar.gz"
    result = cli.invoke(args=["backup", str(archive)])
    assert result.exit_code == 2 and "upload storage is unavailable" in result.output, result.output
    assert not archive.exists() and list(tmp_path.glob("*.partial")) == []


def test_restore_refuses_a_bucket_holding_other_bytes_under_an_uploads_key(moto_app, world, database_backend, tmp_path):
    data = world.predictions()
    assert post_file(moto_app.test_client(), world, "member", data).status_code == 201
    archive = tmp_path / "backup.tar.gz"
    assert moto_app.test_cli_runner().invoke(args=["backup", str(archive)]).exit_code == 0
    digest = checksums.sha256(data)
    with moto_app.app_context():
        bucket = upload_store.current()
        other = gzip.compress(data, compresslevel=9)  # the same content, other bytes
        bucket.put(bucket.key_for(digest), other, _md5(other))
    folder = tmp_path / "fresh"
    folder.mkdir()
    url = database_backend.new_database(folder, name="fresh")
    fresh = create_app({**make_config(folder, url), "STORAGE_URL": f"s3://{MOTO_BUCKET}/{PREFIX}"})
    try:
        result = fresh.test_cli_runner().invoke(args=["restore", str(archive)])
        assert result.exit_code == 2, result.output
        assert (
            f"s3://{MOTO_BUCKET}/{PREFIX}/{digest[:2]}/{digest}.gz already exists with other content" in result.output
        )
        assert _object(moto_app, bucket.key_for(digest)) == other
    finally:
        with fresh.app_context():
            db.engine.dispose()
        database_backend.drop(url)


def test_a_bucket_that_is_not_there_is_a_failure_not_a_missing_original(moto_app):
    with moto_app.app_context():
        gone = upload_objects.UploadBucket(S3Location("holdout-elsewhere", PREFIX))
        with pytest.raises(StorageFailed, match="answered 404 NoSuchBucket"):
            gone.read_compressed("ab" + "0" * 62)
        with pytest.raises(StorageFailed, match="answered 404 NoSuchBucket"):
            gone.compressed_sha256("ab" + "0" * 62)
