"""The one error answer of the pages and the API: a refused or failed request gets its status, the JSON body
{"error": <message>, "details": [...]} (an upload over its quota adds "retry_at") and, when a retry later may
succeed, Retry-After. The API sends it as it is; the pages send it to scripts and render it for browsers
(app/web/errors.py), so the rule of when to retry is written once."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.services.errors import QuotaExceeded, ServiceError
from app.services.intake.quotas import retry_after_seconds
from app.services.intake.submissions import timestamp


@dataclass(frozen=True)
class ErrorAnswer:
    status: int
    message: str
    details: list[dict] = field(default_factory=list)
    retry_after: int | None = None  # seconds after which a retry may succeed: the Retry-After header
    fields: dict[str, object] = field(default_factory=dict)  # the body's own fields beside error and details
    headers: dict[str, str] = field(default_factory=dict)  # others still: Allow, WWW-Authenticate

    def all_headers(self) -> dict[str, str]:
        if self.retry_after is None:
            return dict(self.headers)
        return {**self.headers, "Retry-After": str(self.retry_after)}

    def json(self) -> tuple[dict, int, dict[str, str]]:
        """The answer as a Flask view returns it: body, status, headers."""
        return {"error": self.message, "details": self.details, **self.fields}, self.status, self.all_headers()


def answer_to(exc: ServiceError) -> ErrorAnswer:
    """What a use case's refusal is answered with. Over a quota: when the next upload is accepted (None on a
    split whose total is used up, which no wait cures); else a throttle's wait or a store's, if any."""
    if isinstance(exc, QuotaExceeded):
        retry_at = timestamp(exc.retry_at) if exc.retry_at else None
        return ErrorAnswer(exc.status, exc.message, exc.details(), retry_after_seconds(exc), {"retry_at": retry_at})
    return ErrorAnswer(exc.status, exc.message, exc.details(), exc.retry_after)
