"""The audit log: one event per maintainer action, written in the same transaction as the action itself.

`record` only adds the event to the session; the use case that changes state commits both together, so an
action that fails leaves no event behind and an event never describes an action that did not happen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import joinedload

from app.db import db
from app.models import AuditEvent, User

PAGE_SIZE = 50


def record(actor: User | None, action: str, target: str, details: dict | str = "") -> AuditEvent:
    """Add an audit event to the session WITHOUT committing; `actor` None is the command line."""
    text = details if isinstance(details, str) else json.dumps(details, sort_keys=True, default=str)
    event = AuditEvent(
        actor_id=actor.id if actor is not None else None,
        action=action[:64],
        target=target[:200],
        details=text,
    )
    db.session.add(event)
    return event


@dataclass
class AuditPage:
    events: list[AuditEvent]
    page: int
    pages: int
    total: int

    @property
    def rows(self) -> list[tuple[AuditEvent, list[tuple[str, str]] | str]]:
        return [(event, details_of(event)) for event in self.events]

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def has_next(self) -> bool:
        return self.page < self.pages


def page(number: int = 1, per_page: int = PAGE_SIZE) -> AuditPage:
    """One page of the log, newest first; a page past the end is clamped to the last one."""
    total = db.session.scalar(select(func.count(AuditEvent.id))) or 0
    pages = max(1, -(-total // per_page))
    number = min(max(1, number), pages)
    events = list(
        db.session.scalars(
            select(AuditEvent)
            .options(joinedload(AuditEvent.actor))
            .order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
            .offset((number - 1) * per_page)
            .limit(per_page)
        )
    )
    return AuditPage(events, number, pages, total)


def details_of(event: AuditEvent) -> list[tuple[str, str]] | str:
    """The event's details for display: (key, text) pairs when they were recorded as a mapping (nested
    mappings flattened to "outer.inner"), else the recorded text."""
    try:
        value = json.loads(event.details) if event.details else ""
    except ValueError:
        return event.details
    if not isinstance(value, dict):
        return event.details
    return list(_flatten(value))


def _flatten(mapping: dict, prefix: str = ""):
    for key, item in mapping.items():
        if isinstance(item, dict):
            yield from _flatten(item, f"{prefix}{key}.")
        elif item is None:
            yield f"{prefix}{key}", "none"
        elif isinstance(item, bool):
            yield f"{prefix}{key}", "yes" if item else "no"
        elif isinstance(item, list):
            yield f"{prefix}{key}", ", ".join(str(part) for part in item) or "none"
        else:
            yield f"{prefix}{key}", str(item)
