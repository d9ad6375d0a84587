"""`wsgi:app` with a test-only pause inside the upload's transaction, so a test can SIGKILL the worker there.

Served by gunicorn as `tests.load.pausing_wsgi:app`; nothing in the application knows about it. The pause
is a SQLAlchemy session hook: when a session commits a transaction that inserted Submission rows, it
first flushes everything (the submission and its scores are then rows of the open transaction) and then:

- HOLDOUT_TEST_PAUSE_DIR set, and the model name is `pause-before-commit...` or `pause-after-commit...`:
  on the first such upload of that name only, write `<dir>/<model name>.paused` holding the worker's pid,
  then sleep (before or after COMMIT) so the test can kill the worker there; a retry passes straight on.
- HOLDOUT_TEST_COMMIT_DELAY=<seconds>: every upload holds its transaction open that long before COMMIT,
  with `<dir>/busy/<pid>` present meanwhile, so a test can pick a worker that is mid-transaction.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.orm import Session

from app.models import Submission
from wsgi import app  # noqa: F401 (what gunicorn serves)

PAUSE_DIR = Path(os.environ["HOLDOUT_TEST_PAUSE_DIR"]) if os.environ.get("HOLDOUT_TEST_PAUSE_DIR") else None
COMMIT_DELAY = float(os.environ.get("HOLDOUT_TEST_COMMIT_DELAY") or 0)
PAUSE_SECONDS = 60  # far longer than any test waits before killing


def _claim(name: str) -> bool:
    """True the first time a model name is seen (across workers: the marker file is created exclusively)."""
    try:
        fd = os.open(PAUSE_DIR / f"{name}.paused", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as marker:
        marker.write(str(os.getpid()))
    return True


@event.listens_for(Session, "after_flush")
def _remember_new_submissions(session: Session, _context) -> None:
    # The service may flush before committing; `new` still lists what this flush inserted.
    names = [obj.model_name for obj in session.new if isinstance(obj, Submission)]
    session.info.setdefault("new_submissions", []).extend(names)


@event.listens_for(Session, "after_rollback")
def _forget_new_submissions(session: Session) -> None:
    session.info.pop("new_submissions", None)


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    if PAUSE_DIR is None:
        return
    session.flush()  # the submission and its scores are now rows of the open transaction
    names = session.info.pop("new_submissions", [])
    if not names:
        return
    for name in names:
        if name.startswith("pause-before-commit") and _claim(name):
            # The pause is the fault being injected (the worker is killed in it), not a wait for something.
            time.sleep(PAUSE_SECONDS)
        if name.startswith("pause-after-commit"):
            session.info.setdefault("pause_after_commit", []).append(name)
    if COMMIT_DELAY:
        busy = PAUSE_DIR / "busy" / str(os.getpid())
        busy.parent.mkdir(exist_ok=True)
        busy.touch()
        try:
            # A transaction held open on purpose (the window a worker is killed in): the thing under test.
            time.sleep(COMMIT_DELAY)
        finally:
            busy.unlink(missing_ok=True)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    for name in session.info.pop("pause_after_commit", []):
        if _claim(name):
            # As above: the worker is killed while it sleeps here, after COMMIT.
            time.sleep(PAUSE_SECONDS)
