"""Original uploads in a real S3 server (SeaweedFS on loopback, tests/support/s3_server.py) with
STORAGE_URL=s3://bucket/prefix and S3_ENDPOINT_URL: an upload lands in the bucket under its content-hash key and
not in SUBMISSIONS_DIR; with the server down an upload is a quick 503 that stores nothing; a wrong secret is
refused (a 503 that stores nothing); a server paused (SIGSTOP) mid-upload costs the upload STORAGE_TIMEOUT and
nobody else anything, and the object it stores when it resumes is removed by the job its upload queued; a server
killed in the middle of an upload leaves a row with its object or no row, and one killed whole (store and
gateway) keeps what it had once started again; `flask uploads check` reports (and `--delete` clears) an object
without a row; the check pages through the listing; a backup restores into a fresh bucket and prefix (or a folder);
check and backup on a server stopped, or refusing the secret, fail with a message and leave no archive."""

from __future__ import annotations

import gzip
import signal
import threading
import time
from concurrent import futures
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from app import create_app
from app.db import db
from app.models import Job, Submission
from app.services.intake import originals
from app.services.jobs import transport
from app.services.storage import checksums, upload_objects, upload_store
from tests.conftest import SqliteBackend, make_config
from tests.storage.conftest import prefix_for, s3_config
from tests.support.api_world import build_world, post_file, stored_submission
from tests.support.hung_store import HeldWait, assert_refused_for_a_hang


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
    with s3_app.app_context():  # every attempt the client sends counted (botocore's retries included)
        sends = []
        upload_store.current().client.meta.events.register("before-send.s3.PutObject", lambda **_: sends.append(1))
    s3_server.stop()
    response = post_file(client, world, "member", world.predictions())
    assert response.status_code == 503, response.json
    assert response.json["error"].startswith("the server's upload storage is unavailable: the S3 server cannot be")
    assert "your file was not stored and your quota is unchanged" in response.json["error"]
    # No long wait on a server that is not there: its refusals end the write (it did not run out the budget,
    # which would say "did not answer in time"), after the client's few attempts, not botocore's default ones.
    assert 1 <= len(sends) <= upload_objects.ATTEMPTS, sends
    assert response.headers["Retry-After"] == "30"
    assert _rows(s3_app) == 0
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    with s3_app.app_context():  # a write that never reached a server leaves nothing to remove later
        assert db.session.scalar(select(func.count()).select_from(Job)) == 0
    s3_server.start()
    assert s3_server.keys(prefix) == []
    # Once it is back, the same upload is taken.
    assert post_file(client, world, "member", world.predictions()).status_code == 201
    assert len(s3_server.keys(prefix)) == 1


def test_a_wrong_secret_is_refused(s3_app, world, s3_server, prefix, monkeypatch):
    """SeaweedFS checks the secret of its identity: boto3 signing with another is refused, and so is the app's
    upload (a 503 without Retry-After: waiting will not mend credentials), which stores nothing and leaves
    nothing to remove later."""
    from botocore.exceptions import ClientError

    stray = b"signed with the wrong secret\n"
    with pytest.raises(ClientError) as refused:
        s3_server.client(secret="not-the-secret").put_object(
            Bucket=s3_server.bucket, Key=_key(prefix, stray), Body=gzip.compress(stray)
        )
    assert refused.value.response["Error"]["Code"] in ("SignatureDoesNotMatch", "AccessDenied")
    assert s3_server.keys(prefix) == []

    client = s3_app.test_client()
    quota_before = client.get("/api/v1/me", headers=world.headers("member")).json
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    upload_objects.forget_clients()
    response = post_file(client, world, "member", world.predictions())
    assert response.status_code == 503, response.json
    assert "the S3 server refused access (SignatureDoesNotMatch)" in response.json["error"]
    assert "Retry-After" not in response.headers
    assert _rows(s3_app) == 0 and s3_server.keys(prefix) == []
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    with s3_app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Job)) == 0


BUDGET = 1.5  # STORAGE_TIMEOUT here: seconds


@pytest.mark.postgres(
    reason="what a waiting upload holds differs: SQLite's write lock for the whole database, PostgreSQL's row lock"
)
def test_a_server_paused_mid_upload_costs_the_budget_holds_no_lock_and_leaves_nothing(
    s3_app, world, s3_server, prefix, monkeypatch
):
    """The issue's hang: the S3 server stopped (SIGSTOP) as the upload's PUT goes out. The upload is answered 503 with
    Retry-After within the budget, while a board read and another team's upload (a write) are answered meanwhile;
    nothing is stored and the quota is unchanged. Once the server resumes it stores the PUT it had taken (an
    object without a row), and the job the upload queued removes it: `uploads check` is clean."""
    s3_app.config["STORAGE_TIMEOUT"] = BUDGET
    monkeypatch.setattr(upload_objects, "SETTLE_SECONDS", 0.1)
    client = s3_app.test_client()
    quota_before = client.get("/api/v1/me", headers=world.headers("member")).json

    def read_board():
        return client.get("/api/v1/leaderboards/nlvr2/dev", headers=world.headers("other"))  # read afresh

    def write_elsewhere():  # another team's rejected file: a row of its own
        return post_file(client, world, "other", b"dev-0-0-0,maybe\n")

    assert read_board().status_code == 200 and write_elsewhere().status_code == 422  # warm: built and loaded
    paused, writes, put, keep = threading.Event(), [], upload_objects.UploadBucket.put, upload_objects.PendingObject
    pid = s3_server.process.pid

    def paused_as_it_goes_out(self, key, body, md5):
        if not paused.is_set():
            s3_server.process.send_signal(signal.SIGSTOP)
            paused.set()
        return put(self, key, body, md5)

    def recorded(bucket, data, digest):
        writes.append(keep(bucket, data, digest))
        return writes[-1]

    monkeypatch.setattr(upload_objects.UploadBucket, "put", paused_as_it_goes_out)
    monkeypatch.setattr(upload_objects.UploadBucket, "keep", recorded)
    held, resumed = HeldWait(monkeypatch, upload_objects.PendingObject), threading.Event()
    data, answer = world.predictions(), {}

    def upload() -> None:
        answer["response"] = post_file(s3_app.test_client(), world, "member", data)
        answer["store_hung"] = not resumed.is_set()

    uploading = threading.Thread(target=upload)
    uploading.start()
    try:
        assert paused.wait(30) and held.waiting.wait(30)
        board, rejected = read_board(), write_elsewhere()  # while the upload waits (held until they are answered)
        held.release()
        uploading.join(30)
        transport.cancel_retries()  # the timer that would run the removal later: the test runs it itself
    finally:
        held.release()
        resumed.set()
        s3_server.process.send_signal(signal.SIGCONT)
    assert board.status_code == 200 and rejected.status_code == 422, rejected.json
    held.assert_others_went_on("the board read and the other team's write")
    assert_refused_for_a_hang(answer, "the S3 server did not answer in time", held, BUDGET)
    assert _rows(s3_app) == 0
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    digest = checksums.sha256(data)
    with s3_app.app_context():
        job = db.session.scalar(select(Job).where(Job.key == f"{originals.STRAY}:{digest}"))
        assert job is not None and job.state == "queued"
        assert (job.run_after - job.queued_at).total_seconds() >= upload_objects.stray_after(BUDGET)

    # Resumed, the server stores the PUT it had taken: an object no row names.
    futures.wait([write._future for write in writes], timeout=30)  # the writes given up on have ended
    deadline = time.monotonic() + 10
    while not s3_server.keys(prefix) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s3_server.keys(prefix) == [_key(prefix, data)]
    result = _check(s3_app)
    assert result.exit_code == 1 and "object without a row" in result.output, result.output
    # Its removal, run once due (the test does not wait the delay: it makes the job due).
    with s3_app.app_context():
        db.session.execute(update(Job).where(Job.id == job.id).values(run_after=job.queued_at))
        db.session.commit()
    assert s3_app.test_cli_runner().invoke(args=["jobs", "run"]).output == "1 jobs run\n"
    assert s3_server.keys(prefix) == []
    result = _check(s3_app)
    assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output
    assert pid == s3_server.process.pid  # the same server throughout, paused and resumed
    # The same upload, now answered, is stored; its removal job (were it to run again) would keep it.
    assert post_file(client, world, "member", data).status_code == 201
    with s3_app.app_context():
        assert upload_store.settle_stray(digest).startswith("kept ")
    assert s3_server.keys(prefix) == [_key(prefix, data)]


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


def test_the_whole_server_killed_mid_upload_and_started_again_keeps_what_it_had(s3_app, world, s3_server, prefix):
    """Every process of SeaweedFS (store and gateway) SIGKILLed as an upload's write goes out, then started again
    on the same ports and data: the upload was a 503 that left nothing, the object stored before is still there
    and readable, the check is clean and the next upload is taken."""
    client = s3_app.test_client()
    kept = world.predictions(seed=1)
    assert post_file(client, world, "member", kept).status_code == 201
    original = upload_objects.UploadBucket.put

    def all_killed_writing(self, key, body, md5):
        s3_server.kill_all()
        return original(self, key, body, md5)

    with pytest.MonkeyPatch.context() as patch:  # undone before the start (the fixture's environment stays)
        patch.setattr(upload_objects.UploadBucket, "put", all_killed_writing)
        response = post_file(client, world, "member", world.predictions(seed=2))
    assert response.status_code == 503, response.json
    assert s3_server.store is None and not s3_server.running
    s3_server.start()
    assert s3_server.keys(prefix) == [_key(prefix, kept)] and _rows(s3_app) == 1
    with s3_app.app_context():
        assert upload_store.read_original(checksums.sha256(kept)) == kept
    result = _check(s3_app)
    assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output
    assert post_file(client, world, "member", world.predictions(seed=3)).status_code == 201
    assert len(s3_server.keys(prefix)) == 2


def test_uploads_check_finds_an_object_without_a_row_and_a_row_without_an_object(
    s3_app, world, s3_server, prefix, monkeypatch
):
    monkeypatch.setattr(upload_objects, "PAGE_SIZE", 2)  # the server's continuation tokens, page after page
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


@pytest.mark.parametrize("failure", ["stopped", "wrong secret"])
def test_check_and_backup_on_a_server_that_cannot_be_read_fail_with_a_message(
    s3_app, world, s3_server, prefix, tmp_path, monkeypatch, failure
):
    """`flask uploads check` and `flask backup` with the server stopped, or signing with a secret it refuses:
    exit 2 with a message saying so (no traceback), no archive and no partial one left; once it is back, both
    succeed."""
    data = world.predictions()
    assert post_file(s3_app.test_client(), world, "member", data).status_code == 201
    cli = s3_app.test_cli_runner()
    archive = tmp_path / "backup.tar.gz"
    if failure == "stopped":
        s3_server.stop()
        says = "upload storage is unavailable: the S3 server cannot be reached"
    else:
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        upload_objects.forget_clients()
        says = "upload storage is unavailable: the S3 server refused access (SignatureDoesNotMatch)"
    try:
        result = cli.invoke(args=["uploads", "check", "--min-age", "0"])
        assert result.exit_code == 2 and says in result.output, result.output
        result = cli.invoke(args=["backup", str(archive)])
        assert result.exit_code == 2 and says in result.output, result.output
        assert "Traceback" not in result.output
        assert not archive.exists() and list(tmp_path.glob("*.partial")) == []
    finally:
        s3_server.start()
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.environment()["AWS_SECRET_ACCESS_KEY"])
        upload_objects.forget_clients()
    assert _check(s3_app).exit_code == 0
    result = cli.invoke(args=["backup", str(archive)])
    assert result.exit_code == 0 and "1 uploads" in result.output, result.output
    assert s3_server.keys(prefix) == [_key(prefix, data)]
