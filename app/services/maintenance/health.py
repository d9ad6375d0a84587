"""What /healthz reports: room in the stores and the job queue's state, and whether either needs a person.

Degraded only on what an operator must act on: a store short of room, a job that failed (the newest finished
run of its purpose, not dismissed: rerun it or dismiss it), a job waiting or running past JOB_STUCK_AFTER, or a
database that does not answer. A letter to an address the mail server refuses for good is not among them: it
is recorded against the address (app/services/mail/undeliverable.py), not as a failed job."""

from __future__ import annotations

import logging

from sqlalchemy.exc import SQLAlchemyError

from app.services.jobs import console as jobs
from app.services.storage import capacity

log = logging.getLogger(__name__)


def report() -> dict:
    """{"status": "ok" | "degraded", "queue": {...}, "problems": [...] when degraded}. Never raises: a health
    check that fails with the database would say less than one that says the database is unreachable."""
    problems = list(capacity.problems())
    try:
        state = jobs.queue_state()
        queue: dict = state.as_dict()
        if state.failed or state.stuck:
            problems.append(
                f"jobs: {state.failed} failed (rerun or dismiss them), {state.stuck} waiting or running too long "
                "(see /console/jobs or `flask jobs list --state attention`)"
            )
    except SQLAlchemyError as exc:
        log.warning("health check: the job queue could not be read: %s", exc)
        queue = {"error": "the database did not answer"}
        problems.append("jobs: the queue could not be read (the database did not answer)")
    body: dict = {"status": "degraded" if problems else "ok", "queue": queue}
    if problems:
        body["problems"] = problems
    return body


def queue_gauges() -> dict | None:
    """The queue's state for /metrics (None when the database does not answer: the scrape still works)."""
    try:
        return jobs.queue_state().as_dict()
    except SQLAlchemyError as exc:
        log.warning("metrics: the job queue could not be read: %s", exc)
        return None
