"""Letters queued with the change they tell of, written and delivered by a "mail" job.

A writer (registered by name by the service that owns the subject) turns the job's arguments into a Letter
when the job runs, or None when it is no longer to be sent (the person opted out since, the account is gone).
Arguments are ids and versions, never a link's secret: see the package's docstring.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from app import settings
from app.db import db
from app.services.jobs import queue
from app.services.mail.delivery import Letter, deliver

log = logging.getLogger("holdout.mail")

MAIL = "mail"  # the job's kind

_writers: dict[str, Callable[[dict], Letter | None]] = {}


def writer(name: str, write: Callable[[dict], Letter | None]) -> None:
    """Make a kind of letter known (its owner registers it when imported). A writer only reads: its
    transaction is rolled back before the letter goes out."""
    _writers[name] = write


def post(letter: str, **args) -> None:
    """Queue a letter in the caller's transaction; it is written and sent after the commit, by a job."""
    if letter not in _writers:
        raise KeyError(f"no writer for letter {letter!r}")
    # Every letter is a job of its own: two resets asked a minute apart are two letters.
    queue.enqueue(MAIL, f"mail:{letter}:{secrets.token_hex(6)}", {"letter": letter, **args})


def link(path: str) -> str:
    """An absolute link to a page of the site (SITE_URL): mail is read away from the site."""
    return settings.current().site_url + path


def _send(args: dict, deadline: queue.Deadline) -> str:
    write = _writers.get(str(args.get("letter")))
    if write is None:
        raise RuntimeError(f"no writer for letter {args.get('letter')!r}")
    letter = write(args)
    if letter is None:
        return f"{args['letter']}: not sent (no longer wanted)"
    deadline.check()
    # The letter is written: end the reading transaction before talking to the SMTP server, which may take up
    # to MAIL_TIMEOUT. Inline on SQLite the job's transactions begin as writers, and every writer of the site
    # would wait for this one's mail.
    db.session.rollback()
    return f"{args['letter']}: {deliver(letter)}"


queue.register(MAIL, _send, background_inline=True)
