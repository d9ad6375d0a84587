"""What maintainers see of the jobs (the console's page, `flask jobs`, /healthz): the queue's state, the runs
that need a person (failed, not dismissed and the newest finished run of their purpose, or waiting or running
past JOB_STUCK_AFTER), a rerun and a dismissal."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.orm import aliased

from app import settings
from app.db import db
from app.models import Benchmark, Job, Split, as_utc, utcnow
from app.services.errors import Conflict, NotFound
from app.services.jobs import queue, transport


@dataclass(frozen=True)
class JobRow:
    id: int
    kind: str
    key: str
    state: str
    attempts: int
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    worker: str | None
    error: str | None
    result: str | None
    stuck: bool  # waiting or running for longer than JOB_STUCK_AFTER
    # What it works on, as people name it ("nlvr2/test-u"); else its purpose ("mail:verify:7": a letter's key
    # ends in a random part that says nothing)
    target: str = ""
    dismissed: bool = False  # a failed run a maintainer let be


def _unresolved_failure():
    """A failed run that needs a person: not dismissed, and the newest finished run of its purpose (a later
    success, a rerun or the next change's job, clears it; a later failure is the one that counts instead, so a
    rerun that fails again is one failure, not two)."""
    later = aliased(Job)
    return and_(
        Job.state == "failed",
        Job.dismissed_at.is_(None),
        ~exists().where(later.purpose == Job.purpose, later.id > Job.id, later.state.in_(("done", "failed"))),
    )


def _stuck(now: datetime):
    old = now - timedelta(seconds=settings.current().job_stuck_after)
    return and_(Job.state.in_(("queued", "running")), Job.queued_at < old)


def _split_id(key: str) -> int | None:
    _, _, rest = key.partition(":")
    return int(rest) if rest.isdigit() else None


def _split_names(keys: set[str]) -> dict[str, str]:
    """ "benchmark/split" for keys of the form "<kind>:<split id>" (a board's, a rescoring's)."""
    ids = {split_id for key in keys if (split_id := _split_id(key)) is not None}
    if not ids:
        return {}
    names = {
        split_id: f"{benchmark}/{split}"
        for split_id, benchmark, split in db.session.execute(
            select(Split.id, Benchmark.slug, Split.slug).join(Benchmark).where(Split.id.in_(ids))
        )
    }
    return {key: names[split_id] for key in keys if (split_id := _split_id(key)) in names}


def _rows(query, now: datetime) -> list[JobRow]:
    limit = timedelta(seconds=settings.current().job_stuck_after)
    found = []
    jobs = list(db.session.scalars(query))
    names = _split_names({job.key for job in jobs})
    for job in jobs:
        queued_at = as_utc(job.queued_at)
        found.append(
            JobRow(
                job.id,
                job.kind,
                job.key,
                job.state,
                job.attempts,
                queued_at,
                as_utc(job.started_at) if job.started_at else None,
                as_utc(job.finished_at) if job.finished_at else None,
                job.worker,
                job.error,
                job.result,
                job.state in ("queued", "running") and now - queued_at > limit,
                names.get(job.key, job.purpose),
                job.dismissed_at is not None,
            )
        )
    return found


def listing(state: str | None = None, limit: int = 50) -> list[JobRow]:
    """The newest runs, of one state ("attention": failed, not dismissed and not since finished again, or
    stuck) or all."""
    now = utcnow()
    query = select(Job).order_by(Job.id.desc()).limit(limit)
    if state == "attention":
        query = query.where(or_(_unresolved_failure(), _stuck(now)))
    elif state:
        query = query.where(Job.state == state)
    return _rows(query, now)


@dataclass(frozen=True)
class QueueState:
    waiting: int  # queued (due or backing off)
    running: int
    oldest_s: float  # age of the oldest job waiting or running (0 when none)
    failed: int  # failed, not dismissed, and the newest finished run of its purpose
    stuck: int

    def as_dict(self) -> dict:
        return {
            "waiting": self.waiting,
            "running": self.running,
            "oldest_s": round(self.oldest_s, 1),
            "failed": self.failed,
            "stuck": self.stuck,
        }


def queue_state() -> QueueState:
    now = utcnow()
    rows = db.session.execute(
        select(Job.state, func.count()).where(Job.state.in_(("queued", "running"))).group_by(Job.state)
    )
    counts: dict[str, int] = {row[0]: row[1] for row in rows}
    oldest = db.session.scalar(select(func.min(Job.queued_at)).where(Job.state.in_(("queued", "running"))))
    failed = db.session.scalar(select(func.count()).select_from(Job).where(_unresolved_failure())) or 0
    stuck = db.session.scalar(select(func.count()).select_from(Job).where(_stuck(now))) or 0
    return QueueState(
        counts.get("queued", 0),
        counts.get("running", 0),
        max((now - as_utc(oldest)).total_seconds(), 0.0) if oldest is not None else 0.0,
        failed,
        stuck,
    )


def rerun(job_id: int) -> int:
    """Queue the failed or stuck job's work again (a new run of its key, or the one already waiting);
    returns the id of the run that will do it."""
    job = db.session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    now = utcnow()
    stuck_running = (
        job.state == "running"
        and job.heartbeat_at is not None
        and (now - as_utc(job.heartbeat_at)).total_seconds() > queue.stalled_seconds()
    )
    if job.state == "queued":
        # Waiting for its backoff (or for a worker): due now.
        job.run_after = now
        db.session.commit()
        transport.hand_over([queue.Queued(job.id, job.kind, job.key)])
        return job.id
    if job.state == "done" or (job.state == "running" and not stuck_running):
        raise Conflict(f"job {job_id} is {job.state}: nothing to rerun")
    if stuck_running:
        job.state, job.error, job.finished_at = "failed", "taken back by a maintainer (no heartbeat)", now
    new_id = queue.enqueue(job.kind, job.key, json.loads(job.args or "{}"), purpose=job.purpose)
    if new_id is None:  # a run of its key is waiting already: it does this work
        new_id = db.session.scalar(
            select(Job.id).where(Job.key == job.key, Job.state == "queued", Job.attempts == 0).limit(1)
        )
    db.session.commit()
    return int(new_id or 0)


def _dismissable(job_id: int) -> Job:
    job = db.session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.state != "failed":
        raise Conflict(f"job {job_id} is {job.state}: only a failed job can be dismissed")
    if job.dismissed_at is not None:
        raise Conflict(f"job {job_id} was dismissed already")
    return job


def dismiss_many(job_ids: list[int]) -> list[int]:
    """Let failed runs be: they no longer count as needing a person (/healthz, the console, `flask jobs list`);
    their records stay and they can still be rerun. All or none (one that cannot be dismissed is named in
    the refusal); the ids dismissed."""
    ids = list(dict.fromkeys(job_ids))
    jobs = [_dismissable(job_id) for job_id in ids]
    now = utcnow()
    for job in jobs:
        job.dismissed_at = now
    db.session.commit()
    return ids


def rerun_many(job_ids: list[int], all_failed: bool = False) -> list[tuple[int, int]]:
    """rerun() each job, or with `all_failed` every failed job not since done; (old id, new id) pairs."""
    if all_failed:
        job_ids = [*job_ids, *db.session.scalars(select(Job.id).where(_unresolved_failure()).order_by(Job.id))]
    return [(job_id, rerun(job_id)) for job_id in dict.fromkeys(job_ids)]
