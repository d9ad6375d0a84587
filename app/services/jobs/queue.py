"""The jobs table as a queue: queue a job in the caller's transaction (one waiting job per key: changes that
arrive meanwhile are folded into it), claim it, run it with a heartbeat and a time limit, retry it with
backoff, give up after JOB_MAX_ATTEMPTS; a run whose worker died (no heartbeat) is taken again. Every run
keeps its state, attempts and last error, which the console, `flask jobs` and /healthz read.

Who runs a job is the transport's business (app/services/jobs/transport.py): `flask worker` processes on
PostgreSQL (procrastinate), or, in-process ("inline", SQLite and `make run`), the process that queued it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import CursorResult, and_, delete, exists, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, aliased

from app import observability, settings
from app.db import db, own_session
from app.models import Job, as_utc, utcnow

log = logging.getLogger(__name__)

WAITING = text("state = 'queued' AND attempts = 0")  # the coalescing index's condition (models.Job)
STALLED_BEATS = 6  # a running job without a heartbeat for this many beats (JOB_HEARTBEAT) lost its worker
BACKOFF_SECONDS = 5.0  # a retry waits 5 s, 20 s, 80 s ... (x4 per attempt), at most MAX_BACKOFF_SECONDS
MAX_BACKOFF_SECONDS = 600.0
KEEP_DONE_DAYS = 7  # finished runs kept for the console; older ones are pruned by the worker
ERROR_CHARS = 2000


class JobTimedOut(RuntimeError):
    """A job ran past its time limit (raised at its next check, between two units of its work)."""


class Deadline:
    """A job's time limit, checked by its handler between units of work (a thread cannot be stopped), and
    whether this run is its last try (`last_try`: a handler may then make an outcome of what it would
    otherwise leave to a retry)."""

    def __init__(self, seconds: float, *, last_try: bool = False):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.last_try = last_try

    def check(self) -> None:
        if time.monotonic() > self.ends:
            raise JobTimedOut(f"ran longer than its time limit of {self.seconds:g} s (JOB_TIME_LIMIT)")


@dataclass(frozen=True)
class Kind:
    name: str
    run: Callable[[dict, Deadline], str]  # does the work (committing it) and says what it did, briefly
    # In-process: run right after the commit that queued it (rescoring: its callers read the scores next);
    # else when something asks (a reader of the board, the end of the request that queued it).
    eager_inline: bool = False
    # In-process: run right after the commit in a thread of its own, so the request does not wait for it
    # (mail: an SMTP server may take seconds).
    background_inline: bool = False


_kinds: dict[str, Kind] = {}


def register(
    name: str, run: Callable[[dict, Deadline], str], *, eager_inline: bool = False, background_inline: bool = False
) -> None:
    """Make a kind of job known (the service that owns the work registers it when imported)."""
    _kinds[name] = Kind(name, run, eager_inline, background_inline)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:120]


# --- queueing ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Queued:
    id: int
    kind: str
    key: str
    delay: float = 0.0


def enqueue(
    kind: str,
    key: str,
    args: dict | None = None,
    session: Session | None = None,
    *,
    run_after: datetime | timedelta | None = None,
    purpose: str | None = None,
) -> int | None:
    """Queue a job in the session's open transaction: it exists if and only if the caller's changes commit,
    and is handed to its runner after that commit, to run no earlier than `run_after` (a moment, or a time
    after its queueing; None: at once). None
    when a job of this key is already waiting (it will see these changes too: jobs read the state they work
    on when they run). `purpose` (the key unless given): the newest finished run of a purpose says whether it
    needs a person (models.Job.purpose)."""
    session = session or db.session()
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    now = utcnow()
    if isinstance(run_after, timedelta):
        run_after = now + run_after
    due = max(now, run_after) if run_after is not None else now
    statement = (
        insert(Job)
        .values(
            kind=kind,
            key=key,
            purpose=(purpose or key)[:80],
            args=json.dumps(args or {}),
            state="queued",
            attempts=0,
            queued_at=now,
            run_after=due,
        )
        .on_conflict_do_nothing(index_elements=[Job.key], index_where=WAITING)
        .returning(Job.id)
    )
    job_id = session.execute(statement).scalar()
    if job_id is not None:
        # A second more, so that its runner, woken by another clock, does not find it not yet due.
        handed = math.ceil((due - now).total_seconds()) + 1 if due > now else 0.0
        session.info.setdefault("jobs_queued", []).append(Queued(job_id, kind, key, handed))
    return job_id


def drop_waiting(key: str, session: Session | None = None) -> int:
    """Forget, in the session's open transaction, the jobs of this key not yet started or waiting to be
    retried (work no longer wanted); a running one finishes. How many were dropped."""
    session = session or db.session()
    return cast(
        CursorResult,
        session.execute(
            delete(Job).where(Job.key == key, Job.state == "queued").execution_options(synchronize_session=False)
        ),
    ).rowcount


def queued_in(session: Session) -> list[Queued]:
    """The jobs the session's committed transaction queued (taken: each is handed over once)."""
    return session.info.pop("jobs_queued", [])


def forget_queued(session: Session) -> None:
    session.info.pop("jobs_queued", None)


# --- running -----------------------------------------------------------------------------------------------


def heartbeat_seconds() -> float:
    return settings.current().job_heartbeat


def stalled_seconds() -> float:
    return STALLED_BEATS * heartbeat_seconds()


def _stale(now: datetime):
    return Job.heartbeat_at < now - timedelta(seconds=stalled_seconds())


def _claim(job_id: int) -> Job | None | str:
    """Take the job for this process: a waiting one that is due, or a running one whose worker died. None if
    there is nothing to do (done, failed, taken, not yet due); "busy" while another run of its key is alive
    (one job per key at a time: a board is built by one worker)."""
    now = utcnow()
    twin = aliased(Job)
    alive_twin = exists().where(
        twin.key == Job.key,
        twin.id != Job.id,
        twin.state == "running",
        twin.heartbeat_at >= now - timedelta(seconds=stalled_seconds()),
    )
    claimable = or_(and_(Job.state == "queued", Job.run_after <= now), and_(Job.state == "running", _stale(now)))
    taken = cast(
        CursorResult,
        db.session.execute(
            update(Job)
            .where(Job.id == job_id, claimable, ~alive_twin)
            .values(
                state="running",
                attempts=Job.attempts + 1,
                started_at=now,
                heartbeat_at=now,
                finished_at=None,
                worker=worker_name(),
            )
            .execution_options(synchronize_session=False)
        ),
    ).rowcount
    db.session.commit()
    if taken:
        return db.session.get(Job, job_id)
    state = db.session.execute(select(Job.state, Job.run_after).where(Job.id == job_id)).first()
    if state is not None and state.state == "queued" and as_utc(state.run_after) <= now:
        return "busy"
    return None


class _Heartbeat:
    """Marks the running job alive every JOB_HEARTBEAT seconds, on a connection of its own, until stopped."""

    def __init__(self, job_id: int):
        self.job_id, self.engine, self.stopped = job_id, db.engine, threading.Event()
        self.every = heartbeat_seconds()
        self.thread = threading.Thread(target=self._beat, name=f"holdout-heartbeat-{job_id}", daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                with self.engine.begin() as connection:
                    connection.execute(
                        update(Job).where(Job.id == self.job_id, Job.state == "running").values(heartbeat_at=utcnow())
                    )
            except Exception as exc:  # a missed beat is retried; the job goes on
                log.warning("job %s: heartbeat not stored: %s", self.job_id, exc)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def backoff(attempts: int) -> float:
    return min(BACKOFF_SECONDS * 4 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS)


@dataclass(frozen=True)
class Outcome:
    state: str  # done, queued (to be retried), failed, busy (its key is being worked on), none (nothing to do)
    job: Queued | None = None  # the job, to hand to its runner again when it is to be retried


def run(job_id: int) -> Outcome:
    """Claim the job and run it, in a session of its own; record how it ended."""
    with own_session():
        claimed = _claim(job_id)
        if claimed == "busy":
            return Outcome("busy")
        if not isinstance(claimed, Job):
            return Outcome("none")
        job = claimed
        kind, key, attempts, args = job.kind, job.key, job.attempts, json.loads(job.args or "{}")
        config = settings.current()
        started = time.perf_counter()
        heartbeat = _Heartbeat(job_id)
        failure: Exception | None = None
        result = ""
        try:
            handler = _kinds.get(kind)
            if handler is None:
                raise LookupError(f"no handler for jobs of kind {kind!r} in this process")
            result = handler.run(args, Deadline(config.job_time_limit, last_try=attempts >= config.job_max_attempts))
        except Exception as exc:
            failure = exc
            db.session.rollback()
        finally:
            heartbeat.stop()
        seconds = time.perf_counter() - started
        if failure is not None:
            return _failed(job_id, kind, key, attempts, config.job_max_attempts, failure, seconds)
        db.session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(state="done", finished_at=utcnow(), error=None, result=(result or "")[:ERROR_CHARS])
        )
        db.session.commit()
        observability.job_attempt(kind, "done", seconds)
        return Outcome("done")


def _failed(job_id: int, kind: str, key: str, attempts: int, limit: int, exc: Exception, seconds: float) -> Outcome:
    message = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
    retry = attempts < limit
    delay = backoff(attempts)
    log.error(
        "job %s (%s %s) attempt %s failed%s: %s", job_id, kind, key, attempts, ", will retry" if retry else "", message
    )
    values: dict = {"error": message, "finished_at": utcnow()}
    if retry:
        values.update(state="queued", run_after=utcnow() + timedelta(seconds=delay))
    else:
        values.update(state="failed")
    db.session.execute(update(Job).where(Job.id == job_id).values(values))
    db.session.commit()
    observability.job_attempt(kind, "retried" if retry else "failed", seconds)
    return Outcome("queued", Queued(job_id, kind, key, delay)) if retry else Outcome("failed")


def due(limit: int = 20, key: str | None = None) -> list[Queued]:
    """Waiting jobs that are due (oldest first), or of one key."""
    now = utcnow()
    query = select(Job.id, Job.kind, Job.key).where(Job.state == "queued", Job.run_after <= now)
    if key is not None:
        query = query.where(Job.key == key)
    return [Queued(*row) for row in db.session.execute(query.order_by(Job.id).limit(limit))]


def waiting_since(key: str) -> datetime | None:
    """When the oldest job of this key still waiting or running was queued (None: none is)."""
    found = db.session.scalar(
        select(func.min(Job.queued_at)).where(Job.key == key, Job.state.in_(("queued", "running")))
    )
    return as_utc(found) if found is not None else None


def last_started(key: str, session: Session | None = None) -> datetime | None:
    """When the latest run of this key began (None: none is kept)."""
    found = (session or db.session()).scalar(select(func.max(Job.started_at)).where(Job.key == key))
    return as_utc(found) if found is not None else None


def failed_since(key: str) -> datetime | None:
    """When the job of this key that failed within the last JOB_STUCK_AFTER seconds was queued (None: none)."""
    recent = utcnow() - timedelta(seconds=settings.current().job_stuck_after)
    found = db.session.scalar(
        select(func.max(Job.queued_at)).where(Job.key == key, Job.state == "failed", Job.finished_at >= recent)
    )
    return as_utc(found) if found is not None else None


def recover_stalled() -> list[Queued]:
    """Runs whose worker stopped beating (killed, machine lost): queued again (or failed, out of attempts)."""
    now = utcnow()
    limit = settings.current().job_max_attempts
    rows = db.session.execute(
        select(Job.id, Job.kind, Job.key, Job.attempts).where(Job.state == "running", _stale(now))
    ).all()
    back = []
    for row in rows:
        retry = row.attempts < limit
        changed = cast(
            CursorResult,
            db.session.execute(
                update(Job)
                .where(Job.id == row.id, Job.state == "running", _stale(now))
                .values(
                    state="queued" if retry else "failed",
                    run_after=now,
                    finished_at=now,
                    error=f"its worker stopped (no heartbeat for {stalled_seconds():g} s)",
                )
            ),
        ).rowcount
        if changed and retry:
            back.append(Queued(row.id, row.kind, row.key))
    db.session.commit()
    return back


def prune(days: int = KEEP_DONE_DAYS) -> int:
    """Forget finished runs older than `days` (a publication queues one job: the table would only grow)."""
    old = utcnow() - timedelta(days=days)
    removed = cast(
        CursorResult, db.session.execute(delete(Job).where(Job.state == "done", Job.finished_at < old))
    ).rowcount
    db.session.commit()
    return removed
