"""Errors the use cases raise; the web, API and CLI layers turn them into answers."""

from __future__ import annotations

from datetime import datetime

from app.evaluation import Problem
from app.names import invisible


class ServiceError(Exception):
    status = 400
    retry_after: int | None = None  # seconds after which a retry may succeed: the answer's Retry-After

    def __init__(self, message: str, problems: list[Problem] | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.problems = problems or []
        self.field = field  # the input field at fault, if one is (the form shows the message beside it)

    def details(self) -> list[dict]:
        return [{"line": p.line, "message": p.message} for p in self.problems]


class Forbidden(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class TooLarge(ServiceError):
    status = 413


class StorageFailed(ServiceError):
    """The server could not keep what it was asked to keep: nothing was stored. 507 for a full or failing
    disk; 503 for a store that is unavailable (an S3 server unreachable, timing out, failing or refusing
    access), with ``retry_after`` when a retry later may well find it back (not for refused access)."""

    status = 507

    def __init__(self, message: str, *, unavailable: bool = False, retry_after: int | None = None):
        super().__init__(message)
        if unavailable:
            self.status = 503
        self.retry_after = retry_after


class InvalidInput(ServiceError):
    status = 422


class QuotaExceeded(ServiceError):
    """Over a submission quota; `retry_at` is when the next slot opens (None: never on this split)."""

    status = 429

    def __init__(self, message: str, retry_at: datetime | None):
        super().__init__(message)
        self.retry_at = retry_at


class Throttled(ServiceError):
    """Too many attempts (logins, registrations from one client; boards of ad-hoc filters computed by one
    server); `retry_after` in seconds."""

    status = 429
    retry_after: int

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def check_visible(what: str, text: str | None, *, field: str | None = None) -> str | None:
    """The text, if it has no invisible character (app/names.py: default-ignorable code points and bidi
    controls); InvalidInput naming the first one otherwise ("team name contains U+202E RIGHT-TO-LEFT
    OVERRIDE, an invisible control character; remove it"). Every name and text shown to others passes here."""
    problem = invisible(text or "")
    if problem:
        raise InvalidInput(f"{what} {problem}", field=field)
    return text
