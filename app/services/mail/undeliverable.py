"""Addresses the mail server refused for good (a 5xx: no such mailbox, domain refused, ...).

A refusal is recorded against the address (when, the server's code and words), and the letter's job ends as
done with that outcome: a refused address is a fact about the address, not a fault of the site, so it never
makes /healthz degraded. Later letters to a marked address are not sent (each one counted) — except those
asked for at the address itself, which check it again (a confirmation letter, a password reset; their
writers say so, outbox.writer's `checks_address`): one of those delivered clears the mark. The owner sees the
mark on the account page, maintainers on the console's Jobs page.
"""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.db import db
from app.models import UndeliverableAddress, utcnow

LISTED = 100  # the newest marks the console shows


def _normal(address: str) -> str:
    # As accounts store them (lower-cased): the owner's page finds the mark of the address the letter went to.
    return address.strip().lower()[:254]


def mark_of(address: str) -> UndeliverableAddress | None:
    """The address's mark, if the server refused it for good and no letter was delivered to it since."""
    return db.session.scalar(select(UndeliverableAddress).where(UndeliverableAddress.address == _normal(address)))


def mark(address: str, code: int | None, reply: str) -> None:
    """Record a refusal (the latest one's code and words, and when), committed."""
    insert = pg_insert if db.session.get_bind().dialect.name == "postgresql" else sqlite_insert
    values = {"code": code, "reply": reply[:300], "marked_at": utcnow()}
    db.session.execute(
        insert(UndeliverableAddress)
        .values(address=_normal(address), skipped=0, **values)
        .on_conflict_do_update(index_elements=[UndeliverableAddress.address], set_=values)
    )
    db.session.commit()


def note_skipped(address: str) -> None:
    """A letter to a marked address was not sent: counted, committed."""
    db.session.execute(
        update(UndeliverableAddress)
        .where(UndeliverableAddress.address == _normal(address))
        .values(skipped=UndeliverableAddress.skipped + 1)
    )
    db.session.commit()


def clear(address: str) -> None:
    """A letter was delivered to it: the address works again. Committed."""
    db.session.execute(delete(UndeliverableAddress).where(UndeliverableAddress.address == _normal(address)))
    db.session.commit()


def listing(limit: int = LISTED) -> list[UndeliverableAddress]:
    """The newest marks first (the console)."""
    return list(
        db.session.scalars(select(UndeliverableAddress).order_by(UndeliverableAddress.marked_at.desc()).limit(limit))
    )
