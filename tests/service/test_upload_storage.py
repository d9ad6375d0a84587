"""Cheap refusals before parsing, originals kept only for stored submissions, `uploads check`, midnight."""

from __future__ import annotations

import gzip
import os
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.evaluation import tasks
from app.models import Submission
from app.services import catalog
from app.services.errors import InvalidInput, QuotaExceeded
from app.services.intake import quotas, submissions
from app.services.intake.submissions import Upload
from app.services.storage import upload_files
from tests.support.submission_world import build_submission_world

pytestmark = pytest.mark.postgres(
    reason=(
        "quota windows around midnight compare timestamptz (naive strings on SQLite); rows and files stay "
        "consistent under each dialect's rollback"
    )
)

NOW = datetime(2026, 3, 31, 22, 0, tzinfo=UTC)


@pytest.fixture
def world(ctx):
    return build_submission_world()


def _files(app) -> list[str]:
    folder = app.config["SUBMISSIONS_DIR"]
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


def _upload(world, seed=0) -> Upload:
    return Upload(data=synthetic.predictions("nlvr2", world["gold"], 0.8, seed=seed), model_name="M")


@pytest.fixture
def parses(monkeypatch):
    """Counts calls of the prediction parser of every task type."""
    calls = []
    for task in tasks.TASK_TYPES.values():
        original = task.parse
        monkeypatch.setattr(task, "parse", lambda *a, _o=original, **k: calls.append(1) or _o(*a, **k))
    return calls


@pytest.mark.parametrize("policy, first", [({"per_day": 1}, "valid"), ({"rejected_per_day": 1}, "invalid")])
def test_over_the_cap_is_refused_before_the_file_is_parsed(world, app, parses, policy, first):
    catalog.set_policy("nlvr2", "dev", **policy)
    if first == "valid":
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=NOW)
    else:
        with pytest.raises(InvalidInput):
            submissions.submit(
                world["member"], None, "nlvr2", "dev", Upload(data=b"garbage\n", model_name="M"), now=NOW
            )
    assert len(parses) == 1
    for data in (synthetic.predictions("nlvr2", world["gold"], 0.5, seed=7), b"garbage\n"):
        with pytest.raises(QuotaExceeded):
            submissions.submit(world["member"], None, "nlvr2", "dev", Upload(data=data, model_name="M"), now=NOW)
    assert len(parses) == 1  # neither file was parsed
    assert db.session.scalar(select(func.count(Submission.id))) == 1


def test_no_original_is_left_by_a_refused_or_rejected_upload(world, app):
    catalog.set_policy("nlvr2", "dev", per_day=1)
    with pytest.raises(InvalidInput):  # rejected and recorded: no original
        submissions.submit(world["member"], None, "nlvr2", "dev", Upload(data=b"x,true\n", model_name="M"), now=NOW)
    assert _files(app) == []
    submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=NOW)
    kept = _files(app)
    assert len(kept) == 1 and kept[0].endswith(".gz")
    with pytest.raises(QuotaExceeded):
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world, seed=3), now=NOW)
    assert _files(app) == kept
    assert upload_files.check_folder(min_age=0).clean


def test_a_quota_refused_under_the_lock_removes_the_written_original(world, app, monkeypatch):
    """Two uploads pass the early count; the second is refused under the lock after its file was written."""
    catalog.set_policy("nlvr2", "dev", per_day=1)
    early = quotas.check_quota
    calls = []

    def lenient_first_check(status, now):
        calls.append(1)
        if len(calls) % 2 == 1:  # the check before parsing lets it through, as for a parallel upload
            return None
        return early(status, now)

    monkeypatch.setattr(quotas, "check_quota", lenient_first_check)
    submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=NOW)
    with pytest.raises(QuotaExceeded):
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world, seed=5), now=NOW)
    assert len(_files(app)) == 1
    assert upload_files.check_folder(min_age=0).clean


def test_a_failed_commit_removes_the_written_original(world, app, monkeypatch):
    def broken_commit():
        raise RuntimeError("database went away")

    monkeypatch.setattr(db.session, "commit", broken_commit)
    with pytest.raises(RuntimeError):
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=NOW)
    monkeypatch.undo()
    db.session.rollback()
    assert _files(app) == []


def test_uploads_check_finds_and_repairs_both_kinds(world, app):
    cli = app.test_cli_runner()
    first = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=NOW)
    second = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world, seed=1), now=NOW)
    result = cli.invoke(args=["uploads", "check"])
    assert result.exit_code == 0 and "uploads and rows agree" in result.output
    folder = upload_files.uploads_dir()
    # A file no row names, a half-written leftover, a row whose file is gone, and a committed row whose
    # complete file a killed worker left under its temporary name.
    stray = folder / "ab" / ("ab" + "0" * 62 + ".gz")
    stray.parent.mkdir(parents=True)
    stray.write_bytes(gzip.compress(b"x"))
    leftover = folder / "cd" / (".cd" + "1" * 62 + ".0000.tmp")
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"\x1f\x8b half")
    lost = upload_files.path_for(first.submission.file_sha256)
    lost.unlink()
    moved = upload_files.path_for(second.submission.file_sha256)
    temp = moved.parent / f".{second.submission.file_sha256}.beef.tmp"
    os.replace(moved, temp)
    old = time.time() - 3600
    for path in (leftover, temp):
        os.utime(path, (old, old))

    result = cli.invoke(args=["uploads", "check"])
    assert result.exit_code == 1
    assert f"file without a row: {stray}" in result.output
    assert f"unfinished upload: {leftover}" in result.output
    assert f"stored submission without a file: sha256 {first.submission.file_sha256}" in result.output
    assert f"under a temporary name: {temp}" in result.output
    assert stray.exists() and leftover.exists()  # only listed

    result = cli.invoke(args=["uploads", "check", "--delete"])
    assert not stray.exists() and not leftover.exists() and moved.exists() and not temp.exists()
    assert upload_files.read_original(second.submission.file_sha256) == _upload(world, seed=1).data
    assert result.exit_code == 1  # the lost file cannot be brought back; it is still reported
    assert upload_files.check_folder().rows_without_file == [first.submission.file_sha256]


def test_a_young_temporary_file_is_left_to_its_upload(world, app):
    cli = app.test_cli_runner()
    temp = upload_files.uploads_dir() / "ef" / (".ef" + "2" * 62 + ".0000.tmp")
    temp.parent.mkdir(parents=True)
    temp.write_bytes(b"")
    result = cli.invoke(args=["uploads", "check", "--delete"])
    assert "in flight, left alone" in result.output and temp.exists()


def test_a_submission_at_exactly_midnight_counts_for_the_new_day(world):
    catalog.set_policy("nlvr2", "dev", per_day=1)
    midnight = datetime(2026, 4, 1, 0, 0, 0, tzinfo=UTC)
    submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=midnight - timedelta(microseconds=1))
    at_midnight = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world, seed=1), now=midnight)
    assert at_midnight.quota.used_today == 1 and at_midnight.quota.used_month == 1
    with pytest.raises(QuotaExceeded) as info:
        submissions.submit(
            world["member"],
            None,
            "nlvr2",
            "dev",
            _upload(world, seed=2),
            now=midnight + timedelta(hours=23, minutes=59, seconds=59),
        )
    assert info.value.retry_at == datetime(2026, 4, 2, tzinfo=UTC)


def test_no_original_is_left_by_a_file_over_the_limit(world, app):
    from app.services.errors import TooLarge

    app.config["MAX_UPLOAD_MB"] = 0  # every file is over it: the 413 of a body that passed werkzeug's limit
    with pytest.raises(TooLarge):
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world), now=NOW)
    assert _files(app) == [] and upload_files.check_folder(min_age=0).clean
