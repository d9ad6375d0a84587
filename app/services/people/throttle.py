"""The login and registration throttle, shared by every worker and server through the database.

Attempts are counted per client key (e.g. "login:<address>") in 10-second buckets; an attempt is refused
when the key already made `limit` in the last `window` seconds. Counting in the database rather than in each
worker's memory is what makes the limit hold with several workers and servers (with per-worker counters, 4
workers let 4 times as many guesses through). Buckets past the window are deleted as attempts come in.
"""

from __future__ import annotations

import math
import time

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import OperationalError

from app.db import db, write_transaction
from app.models import AuthAttempt
from app.services.errors import Throttled

BUCKET_SECONDS = 10
AUTH_LIMIT = 10  # attempts
AUTH_WINDOW = 60  # seconds


def _count_attempt(key: str, bucket: int) -> None:
    insert = sqlite_insert if db.session.get_bind().dialect.name == "sqlite" else postgresql_insert
    statement = insert(AuthAttempt).values(key=key, bucket=bucket, count=1)
    # Atomic on both databases: concurrent attempts on the same row wait for each other, none is lost.
    db.session.execute(
        statement.on_conflict_do_update(
            index_elements=[AuthAttempt.key, AuthAttempt.bucket], set_={"count": AuthAttempt.count + 1}
        )
    )


def _prune(key: str, first: int) -> None:
    # Best effort in a transaction of its own: two servers pruning at once may collide, and losing that
    # race must not fail a login (the rows go with the next attempt). Only the keys of the same action
    # ("login:...") share this window: a reset mail's hour must not be pruned by a login's minute.
    action = key.split(":", 1)[0].replace("%", "").replace("_", "")
    try:
        with write_transaction():
            db.session.execute(
                delete(AuthAttempt).where(AuthAttempt.bucket < first, AuthAttempt.key.like(f"{action}:%"))
            )
            db.session.commit()
    except OperationalError:
        db.session.rollback()


def attempt(key: str, *, limit: int = AUTH_LIMIT, window: int = AUTH_WINDOW, now: float | None = None) -> None:
    """Count one attempt for `key` (committed at once, whatever the attempt's outcome); raise Throttled if
    the key has made more than `limit` attempts in the last `window` seconds, this one included."""
    now = time.time() if now is None else now
    bucket = int(now // BUCKET_SECONDS)
    buckets = math.ceil(window / BUCKET_SECONDS)
    first = bucket - buckets + 1  # the oldest bucket still in the window
    key = key[:200]
    with write_transaction():
        _count_attempt(key, bucket)
        counts = db.session.execute(
            select(AuthAttempt.bucket, AuthAttempt.count)
            .where(AuthAttempt.key == key, AuthAttempt.bucket >= first)
            .order_by(AuthAttempt.bucket)
        ).all()
        db.session.commit()
    _prune(key, first)
    made = sum(count for _, count in counts)
    if made <= limit:
        return
    # Free again once enough of the oldest buckets have left the window.
    over, wait_until = made - limit, None
    for found_bucket, count in counts:
        over -= count
        if over <= 0:
            wait_until = (found_bucket + buckets) * BUCKET_SECONDS
            break
    retry_after = max(1, math.ceil((wait_until or now + window) - now))
    raise Throttled(f"too many attempts from this address; try again in {retry_after} seconds", retry_after)
