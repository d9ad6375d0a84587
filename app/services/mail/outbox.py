"""Letters queued with the change they tell of, written and delivered by a "mail" job.

A writer (registered by name by the service that owns the subject) turns the job's arguments into a Letter
when the job runs, or None when it is no longer to be sent (the person opted out since, the account is gone).
Arguments are ids and versions, never a link's secret: see the package's docstring.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from app import settings
from app.db import db
from app.services.jobs import queue
from app.services.mail import undeliverable
from app.services.mail.delivery import Letter, RecipientDeferred, Undeliverable, deliver

log = logging.getLogger("holdout.mail")

MAIL = "mail"  # the job's kind


@dataclass(frozen=True)
class _Writer:
    write: Callable[[dict], Letter | None]
    checks_address: bool  # tried even at an address marked undeliverable (its delivery clears the mark)


_writers: dict[str, _Writer] = {}


def writer(name: str, write: Callable[[dict], Letter | None], *, checks_address: bool = False) -> None:
    """Make a kind of letter known (its owner registers it when imported). A writer only reads: its
    transaction is rolled back before the letter goes out. `checks_address`: the letter is asked for at the
    address itself (a confirmation, a password reset), so it is tried even where the server refused before
    for good; other letters to such an address are recorded as not sent (undeliverable.py)."""
    _writers[name] = _Writer(write, checks_address)


def purpose_of(letter: str, args: dict) -> str | None:
    """Letters of one kind about one thing (the ids among their arguments: an account, an invitation, a split)
    share a purpose: the newest one's outcome says whether mail of that purpose needs a person
    (models.Job.purpose), so a letter that failed is cleared by the next one that goes. A letter about an
    address alone (a password reset is asked for by address) shares it with letters of its kind to that
    address, named by a digest (the jobs table shows purposes). None for a letter about neither: it answers
    for itself alone (sharing one purpose, a letter to one person would clear another's failure)."""
    ids = "".join(f":{args[name]}" for name in sorted(args) if name.endswith("_id"))
    if not ids and isinstance(args.get("email"), str):
        ids = ":" + hashlib.sha256(args["email"].strip().lower().encode()).hexdigest()[:16]
    return f"{MAIL}:{letter}{ids}" if ids else None


def post(letter: str, **args) -> None:
    """Queue a letter in the caller's transaction; it is written and sent after the commit, by a job."""
    if letter not in _writers:
        raise KeyError(f"no writer for letter {letter!r}")
    # Every letter is a job of its own key: two resets asked a minute apart are two letters (one key would
    # fold the second into the first while it waits). Their shared purpose is what health counts by.
    queue.enqueue(
        MAIL, f"mail:{letter}:{secrets.token_hex(6)}", {"letter": letter, **args}, purpose=purpose_of(letter, args)
    )


def link(path: str) -> str:
    """An absolute link to a page of the site (SITE_URL): mail is read away from the site."""
    return settings.current().link_base + path


def _send(args: dict, deadline: queue.Deadline) -> str:
    name = str(args.get("letter"))
    kind = _writers.get(name)
    if kind is None:
        raise RuntimeError(f"no writer for letter {name!r}")
    letter = kind.write(args)
    if letter is None:
        return f"{name}: not sent (no longer wanted)"
    refused = undeliverable.mark_of(letter.to)
    if refused is not None and not kind.checks_address:
        # Sending it would only be refused again: recorded, not tried (undeliverable.py).
        code = refused.code
        undeliverable.note_skipped(letter.to)
        return f"{name}: not sent: the mail server refused this address for good ({code or 'no code'})"
    deadline.check()
    # The letter is written: end the reading transaction before talking to the SMTP server, which may take up
    # to MAIL_TIMEOUT. Inline on SQLite the job's transactions begin as writers, and every writer of the site
    # would wait for this one's mail.
    db.session.rollback()
    try:
        how = deliver(letter)
    except Undeliverable as exc:
        # An outcome, not a failure: retrying gets the same answer, and an operator has nothing to fix.
        undeliverable.mark(exc.address, exc.code, exc.reply)
        log.info("mail %s: address refused for good (%s): %s", name, exc.code, exc.reply)
        return f"{name}: not delivered: refused for good ({exc.code or 'no code'} {exc.reply})"[:300]
    except RecipientDeferred as exc:
        if not deadline.last_try:
            raise  # tried again later, with backoff
        # Refused on every try: about the address (a domain that does not resolve), which anyone may type
        # when registering, not about the site; marked as a lasting refusal is, so health stays ok.
        undeliverable.mark(exc.address, exc.code, exc.reply)
        log.info("mail %s: address refused on every try (%s): %s", name, exc.code, exc.reply)
        return f"{name}: not delivered: refused on every try ({exc.code} {exc.reply})"[:300]
    if refused is not None:
        undeliverable.clear(letter.to)
    return f"{name}: {how}"


queue.register(MAIL, _send, background_inline=True)
