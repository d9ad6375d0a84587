"""The job queue (issue 26): a waiting job per key, retries with backoff, giving up, a time limit, a dead
worker's job taken back, the console's view, and readers served the last finished board while workers build
the next (the workers are stood in for here; tests/load/test_job_worker.py runs real ones on PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app import synthetic
from app.db import db
from app.models import Job, Submission, as_utc, utcnow
from app.services import catalog
from app.services.boards import board_snapshots, leaderboards
from app.services.errors import Conflict
from app.services.intake import submissions
from app.services.jobs import console, queue, transport
from app.services.maintenance import health, maintainer_actions
from tests.support.submission_world import build_submission_world

pytestmark = pytest.mark.postgres(
    reason="the queue's coalescing is a partial unique index and INSERT ... ON CONFLICT, per dialect"
)


@pytest.fixture
def world(ctx):
    return build_submission_world()


@pytest.fixture
def kinds():
    """Kinds of job of the test's own, forgotten afterwards."""
    calls: list[dict] = []
    added: list[str] = []

    def add(name, run):
        queue.register(name, run)
        added.append(name)

    yield add, calls
    for name in added:
        queue._kinds.pop(name, None)


def _job(job_id: int) -> Job:
    db.session.rollback()
    found = db.session.get(Job, job_id)
    assert found is not None
    return found


def test_changes_arriving_while_a_job_waits_are_folded_into_it(ctx, kinds):
    add, calls = kinds
    add("test-fold", lambda args, deadline: calls.append(args) or "ok")
    first = queue.enqueue("test-fold", "thing:1", {"n": 1})
    second = queue.enqueue("test-fold", "thing:1", {"n": 2})
    other = queue.enqueue("test-fold", "thing:2", {"n": 3})
    db.session.commit()
    assert first is not None and second is None and other is not None
    assert queue.run(first).state == "done" and calls == [{"n": 1}]
    # Once it has started, a new change queues a new job (it may have read the state before the change).
    again = queue.enqueue("test-fold", "thing:1", {"n": 4})
    db.session.commit()
    assert again is not None and again != first


def test_a_failing_job_is_retried_with_backoff_then_given_up_and_shown(ctx, kinds, app):
    add, calls = kinds
    app.config["JOB_MAX_ATTEMPTS"] = 3

    def broken(args, deadline):
        calls.append(args)
        raise RuntimeError("the gold file is unreadable")

    add("test-broken", broken)
    job_id = queue.enqueue("test-broken", "thing:9", {})
    db.session.commit()
    failed_after = utcnow()  # the backoff counts from the failure: no race with the clock after it
    outcome = queue.run(job_id)
    job = _job(job_id)
    assert outcome.state == "queued" and outcome.job is not None and outcome.job.delay == queue.backoff(1)
    assert job.state == "queued" and job.attempts == 1 and "the gold file is unreadable" in job.error
    assert as_utc(job.run_after) >= failed_after + timedelta(seconds=queue.backoff(1))
    assert queue.run(job_id).state == "none"  # not due yet: its backoff
    for attempt in (2, 3):
        db.session.execute(update(Job).where(Job.id == job_id).values(run_after=utcnow()))
        db.session.commit()
        outcome = queue.run(job_id)
        assert _job(job_id).attempts == attempt
    assert outcome.state == "failed" and _job(job_id).state == "failed" and len(calls) == 3
    assert queue.backoff(1) < queue.backoff(2) < queue.backoff(3)
    state = console.queue_state()
    assert state.failed == 1 and state.waiting == 0
    assert [row.id for row in console.listing("attention")] == [job_id]
    assert health.report()["status"] == "degraded" and health.report()["queue"]["failed"] == 1
    # The console's rerun: a new run of its key; once that is done, the failure no longer needs anyone.
    add("test-broken", lambda args, deadline: "fixed")
    ((old, new),) = maintainer_actions.rerun_jobs(None, [job_id], via="console")
    assert old == job_id and new != job_id
    assert _job(new).state == "queued"
    assert transport.run_due_here() >= 1  # in-process: whoever asks first (a reader, `flask jobs run`)
    assert _job(new).state == "done"
    assert console.queue_state().failed == 0 and console.listing("attention") == []
    with pytest.raises(Conflict):
        console.rerun(new)


def test_a_job_past_its_time_limit_is_stopped_at_its_next_check(ctx, kinds, app):
    add, _ = kinds
    app.config["JOB_TIME_LIMIT"] = 0.01
    app.config["JOB_MAX_ATTEMPTS"] = 1

    def slow(args, deadline):
        while True:
            deadline.check()

    add("test-slow", slow)
    job_id = queue.enqueue("test-slow", "thing:3", {})
    db.session.commit()
    assert queue.run(job_id).state == "failed"
    assert "time limit of 0.01 s" in _job(job_id).error


def test_a_job_whose_worker_died_is_taken_back(ctx, kinds, app):
    add, calls = kinds
    add("test-dead", lambda args, deadline: calls.append(1) or "ok")
    job_id = queue.enqueue("test-dead", "thing:4", {})
    db.session.commit()
    long_ago = utcnow() - timedelta(seconds=queue.stalled_seconds() + 5)
    db.session.execute(
        update(Job)
        .where(Job.id == job_id)
        .values(state="running", attempts=1, heartbeat_at=long_ago, started_at=long_ago)
    )
    db.session.commit()
    back = queue.recover_stalled()
    assert [job.id for job in back] == [job_id]
    job = _job(job_id)
    assert job.state == "queued" and "its worker stopped" in job.error
    assert queue.run(job_id).state == "done" and calls == [1] and _job(job_id).attempts == 2


def test_a_live_run_of_a_key_keeps_the_next_one_waiting(ctx, kinds):
    add, _ = kinds
    add("test-busy", lambda args, deadline: "ok")
    running = queue.enqueue("test-busy", "thing:5", {})
    db.session.commit()
    db.session.execute(update(Job).where(Job.id == running).values(state="running", attempts=1, heartbeat_at=utcnow()))
    db.session.commit()
    waiting = queue.enqueue("test-busy", "thing:5", {})
    db.session.commit()
    assert queue.run(waiting).state == "busy" and _job(waiting).state == "queued"


def _publish(world, accuracy: float, seed: int) -> Submission:
    split = catalog.get_split("nlvr2", "dev")
    data = synthetic.predictions("nlvr2", world["gold"], accuracy, seed=seed)
    return submissions.store_scored(split, world["lab"], data, model_name=f"m{seed}", description="d", publish=True)


def _with_workers(world, app, monkeypatch) -> list[queue.Queued]:
    """One entry on a built board, then JOB_QUEUE=procrastinate with the workers stood in for: what is handed
    to them is collected (and never run)."""
    _publish(world, 0.7, 1)
    board_snapshots.snapshot(catalog.get_split("nlvr2", "dev"))
    handed: list[queue.Queued] = []
    monkeypatch.setattr(transport, "defer", lambda job: handed.append(job) or True)
    app.config["JOB_QUEUE"] = "procrastinate"
    return handed


def test_readers_get_the_last_finished_board_while_workers_build_the_next(world, app, monkeypatch):
    """With workers (JOB_QUEUE=procrastinate), a change queues the board's job and readers never compute:
    they are served the board as it was, marked as updating, less an entry hidden since."""
    first = _publish(world, 0.7, 1)
    second = _publish(world, 0.8, 2)
    board_snapshots.snapshot(catalog.get_split("nlvr2", "dev"))  # the last finished board: two entries
    handed: list[queue.Queued] = []
    monkeypatch.setattr(transport, "defer", lambda job: handed.append(job) or True)
    app.config["JOB_QUEUE"] = "procrastinate"
    third = _publish(world, 0.9, 3)
    maintainer_actions.hide_entry(world["admin"], first.id, "a duplicate")
    # One job handed to the workers: the hiding's change was folded into the publication's waiting job.
    assert [job.kind for job in handed] == ["board"]
    board = leaderboards.board("nlvr2", "dev")
    assert board.snapshot is not None and board.snapshot.updating_since is not None
    assert [entry.submission_id for entry in board.entries] == [second.id]  # hidden at once, new one not yet
    assert console.queue_state().waiting == 1
    # A worker's run of the job (here, in this process) makes the board current.
    assert transport.run_due_here() == 1
    board = leaderboards.board("nlvr2", "dev")
    assert board.snapshot.updating_since is None
    assert [entry.submission_id for entry in board.entries] == [third.id, second.id]
    db.session.rollback()
    assert db.session.scalar(select(Job.state).where(Job.id == handed[0].id)) == "done"


def _board_jobs(split) -> list[str]:
    db.session.rollback()
    return list(db.session.scalars(select(Job.state).where(Job.key == board_snapshots.board_key(split.id))))


def test_a_held_board_queues_no_job_until_its_scores_are_shown(world, app, monkeypatch):
    """Nobody may read a held board (a blind test under `ladder` or `none` before its reveal), so no job is queued
    for it (in-process, where a board's job waited for its reader, it waited for ever and /healthz called it
    stuck: issue 34). One queued while its scores were shown is dropped when they are held; the reveal queues
    the job that builds it. With workers (stood in for): in-process no board job is queued at all."""
    monkeypatch.setattr(transport, "defer", lambda job: True)
    app.config["JOB_QUEUE"] = "procrastinate"
    split = catalog.get_split("nlvr2", "test-u")
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    data = synthetic.predictions("nlvr2", world["hidden_gold"], 0.7, seed=1)
    submissions.store_scored(split, world["lab"], data, model_name="m1", description="d", publish=True)
    assert _board_jobs(split) == ["queued"]  # shown under `full`: a worker builds it
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    assert _board_jobs(split) == []  # held now: the waiting job is dropped
    data = synthetic.predictions("nlvr2", world["hidden_gold"], 0.8, seed=2)
    submissions.store_scored(split, world["lab"], data, model_name="m2", description="d", publish=True)
    assert _board_jobs(split) == [] and console.queue_state().waiting == 0
    catalog.reveal_split("nlvr2", "test-u")
    # The reveal's letters go beside (inline mail): let them be sent first, or the board job's transaction, which
    # reads before it writes, may lose the race with their commits ("database is locked"; it would be retried).
    assert transport.wait_beside()
    assert _board_jobs(split) == ["queued"]
    assert transport.run_due_here() >= 1 and _board_jobs(split) == ["done"]  # with the reveal's letters
    assert [entry.model_name for entry in leaderboards.board("nlvr2", "test-u").entries] == ["m2", "m1"]


def test_a_board_job_lost_on_its_way_is_queued_again_by_its_reader(world, app, monkeypatch):
    _with_workers(world, app, monkeypatch)
    _publish(world, 0.8, 2)
    db.session.execute(update(Job).where(Job.state == "queued").values(state="failed", error="lost"))
    db.session.commit()
    board = leaderboards.board("nlvr2", "dev")
    assert board.snapshot.updating_since is not None
    db.session.rollback()
    assert db.session.scalar(select(Job.id).where(Job.kind == "board", Job.state == "queued")) is not None


def test_a_board_whose_job_failed_is_not_queued_again_at_every_view(world, app, monkeypatch):
    _with_workers(world, app, monkeypatch)
    _publish(world, 0.8, 2)
    db.session.execute(update(Job).where(Job.state == "queued").values(state="failed", finished_at=utcnow()))
    db.session.commit()
    for _ in range(3):
        assert leaderboards.board("nlvr2", "dev").snapshot.updating_since is not None
    db.session.rollback()
    assert db.session.scalar(select(Job.id).where(Job.kind == "board", Job.state == "queued")) is None
    assert console.queue_state().failed == 1  # for a person to look at (the console's rerun)


def test_a_publication_through_the_api_never_builds_the_board_in_its_request(world, app, monkeypatch):
    """With workers, the publishing request answers where the entry is from the last finished board: it
    does not build the next one itself (a POST request, which may hold a write lock, included)."""
    from app.services.people import accounts

    _with_workers(world, app, monkeypatch)
    split = catalog.get_split("nlvr2", "dev")
    data = synthetic.predictions("nlvr2", world["gold"], 0.9, seed=5)
    unpublished = submissions.store_scored(split, world["lab"], data, model_name="new", description="d")
    token = accounts.create_token(world["member"], "t")[1]
    built: list[int] = []
    real = board_snapshots._compute
    monkeypatch.setattr(
        board_snapshots, "_compute", lambda split, version: built.append(version) or real(split, version)
    )
    response = app.test_client().post(
        f"/api/v1/submissions/{unpublished.id}/publish",
        json={"description": "A model."},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.json
    assert built == [] and response.json["placement"]["row"] is None  # "the board is being updated"
    db.session.rollback()  # this test's own session: no transaction left open beside the worker's run
    assert transport.run_due_here() == 1 and len(built) == 1  # the worker's job builds it, once


def test_runs_of_one_purpose_answer_for_each_other_whatever_their_keys(ctx, kinds, app):
    """Issue 35, finding 2: a failure stays counted only while it is the newest finished run of its purpose (a
    letter's jobs have a key each but one purpose per kind and account); a dismissed one is not counted."""
    add, _ = kinds
    app.config["JOB_MAX_ATTEMPTS"] = 1
    outcome = {"fail": True}

    def flaky(args, deadline):
        if outcome["fail"]:
            raise RuntimeError("refused for now")
        return "sent"

    add("test-letter", flaky)
    first = queue.enqueue("test-letter", "letter:a", {}, purpose="letter:7")
    other = queue.enqueue("test-letter", "letter:b", {}, purpose="letter:8")
    db.session.commit()
    assert queue.run(first).state == queue.run(other).state == "failed"
    assert console.queue_state().failed == 2 and health.report()["status"] == "degraded"
    outcome["fail"] = False
    later = queue.enqueue("test-letter", "letter:c", {}, purpose="letter:7")
    db.session.commit()
    assert queue.run(later).state == "done"
    assert [row.id for row in console.listing("attention")] == [other]
    console.dismiss_many([other])
    assert console.queue_state().failed == 0 and health.report()["status"] == "ok"
    assert _job(other).state == "failed" and _job(other).dismissed_at is not None  # the record stays


def test_an_address_refused_for_good_is_marked_once_with_its_latest_refusal(ctx):
    from app.services.mail import undeliverable

    undeliverable.mark("Zed@Example.org", 550, "no such user")
    undeliverable.note_skipped("zed@example.org")
    undeliverable.mark("zed@example.org", 553, "mailbox name not allowed")
    (mark,) = undeliverable.listing()
    assert (mark.address, mark.code, mark.skipped) == ("zed@example.org", 553, 1)
    assert mark.reply == "mailbox name not allowed"
    undeliverable.clear("ZED@example.org")
    assert undeliverable.mark_of("zed@example.org") is None


def test_a_letter_asked_for_by_address_shares_its_purpose_with_the_next_to_that_address_alone():
    """A password reset is queued by address (no account id, so nothing tells who has one): its purpose is the
    address's, so a reset delivered after one that failed clears it, and another person's never does."""
    from app.services.mail import outbox

    ann = outbox.purpose_of("reset", {"email": "ann@example.org"})
    assert (
        ann
        == outbox.purpose_of("reset", {"email": "Ann@Example.org"})
        != outbox.purpose_of("reset", {"email": "bob@example.org"})
    )
    assert ann.startswith("mail:reset:") and "ann" not in ann  # the jobs page shows purposes, not addresses
    assert outbox.purpose_of("reset", {}) is None
