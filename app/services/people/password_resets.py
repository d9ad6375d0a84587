"""Password resets by mail: a signed link valid RESET_MINUTES and usable once.

The link carries the account and its `reset_generation`; setting a password through it bumps the generation
in the same conditional UPDATE, so a second use (or any older link) finds it changed and fails. Asking gives
the same answer whether the address has an account or not, after the same work: the job that writes the
letter looks the account up. A reset ends every session of the account and confirms its address (the link
came to it); API tokens are revoked only when asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sqlalchemy import CursorResult, func, update
from werkzeug.security import generate_password_hash

from app.db import db
from app.models import ApiToken, User, utcnow
from app.services.errors import InvalidInput, Throttled
from app.services.mail import outbox
from app.services.mail.delivery import Letter
from app.services.people import accounts, signed_links, throttle

RESET_MINUTES = 30
MAILS_PER_ADDRESS_PER_HOUR = 3
LINK_INVALID = (
    f"this reset link is not valid: it was used already, is older than {RESET_MINUTES} minutes, "
    "or a newer one was used; ask for a new one"
)


def request_reset(email: str) -> None:
    """Mail a reset link to the address if it has an account. Says nothing either way: the caller answers
    alike. At most MAILS_PER_ADDRESS_PER_HOUR letters an hour per address, counted for unknown addresses too
    (a refusal would tell which exist, so the extra asks are dropped silently)."""
    address = accounts.normalise_email(email)[:254]
    if not address:
        return
    try:
        throttle.attempt(f"reset-mail:{address}", limit=MAILS_PER_ADDRESS_PER_HOUR, window=3600)
    except Throttled:
        return
    # The account is looked up by the letter's job, after the answer: asking does the same work whether the
    # address has an account or not (a letter queued for real accounts only made their answer slower, issue 35).
    outbox.post("reset", email=address)
    db.session.commit()


@dataclass(frozen=True)
class ResetLink:
    user: User
    generation: int


def open_link(token: str) -> ResetLink:
    """The account a reset link is for, while it can still be used (InvalidInput otherwise)."""
    payload = signed_links.read(signed_links.RESET, token, max_age=RESET_MINUTES * 60)
    if not isinstance(payload, dict) or not isinstance(payload.get("u"), int) or not isinstance(payload.get("g"), int):
        raise InvalidInput(LINK_INVALID)
    user = db.session.get(User, payload["u"])
    if user is None or user.reset_generation != payload["g"]:
        raise InvalidInput(LINK_INVALID)
    return ResetLink(user, payload["g"])


def reset_password(token: str, new_password: str, *, revoke_tokens: bool = False) -> User:
    """Set the password through the link, once: every session of the account ends (and, if asked, every API
    token is revoked)."""
    link = open_link(token)
    accounts.check_new_password(new_password)
    never_confirmed = link.user.email_verified_at is None
    used = cast(
        CursorResult,
        db.session.execute(
            update(User)
            .where(User.id == link.user.id, User.reset_generation == link.generation)
            .values(
                password_hash=generate_password_hash(new_password),
                reset_generation=User.reset_generation + 1,
                email_verified_at=func.coalesce(User.email_verified_at, utcnow()),
            )
        ),
    )
    if used.rowcount != 1:  # used meanwhile, by another request
        db.session.rollback()
        raise InvalidInput(LINK_INVALID)
    accounts.bump_generation(link.user.id)
    # An account whose address was never confirmed may have been made by somebody else in its owner's name
    # (and its tokens with it): taking it back by mail revokes them, ticked or not.
    if revoke_tokens or never_confirmed:
        db.session.execute(
            update(ApiToken)
            .where(ApiToken.user_id == link.user.id, ApiToken.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
    db.session.commit()
    db.session.refresh(link.user)
    return link.user


def _reset_letter(args: dict) -> Letter | None:
    if "email" in args:
        user = accounts.get_user_by_email(args["email"])  # None: no account has the address, nothing is sent
    else:  # asked before the account was looked up by the job: a reset since would make the link useless
        user = db.session.get(User, int(args["user_id"]))
        if user is not None and user.reset_generation != args["generation"]:
            return None
    if user is None:
        return None
    token = signed_links.sign(signed_links.RESET, {"u": user.id, "g": user.reset_generation})
    return Letter(
        to=user.email,
        subject="Reset your Holdout password",
        body=(
            "Someone (we hope you) asked to reset the password of the Holdout account of this address.\n\n"
            f"Choose a new password here (the link works once, for {RESET_MINUTES} minutes):\n\n"
            f"{outbox.link('/password/reset/' + token)}\n\n"
            "Setting it logs the account out everywhere. If you did not ask, ignore this mail: your password\n"
            "stays as it is.\n"
        ),
    )


# A reset is asked for at the address itself: it is tried even where the server refused before (a mailbox
# that works again would otherwise never get one), and its delivery clears the mark.
outbox.writer("reset", _reset_letter, checks_address=True)
