"""An upload's original, written to the store (services/storage/upload_store) and confirmed by it before the
upload's transaction begins, and the repair of what a store that did not answer may leave behind.

A store that hangs costs an upload at most STORAGE_TIMEOUT: it is answered 503 with Retry-After while no
lock is held (on SQLite, every other write goes on) and its worker is free again. A bucket that took the
write but did not answer may still store the object when it resumes, with no row to name it: such an
object is left ``in_doubt``, and a "stray-original" job, one per sha256, deletes it once the server answers
again, unless a stored submission has the same content (another upload may share it). The job runs no
earlier than the write given up on can still be under way in this process (``upload_store.stray_after``),
and is retried with backoff while the server does not answer; `flask uploads check` finds what is left if
it never does.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from app import observability
from app.db import db
from app.services.jobs import queue
from app.services.storage import upload_store

log = logging.getLogger(__name__)

STRAY = "stray-original"  # the job's kind


def keep_confirmed(data: bytes, digest: str) -> upload_store.Kept:
    """Write the upload's original and wait until the store confirms it (at most STORAGE_TIMEOUT); call it
    before the upload's transaction begins, with no lock held. Raises StorageFailed: nothing is then kept (or
    its removal is queued). ``finish`` it after the commit, ``discard`` it (here) if nothing was stored."""
    kept = upload_store.keep(data, digest)
    try:
        kept.wait()
    except BaseException:
        discard(kept)
        raise
    observability.storage_confirmed("uploads")
    return kept


def discard(kept: upload_store.Kept) -> None:
    """Nothing was stored: remove the original, or queue its removal when it may still appear. Never raises:
    the upload's own error is its answer."""
    kept.discard()
    if kept.in_doubt:
        queue_removal(kept.digest)


def queue_removal(digest: str) -> None:
    """Queue the "stray-original" job of this sha256, in a transaction of its own: the upload's own one
    failed or was refused and is rolled back first (on SQLite it may hold the write lock)."""
    try:
        db.session.rollback()
        later = timedelta(seconds=upload_store.stray_after())
        queue.enqueue(STRAY, f"{STRAY}:{digest}", {"digest": digest}, run_after=later)
        db.session.commit()
    except Exception as exc:  # the database away too: `flask uploads check` lists the object
        db.session.rollback()
        log.error("could not queue the removal of the original %s of an upload not stored (%s)", digest, exc)


def _remove_stray(args: dict, deadline: queue.Deadline) -> str:
    return upload_store.settle_stray(str(args["digest"]))


queue.register(STRAY, _remove_stray, background_inline=True)
