"""An upload folder that hangs (a stuck network disk) costs an upload STORAGE_TIMEOUT and nobody else anything:
the upload is answered 503 with Retry-After while no lock is held (another team's write goes on meanwhile),
nothing is stored, and its file is removed once the write ends. (The same against an S3 server paused with
SIGSTOP: tests/storage/test_s3_server.py.) The removal of an original left in doubt is a job queued to run
later, which the process that queued it runs then by itself."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import func, select

from app.db import db
from app.models import Job, Submission
from app.services.intake import originals
from app.services.storage import upload_files, upload_store
from tests.support.api_world import build_world, post_file
from tests.support.hung_store import HeldWait, assert_refused_for_a_hang

BUDGET = 1.0  # STORAGE_TIMEOUT here: seconds


@pytest.mark.postgres(
    reason="what a waiting upload holds differs: SQLite's write lock for the whole database, PostgreSQL's row lock"
)
def test_a_folder_that_hangs_costs_the_budget_holds_no_lock_and_leaves_nothing(app, monkeypatch):
    world = build_world(app)
    app.config["STORAGE_TIMEOUT"] = BUDGET
    client = app.test_client()
    quota_before = client.get("/api/v1/me", headers=world.headers("member")).json

    def write_elsewhere():  # another team's rejected file: a row of its own
        return post_file(client, world, "other", b"dev-0-0-0,maybe\n")

    assert write_elsewhere().status_code == 422  # warm: the split's gold loaded
    writing, disk_back, written, write = threading.Event(), threading.Event(), threading.Event(), upload_files._write

    def stuck(temp, data):
        writing.set()
        disk_back.wait(30)
        write(temp, data)
        written.set()

    monkeypatch.setattr(upload_files, "_write", stuck)
    held, answer = HeldWait(monkeypatch, upload_files.Pending), {}

    def upload() -> None:
        answer["response"] = post_file(app.test_client(), world, "member", world.predictions())
        answer["store_hung"] = not disk_back.is_set()

    uploading = threading.Thread(target=upload)
    uploading.start()
    try:
        assert writing.wait(30) and held.waiting.wait(30)
        rejected = write_elsewhere()  # while the upload waits for the disk (held until this is answered)
        held.release()
        uploading.join(30)
    finally:
        held.release()
        disk_back.set()
    assert rejected.status_code == 422, rejected.json
    held.assert_others_went_on("the other team's write")
    assert_refused_for_a_hang(answer, "the upload folder did not answer in time", held, BUDGET)
    assert client.get("/api/v1/me", headers=world.headers("member")).json == quota_before
    with app.app_context():
        assert db.session.scalar(select(func.count()).where(Submission.status == "scored")) == 0
    # The write, ended once the disk is back, leaves nothing behind.
    assert written.wait(30)
    folder = upload_files.Path(app.config["SUBMISSIONS_DIR"])
    deadline = time.monotonic() + 10
    while any(path.is_file() for path in folder.rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    result = app.test_cli_runner().invoke(args=["uploads", "check", "--min-age", "0"])
    assert result.exit_code == 0 and "uploads and rows agree" in result.output, result.output
    monkeypatch.undo()
    assert post_file(client, world, "member", world.predictions()).status_code == 201


def test_a_removal_queued_for_later_runs_then_by_itself(app, monkeypatch):
    """In-process (SQLite), a job queued to run later is handed to a timer: nothing else would run it."""
    monkeypatch.setattr(upload_store, "stray_after", lambda: 0.3)
    digest = "ab" * 32
    with app.app_context():
        originals.queue_removal(digest)
        job = db.session.scalar(select(Job).where(Job.key == f"{originals.STRAY}:{digest}"))
        assert job is not None and job.state == "queued" and job.run_after > job.queued_at
        job_id = job.id
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with app.app_context():
            job = db.session.get(Job, job_id)
            if job.state == "done":
                break
        time.sleep(0.05)
    assert (job.state, job.result) == ("done", "nothing to do: uploads are kept in a folder")
