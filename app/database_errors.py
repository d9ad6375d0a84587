"""Database errors that no retry cures: a full disk (or SQLite's page limit). Told apart here, once, for the
metrics and for the answer a request gets (503 saying so, without a Retry-After that would never come true)."""

from __future__ import annotations

# SQLite's "database or disk is full" (SQLITE_FULL) and PostgreSQL's disk_full (SQLSTATE 53100).
SQLITE_FULL = 13
DISK_FULL_SQLSTATE = "53100"


def disk_full(exc: BaseException) -> bool:
    """Whether a database error says its disk (or SQLite's page limit) is full: no retry cures that, unlike
    a database that is restarting or locked."""
    orig = getattr(exc, "orig", None) or exc
    if getattr(orig, "sqlite_errorcode", None) == SQLITE_FULL or getattr(orig, "sqlstate", None) == DISK_FULL_SQLSTATE:
        return True
    text = str(orig)
    return "database or disk is full" in text or "No space left on device" in text
