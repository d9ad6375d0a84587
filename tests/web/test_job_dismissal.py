"""Issue 35, finding 2: a failed job a maintainer has looked at can be dismissed (console and CLI, audited), and
then no longer makes /healthz degraded; a rerun that fails again is one failure, not two. Nobody else can."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import db
from app.models import AuditEvent, Job
from app.services.jobs import console, queue
from tests.support.browser import csrf_token, login
from tests.support.users import PASSWORD, make_user


@pytest.fixture
def broken(app):
    """A kind of job that always fails, tried once; forgotten afterwards."""

    def fail(args, deadline):
        raise RuntimeError("the disk is full")

    app.config["JOB_MAX_ATTEMPTS"] = 1
    queue.register("test-broken", fail)
    yield
    queue._kinds.pop("test-broken", None)


def _failed_job(app, key: str) -> int:
    with app.app_context():
        job_id = queue.enqueue("test-broken", key, {})
        db.session.commit()
        assert queue.run(job_id).state == "failed"
        return job_id


def _health(app) -> dict:
    return app.test_client().get("/healthz").get_json()


def _events(app) -> list[tuple[str, str, int | None]]:
    with app.app_context():
        events = db.session.scalars(select(AuditEvent).order_by(AuditEvent.id))
        return [(event.action, event.target, event.actor_id) for event in events]


def test_a_failed_job_dismissed_in_the_console_or_the_cli_no_longer_degrades_health(app, broken):
    first = _failed_job(app, "thing:1")
    # A rerun that fails again replaces the failure it retried (the newest run of its purpose counts).
    with app.app_context():
        again = console.rerun(first)
        assert queue.run(again).state == "failed"
    second = _failed_job(app, "thing:2")
    health = _health(app)
    assert health["status"] == "degraded" and health["queue"]["failed"] == 2

    with app.app_context():
        admin = make_user("root@example.org", admin=True).id
        make_user("someone@example.org")
    stranger = app.test_client()
    assert login(stranger, "someone@example.org", PASSWORD).status_code == 302
    token = csrf_token(stranger, "/account")
    assert stranger.post(f"/console/jobs/{again}/dismiss", data={"csrf_token": token}).status_code == 403
    assert _health(app)["queue"]["failed"] == 2 and _events(app) == []

    maintainer = app.test_client()
    assert login(maintainer, "root@example.org", PASSWORD).status_code == 302
    page = maintainer.get("/console/jobs").get_data(as_text=True)
    assert f"/console/jobs/{again}/dismiss" in page
    assert maintainer.post(f"/console/jobs/{again}/dismiss").status_code in (303, 400)  # no CSRF token: nothing
    assert _health(app)["queue"]["failed"] == 2
    token = csrf_token(maintainer, "/console/jobs")
    done = maintainer.post(f"/console/jobs/{again}/dismiss", data={"csrf_token": token}, follow_redirects=True)
    assert done.status_code == 200 and f"Job {again} dismissed" in done.get_data(as_text=True)
    assert _health(app)["queue"]["failed"] == 1
    refused = maintainer.post(f"/console/jobs/{again}/dismiss", data={"csrf_token": token}, follow_redirects=True)
    assert "dismissed already" in refused.get_data(as_text=True)

    runner = app.test_cli_runner()
    listed = runner.invoke(args=["jobs", "list", "--state", "attention"])
    assert listed.exit_code == 1 and f"{second:>7}" in listed.output
    result = runner.invoke(args=["jobs", "dismiss", str(second)])
    assert result.exit_code == 0, result.output
    assert f"job {second}: dismissed" in result.output
    assert runner.invoke(args=["jobs", "list", "--state", "attention"]).exit_code == 0
    health = _health(app)
    assert health["status"] == "ok" and "problems" not in health
    assert _events(app) == [
        ("jobs.dismiss", f"jobs {again}", admin),
        ("jobs.dismiss", f"jobs {second}", None),
    ]
    # Only a failed job can be dismissed, and the refusal names why (exit 2, no traceback).
    with app.app_context():
        waiting = queue.enqueue("test-broken", "thing:3", {})
        db.session.commit()
    refused_cli = runner.invoke(args=["jobs", "dismiss", str(waiting)])
    assert refused_cli.exit_code == 2 and "only a failed job can be dismissed" in refused_cli.output
    assert "Traceback" not in refused_cli.output
    with app.app_context():
        assert db.session.get(Job, waiting).dismissed_at is None
        assert db.session.get(Job, first).dismissed_at is None  # replaced by its rerun, not dismissed
