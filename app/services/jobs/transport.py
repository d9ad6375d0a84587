"""Who runs a queued job, and when: handed over once the transaction that queued it commits.

- "procrastinate" (PostgreSQL): the job's id is deferred to procrastinate, whose `flask worker` processes (on
  any machine that reaches the database) run it; LISTEN/NOTIFY wakes them at once. A sweep in each worker
  (every two heartbeats, JOB_HEARTBEAT) takes back runs whose worker died and hands over jobs whose hand-over was lost.
- "inline" (SQLite, `make run`, tests): the process runs it: rescoring at once, after the commit that queued
  it (its callers read the scores next); a board when its first reader asks for it (as before there were
  jobs: a board nobody reads is never built), or `flask jobs run`.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from app import settings
from app.db import begin_writes_immediately, db, in_app_context, own_session
from app.services.jobs import queue

log = logging.getLogger(__name__)

QUEUE_NAME = "holdout"
TASK_NAME = "holdout.run_job"
SWEEP_BEATS = 2  # the workers' sweep runs every this many heartbeats (JOB_HEARTBEAT)
BUSY_RETRY_SECONDS = 2  # a job whose key is being worked on is handed over again this much later


@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    queued = queue.queued_in(session)
    if queued:
        hand_over(queued)


@event.listens_for(Session, "after_rollback")
def _rolled_back(session: Session) -> None:
    queue.forget_queued(session)


def hand_over(jobs: list[queue.Queued]) -> None:
    """Give committed jobs to their runner (never raises: a job not handed over is found by the sweep, or
    run by its reader)."""
    if settings.current().job_queue == "procrastinate":
        for job in jobs:
            defer(job)
        return
    for job in jobs:
        kind = queue._kinds.get(job.kind)
        if kind is not None and kind.eager_inline:
            run_inline(job.id)
        elif kind is not None and kind.background_inline:
            if job.delay:  # queued to run later: a timer hands it over then
                _retry_beside(job.id, job.delay)
            else:
                _run_beside(job.id)
        # Any other waits for whoever needs it first: a board's reader (board_snapshots), `flask jobs run`.


BESIDE_THREADS = 4  # jobs run at once beside the requests of one process (inline), the rest wait their turn

_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_beside: list[Future] = []
_retries: list[threading.Timer] = []
_beside_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    """This process's few threads for jobs beside its requests (made after a fork: a server's worker has its
    own). Their threads are not daemons: a command (`flask splits reveal`) that queued mail waits for it
    before it exits. A reveal that mails a thousand members queues a thousand jobs, not a thousand threads."""
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():
        _pool, _pool_pid = ThreadPoolExecutor(BESIDE_THREADS, thread_name_prefix="holdout-job"), os.getpid()
    return _pool


def _run_beside(job_id: int) -> None:
    """Run the job on a thread of this process, beside the request that queued it; a failed attempt is tried
    again here after its backoff (no worker will)."""

    def work() -> None:
        # A job reads, then writes: on SQLite, beside the requests' writers, it must take the lock when it
        # begins (a deferred transaction that writes later fails at once with "database is locked").
        begin_writes_immediately(True)
        try:
            outcome = run_inline(job_id)
        finally:
            begin_writes_immediately(False)  # the thread runs other work next
        if outcome.state == "queued" and outcome.job is not None:
            _retry_beside(job_id, outcome.job.delay)

    with _beside_lock:
        try:
            future = _threads().submit(in_app_context(work))
        except RuntimeError:  # the interpreter is shutting down: the job stays queued for `flask jobs run`
            log.warning("job %s left queued: this process is stopping", job_id)
            return
        _beside[:] = [running for running in _beside if not running.done()]
        _beside.append(future)


def _retry_beside(job_id: int, delay: float) -> None:
    # A daemon timer: a process that exits before it fires leaves the job queued and due, for `flask jobs run`
    # (the console's Jobs page lists it).
    timer = threading.Timer(delay, in_app_context(lambda: _run_beside(job_id)))
    timer.daemon = True
    with _beside_lock:
        _retries[:] = [waiting for waiting in _retries if waiting.is_alive()]
        _retries.append(timer)
    timer.start()


def cancel_retries() -> None:
    """Forget the retries waiting in this process (tests: an app whose database is gone)."""
    with _beside_lock:
        waiting, _retries[:] = list(_retries), []
    for timer in waiting:
        timer.cancel()


def wait_beside(timeout: float = 30.0) -> bool:
    """Wait for the jobs running or waiting beside requests in this process (tests; a graceful stop). True if
    all ended."""
    with _beside_lock:
        pending = list(_beside)
    return not futures.wait(pending, timeout).not_done


def run_inline(job_id: int) -> queue.Outcome:
    """Run a job in this process now (a failed attempt is tried again, once due, by whoever next asks)."""
    try:
        return queue.run(job_id)
    except Exception:  # the job's own failure is recorded by queue.run; this is the queue's (database down)
        log.exception("job %s could not be run in-process", job_id)
        return queue.Outcome("none")


def run_for_key(key: str) -> bool:
    """In-process: run the due job of this key now (a reader whose board is behind, when nothing else
    will). True if one ran to its end."""
    with own_session():
        found = queue.due(limit=1, key=key)
    return bool(found) and run_inline(found[0].id).state == "done"


def inline() -> bool:
    return settings.current().job_queue == "inline"


def uses_workers() -> bool:
    return settings.current().job_queue == "procrastinate"


def worker_label() -> str:
    return queue.worker_name()


def run_due_here() -> int:
    """Run every due job in this process, oldest first, until none is left (`flask jobs run`)."""
    ran, seen = 0, set()
    while True:
        with own_session():
            found = [job for job in queue.due(limit=20) if job.id not in seen]
        if not found:
            return ran
        for job in found:
            seen.add(job.id)
            ran += run_inline(job.id).state == "done"


# --- procrastinate -----------------------------------------------------------------------------------------

_apps: dict[tuple[int, str, str], Any] = {}
_flask_app: Any = None  # the worker's application: its tasks run in an app context of it


def _conninfo() -> str:
    url = db.engine.url
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def procrastinate_app(role: str = "worker"):
    """This process's procrastinate App for the database in use (made once per process, database and role).

    Two roles, two Apps: "worker" is the one `flask worker` runs (its connector's async pool belongs to the
    worker's event loop); "defer" hands jobs over from plain threads (a web request, a job's own commit in a
    worker's task thread, the sweep) through a sync pool of its own. Deferring through the worker's async pool
    from another thread bridges sync to async on that loop, which under load was seen to hang the worker."""
    import os

    import procrastinate

    key = (os.getpid(), _conninfo(), role)
    found = _apps.get(key)
    if found is None:
        # Small pools: deferring takes one connection at a time; a worker's own needs are its concurrency plus
        # the connection it listens on.
        found = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=key[1], min_size=1, max_size=8 if role == "worker" else 4)
        )

        @found.task(name=TASK_NAME, queue=QUEUE_NAME)
        def run_job(job_id: int) -> None:
            _run_in_worker(job_id)

        _apps[key] = found
    return found


def defer(job: queue.Queued) -> bool:
    """Hand the job to the workers (its own procrastinate job: queueing_lock keeps it to one waiting)."""
    import procrastinate.exceptions

    app = procrastinate_app("defer")
    try:
        if app.connector._sync_connector is None:  # its sync pool, opened once per process
            app.open()
        task = app.tasks[TASK_NAME]
        task.configure(queueing_lock=f"job:{job.id}", schedule_in={"seconds": job.delay} if job.delay else None).defer(
            job_id=job.id
        )
        return True
    except procrastinate.exceptions.AlreadyEnqueued:
        return True
    except Exception as exc:
        log.warning("job %s not handed to the workers (%s): the sweep will", job.id, exc)
        return False


def _run_in_worker(job_id: int) -> None:
    with _flask_app.app_context():
        outcome = queue.run(job_id)
        if outcome.state == "queued" and outcome.job is not None:
            defer(outcome.job)  # its retry, after the backoff
        elif outcome.state == "busy":
            defer(queue.Queued(job_id, "", "", BUSY_RETRY_SECONDS))


def sweep() -> int:
    """Take back runs whose worker died, hand over due jobs the workers do not have, prune old runs."""
    recovered = queue.recover_stalled()
    handed = 0
    for job in [*recovered, *queue.due(limit=100)]:
        handed += defer(job)
    queue.prune()
    return handed


def serve(flask_app, concurrency: int = 1, name: str | None = None) -> None:
    """Run a worker until it is stopped (SIGINT/SIGTERM: the job in hand is finished first)."""
    global _flask_app
    _flask_app = flask_app
    with flask_app.app_context():
        app = procrastinate_app()
        worker = name or queue.worker_name()
        beat, stalled = queue.heartbeat_seconds(), queue.stalled_seconds()
    stop = threading.Event()

    def sweeping() -> None:
        while not stop.wait(SWEEP_BEATS * beat if sweeping.ran else 0):  # type: ignore[attr-defined]
            sweeping.ran = True  # type: ignore[attr-defined]
            try:
                with flask_app.app_context():
                    sweep()
            except Exception as exc:
                log.warning("sweep failed: %s", exc)

    sweeping.ran = False  # type: ignore[attr-defined]
    sweeper = threading.Thread(target=sweeping, name="holdout-sweep", daemon=True)
    sweeper.start()
    try:
        app.run_worker(
            queues=[QUEUE_NAME],
            concurrency=concurrency,
            name=worker,
            wait=True,
            install_signal_handlers=True,
            delete_jobs="successful",
            update_heartbeat_interval=beat,
            stalled_worker_timeout=stalled,
        )
    finally:
        stop.set()
