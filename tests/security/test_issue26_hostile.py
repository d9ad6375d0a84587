"""Issue 26, hostile: readers never wait (and never see an entry taken off the board while its job waits), the
jobs console and `flask jobs` refuse who they should and bad input cleanly, and a label correction leaves one
score per subset and metric."""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
from flask import g
from sqlalchemy import func, select, update

from app import create_app, synthetic
from app.db import db
from app.evaluation import get_task
from app.models import Job, Score, Submission, utcnow
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.catalog import label_files
from app.services.errors import Conflict, NotFound
from app.services.intake import submissions
from app.services.jobs import console, queue, transport
from app.services.maintenance import label_audits, maintainer_actions
from app.settings import ConfigError, from_environment
from tests.support.browser import csrf_token, login
from tests.support.submission_world import build_submission_world
from tests.support.users import PASSWORD

NAMES = {1: "ZuluAlphaModel", 2: "ZuluBravoModel", 3: "ZuluCharlieModel", 4: "ZuluDeltaModel"}


@pytest.fixture
def world(ctx):
    return build_submission_world()


def _publish(world, accuracy: float, seed: int, split: str = "dev", publish: bool = True) -> Submission:
    found = catalog.get_split("nlvr2", split)
    gold = world["gold"] if split == "dev" else world["hidden_gold"]
    data = synthetic.predictions("nlvr2", gold, accuracy, seed=seed)
    return submissions.store_scored(found, world["lab"], data, model_name=NAMES[seed], description="d", publish=publish)


def _workers(app, monkeypatch) -> list[queue.Queued]:
    """JOB_QUEUE=procrastinate with the workers stood in for: what is handed to them is only recorded."""
    handed: list[queue.Queued] = []
    monkeypatch.setattr(transport, "defer", lambda job: handed.append(job) or True)
    app.config["JOB_QUEUE"] = "procrastinate"
    return handed


def _forget_user() -> None:
    """The tests hold an application context, which each request reuses: flask-login's user of the previous
    request and its CSRF token (kept in g) are forgotten, so each client is seen as who it is."""
    g.pop("_login_user", None)
    g.pop("csrf_token", None)


def _never_compute(monkeypatch) -> None:
    def refuse(split, version):
        raise AssertionError(f"a reader computed the board of split {split.id} at version {version}")

    monkeypatch.setattr(board_snapshots, "_compute", refuse)


def _updating_world(world, app, monkeypatch):
    """Entries 1 and 2 on a finished board; then, with workers, 3 published and 1 hidden: the board's job waits."""
    first, second = _publish(world, 0.7, 1), _publish(world, 0.8, 2)
    board_snapshots.snapshot(catalog.get_split("nlvr2", "dev"))
    handed = _workers(app, monkeypatch)
    third = _publish(world, 0.9, 3)
    maintainer_actions.hide_entry(world["admin"], first.id, "a duplicate")
    db.session.rollback()
    return first, second, third, handed


READS = (
    "/leaderboards/nlvr2/dev",
    "/leaderboards/nlvr2/dev?view=teams",
    "/leaderboards/nlvr2/dev?sort=all:accuracy&order=asc",
    "/leaderboards/nlvr2",
    "/api/v1/leaderboards/nlvr2/dev",
    "/api/v1/leaderboards/nlvr2/dev?view=teams",
    "/leaderboards/nlvr2/dev/export.csv",
    "/leaderboards/nlvr2/dev/export.json",
    "/leaderboards/nlvr2/models",
    "/api/v1/leaderboards/nlvr2/models",
    "/leaderboards/nlvr2/models/export.csv",
    "/leaderboards/nlvr2/models/export.json",
    "/",
)


def test_no_read_computes_the_board_nor_shows_the_entry_hidden_while_it_updates(world, app, monkeypatch):
    _, second, _, handed = _updating_world(world, app, monkeypatch)
    assert [job.kind for job in handed] == ["board"]  # the hiding folded into the publication's waiting job
    _never_compute(monkeypatch)
    anonymous, outsider = app.test_client(), app.test_client()
    assert login(outsider, "outsider@example.org", PASSWORD).status_code == 302
    for client in (anonymous, outsider):
        for path in READS:
            _forget_user()
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            body = response.get_data(as_text=True)
            assert NAMES[1] not in body, path  # hidden since the snapshot
            assert NAMES[3] not in body, path  # not in the last finished snapshot yet
            if "/dev" in path or "models" in path:
                assert NAMES[2] in body, path
    _forget_user()
    api = anonymous.get("/api/v1/leaderboards/nlvr2/dev").json
    assert api["updating_since"] is not None
    assert [entry["submission_id"] for entry in api["entries"]] == [second.id]
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(Job).where(Job.state == "queued")) == 1


@pytest.mark.postgres(reason="on PostgreSQL every POST counts as a possible writer (may_hold_write_lock)")
def test_a_post_request_answers_from_the_last_board_without_computing_it(world, app, monkeypatch):
    """A writing request (an unpublish through the API) while the board's job waits builds nothing."""
    from app.services.people import accounts

    _, second, _, _ = _updating_world(world, app, monkeypatch)
    token = accounts.create_token(world["member"], "t")[1]
    _never_compute(monkeypatch)
    client = app.test_client()
    response = client.post(f"/api/v1/submissions/{second.id}/unpublish", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.get_data(as_text=True)
    api = client.get("/api/v1/leaderboards/nlvr2/dev").json
    assert api["entries"] == [] and api["updating_since"] is not None


def test_two_different_boards_of_the_same_size_while_updating_are_two_pages(world, app, monkeypatch):
    """While one board job waits, hiding one entry and then (instead) another leaves as many entries on the
    board: the page kept for the first must not be served for the second."""
    first, second = _publish(world, 0.7, 1), _publish(world, 0.8, 2)
    board_snapshots.snapshot(catalog.get_split("nlvr2", "dev"))
    _workers(app, monkeypatch)
    maintainer_actions.hide_entry(world["admin"], first.id, "a duplicate")
    client = app.test_client()
    for path in ("/leaderboards/nlvr2/dev", "/leaderboards/nlvr2/dev?view=teams"):
        assert NAMES[1] not in client.get(path).get_data(as_text=True)
    maintainer_actions.unhide_entry(world["admin"], first.id)
    maintainer_actions.hide_entry(world["admin"], second.id, "a duplicate")
    db.session.rollback()
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert NAMES[2] not in page and NAMES[1] in page
    # The teams view keeps the last board's team bests until the new one is built: the hidden one is gone.
    assert NAMES[2] not in client.get("/leaderboards/nlvr2/dev?view=teams").get_data(as_text=True)


def test_after_the_job_finishes_the_old_etag_gets_the_new_page(world, app, monkeypatch):
    app.config["LEADERBOARD_PAGE_TTL"] = 0
    _, second, third, _ = _updating_world(world, app, monkeypatch)
    client = app.test_client()
    tags = {}
    for path in ("/leaderboards/nlvr2/dev", "/api/v1/leaderboards/nlvr2/dev", "/leaderboards/nlvr2/dev/export.csv"):
        response = client.get(path)
        assert response.status_code == 200 and response.headers.get("ETag"), path
        tags[path] = response.headers["ETag"]
        assert client.get(path, headers={"If-None-Match": tags[path]}).status_code == 304
    db.session.rollback()
    assert transport.run_due_here() == 1
    for path, tag in tags.items():
        response = client.get(path, headers={"If-None-Match": tag})
        assert response.status_code == 200, path
        assert NAMES[3] in response.get_data(as_text=True), path
    api = client.get("/api/v1/leaderboards/nlvr2/dev").json
    assert api["updating_since"] is None
    assert [entry["submission_id"] for entry in api["entries"]] == [third.id, second.id]


@pytest.mark.postgres(reason="coalescing is a partial unique index and INSERT ... ON CONFLICT, per dialect")
def test_many_changes_make_one_waiting_job_per_board(world, app, monkeypatch):
    entries = [_publish(world, 0.6 + 0.1 * n, n) for n in (1, 2, 3)]
    hidden_entry = _publish(world, 0.7, 4, split="test-u")
    transport.run_due_here()  # the boards as they are (in-process, their jobs wait for a reader)
    handed = _workers(app, monkeypatch)
    for _ in range(3):
        for entry in (*entries, hidden_entry):
            maintainer_actions.hide_entry(world["admin"], entry.id, "x")
            maintainer_actions.unhide_entry(world["admin"], entry.id)
    db.session.rollback()
    waiting = db.session.execute(
        select(Job.key, func.count()).where(Job.state == "queued", Job.attempts == 0).group_by(Job.key)
    ).all()
    dev = catalog.get_split("nlvr2", "dev")
    # test-u is held (the Ladder, before its reveal): nobody may read its board, so no job is queued for it.
    assert dict(waiting) == {board_snapshots.board_key(dev.id): 1}
    assert Counter(job.key for job in handed) == {board_snapshots.board_key(dev.id): 1}


def test_a_failing_board_job_retries_then_fails_and_readers_keep_the_last_board(world, app, monkeypatch):
    app.config["JOB_MAX_ATTEMPTS"] = 2
    _, second, _, _ = _updating_world(world, app, monkeypatch)

    def broken(split, version):
        raise RuntimeError("the gold file is unreadable")

    monkeypatch.setattr(board_snapshots, "_compute", broken)
    (job_id,) = db.session.scalars(select(Job.id).where(Job.state == "queued"))
    assert queue.run(job_id).state == "queued"
    db.session.rollback()
    job = db.session.get(Job, job_id)
    assert job.attempts == 1 and job.state == "queued" and "unreadable" in job.error
    db.session.execute(update(Job).where(Job.id == job_id).values(run_after=utcnow()))
    db.session.commit()
    assert queue.run(job_id).state == "failed"
    for _ in range(2):  # not queued again at every view; the board stays readable, marked as updating
        api = app.test_client().get("/api/v1/leaderboards/nlvr2/dev").json
        assert api["updating_since"] is not None
        assert [entry["submission_id"] for entry in api["entries"]] == [second.id]
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(Job).where(Job.state == "queued")) == 0
    health = app.test_client().get("/healthz").json
    assert health["status"] == "degraded" and health["queue"]["failed"] == 1


def test_hidden_split_entries_leak_nowhere_through_the_queue(world, app, monkeypatch):
    secret = _publish(world, 0.83, 4, split="test-u")
    _workers(app, monkeypatch)
    maintainer_actions.hide_entry(world["admin"], secret.id, "x")
    maintainer_actions.unhide_entry(world["admin"], secret.id)
    db.session.rollback()
    transport.run_due_here()
    # Its board is held: no job is queued for it, so none can carry its entries (issue 34).
    key = board_snapshots.board_key(catalog.get_split("nlvr2", "test-u").id)
    assert db.session.scalar(select(func.count()).select_from(Job).where(Job.key == key)) == 0
    score = db.session.scalar(
        select(Score.value).where(Score.submission_id == secret.id, Score.subset == "all", Score.metric == "accuracy")
    )
    figures = {f"{score:.4f}", f"{100 * score:.1f}", f"{score:.3f}"}
    client = app.test_client()
    reads = [client.get(path) for path in ("/healthz", "/api/v1/leaderboards/nlvr2/test-u", "/leaderboards/nlvr2")]
    for response in reads:
        body = response.get_data(as_text=True)
        assert NAMES[4] not in body and not any(figure in body for figure in figures)
    assert set(reads[0].json["queue"]) == {"waiting", "running", "oldest_s", "failed", "stuck"}
    assert client.get("/api/v1/leaderboards/nlvr2/test-u").json["updating_since"] is None
    for row in console.listing(None):
        text = f"{row.result} {row.error}"
        assert NAMES[4] not in text and not any(figure in text for figure in figures)


def test_the_jobs_console_refuses_strangers_members_and_forged_forms(world, app):
    job_id = queue.enqueue("board", "board:999", {"split_id": 999})
    db.session.commit()
    anonymous = app.test_client()
    assert anonymous.get("/console/jobs").status_code in (302, 401)
    assert anonymous.post(f"/console/jobs/{job_id}/rerun").status_code in (302, 401, 400)
    member = app.test_client()
    _forget_user()
    assert login(member, "member@example.org", PASSWORD).status_code == 302
    _forget_user()
    token = csrf_token(member, "/login")
    before = db.session.execute(select(Job.id, Job.state, Job.run_after)).all()
    assert member.get("/console/jobs").status_code == 403
    assert member.post(f"/console/jobs/{job_id}/rerun", data={"csrf_token": token}).status_code == 403
    admin = app.test_client()
    _forget_user()
    assert login(admin, "admin@example.org", PASSWORD).status_code == 302
    page = admin.get("/console/jobs")
    assert page.status_code == 200 and "no-store" in page.headers.get("Cache-Control", "")
    for data in ({}, {"csrf_token": "forged"}):
        assert admin.post(f"/console/jobs/{job_id}/rerun", data=data).status_code in (303, 400)
    db.session.rollback()
    assert db.session.execute(select(Job.id, Job.state, Job.run_after)).all() == before
    _forget_user()
    token = csrf_token(admin, "/console/jobs")
    # A done job: refused, shown, no 500; an unknown one: the same.
    db.session.execute(update(Job).where(Job.id == job_id).values(state="done"))
    db.session.commit()
    for target, said in ((job_id, "nothing to rerun"), (987654, "no job 987654")):
        response = admin.post(f"/console/jobs/{target}/rerun", data={"csrf_token": token}, follow_redirects=True)
        assert response.status_code == 200 and said in response.get_data(as_text=True)
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(Job)) == 1
    with pytest.raises(Conflict) as refused:
        console.rerun(job_id)
    assert refused.value.status == 409
    with pytest.raises(NotFound):
        console.rerun(987654)


def test_flask_jobs_refuses_bad_input_without_a_traceback(world, app, runner):
    job_id = queue.enqueue("board", "board:998", {"split_id": 998})
    db.session.commit()
    db.session.execute(update(Job).where(Job.id == job_id).values(state="done"))
    db.session.commit()
    for args, words in (
        (["jobs", "retry", "abc"], "abc"),
        (["jobs", "retry", "999999"], "999999"),
        (["jobs", "retry", "99999999999999999999"], "99999999999999999999"),  # past an INTEGER id
        (["jobs", "retry", str(job_id)], "done"),
        (["jobs", "list", "--state", "bogus"], "bogus"),
        (["jobs", "list", "--limit", "0"], "limit"),
    ):
        result = runner.invoke(args=args)
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit), (args, result.exception)
        assert words in result.output and "Traceback" not in result.output, (args, result.output)
    assert runner.invoke(args=["worker"]).exit_code == 2  # JOB_QUEUE=inline: no worker to run


@pytest.mark.parametrize(
    "env, named",
    [
        ({"JOB_QUEUE": "bogus"}, "JOB_QUEUE"),
        ({"JOB_QUEUE": "procrastinate"}, "JOB_QUEUE"),
        ({"JOB_HEARTBEAT": "0"}, "JOB_HEARTBEAT"),
        ({"JOB_HEARTBEAT": "nan"}, "JOB_HEARTBEAT"),
        ({"JOB_MAX_ATTEMPTS": "0"}, "JOB_MAX_ATTEMPTS"),
        ({"JOB_TIME_LIMIT": "-1"}, "JOB_TIME_LIMIT"),
        ({"JOB_TIME_LIMIT": "0"}, "JOB_TIME_LIMIT"),  # not quietly the default
        ({"JOB_STUCK_AFTER": "0"}, "JOB_STUCK_AFTER"),
        ({"JOB_STUCK_AFTER": "soon"}, "JOB_STUCK_AFTER"),
    ],
)
def test_bad_job_settings_stop_the_app_naming_the_variable(tmp_path, monkeypatch, env, named):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=named):
        from_environment(str(tmp_path))
    with pytest.raises(ConfigError, match=named):
        create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.db'}"})


def _flipped(gold: bytes, rows: range) -> bytes:
    lines = gold.decode().splitlines()
    for i in rows:
        row = json.loads(lines[i])
        label = row["label"]
        flipped = "false" if label.lower() == "true" else "true"
        row["label"] = flipped.capitalize() if label[0].isupper() else flipped
        lines[i] = json.dumps(row)
    return ("\n".join(lines) + "\n").encode()


def test_a_label_correction_leaves_one_fresh_score_per_subset_and_metric(world, app):
    stored = [_publish(world, 0.6 + 0.1 * n, n, publish=n != 2) for n in (1, 2, 3)]
    stored.append(_publish(world, 0.7, 4, split="test-u"))
    label_audits.correct_labels(world["admin"], "nlvr2", "dev", _flipped(world["gold"], range(0, 240, 7)), "fix")
    db.session.rollback()
    split = catalog.get_split("nlvr2", "dev", with_subsets=True)
    task = get_task(split.benchmark.task_type)
    gold = label_files.load_gold(split)
    subsets = {subset.name: subset.indices for subset in split.subsets}
    for submission in stored[:3]:
        rows = db.session.execute(
            select(Score.subset, Score.metric, Score.value).where(Score.submission_id == submission.id)
        ).all()
        counts = Counter((row.subset, row.metric) for row in rows)
        assert counts and set(counts.values()) == {1}, counts
        fresh = task.score_batch(gold, task.decode_many([submission.predictions], gold.n), subsets)[0]
        expected = {(subset, metric): value for subset, metrics in fresh.items() for metric, value in metrics.items()}
        assert {(row.subset, row.metric): row.value for row in rows} == pytest.approx(expected)
    rescorings = db.session.execute(select(Job.state).where(Job.kind == "rescore")).scalars().all()
    assert rescorings == ["done"]  # in-process: run right after the correction's commit


@pytest.mark.parametrize("env", [{"JOB_QUEUE": "bogus"}, {"JOB_HEARTBEAT": "0"}, {"SECRET_KEY": ""}])
def test_a_bad_setting_stops_a_command_with_its_name_and_no_traceback(tmp_path, env):
    """`flask --app wsgi ...` with a wrong setting: the message naming it, exit 2, no traceback."""
    import subprocess
    import sys
    from pathlib import Path

    base = {k: v for k, v in os.environ.items() if not k.startswith(("JOB_", "HOLDOUT_DEMO", "SECRET_KEY"))}
    environment = base | {"DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "SECRET_KEY": "k" * 64} | env
    if not environment["SECRET_KEY"]:
        del environment["SECRET_KEY"]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "flask"), "--app", "wsgi", "jobs", "list"],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    named = next(iter(env))
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr + done.stdout
