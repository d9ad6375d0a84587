"""Verified addresses: registration mails a link, following it shows the address is the account's. An
unverified account may log in and look around but not upload or publish (`check_verified`, the one rule);
accounts made with the CLI are verified when made, and the migration that brought this counted every
existing account as verified."""

from __future__ import annotations

from app.db import db, write_transaction
from app.models import UndeliverableAddress, User, utcnow
from app.services.errors import Forbidden, InvalidInput, Throttled
from app.services.mail import outbox, undeliverable
from app.services.mail.delivery import Letter
from app.services.people import accounts, signed_links, throttle

VERIFY_LINK_DAYS = 7
RESENDS_PER_HOUR = 3
NOT_VERIFIED = (
    "confirm your email address first: follow the link mailed to {email} "
    "(no mail? send it again from your account page, /account)"
)


def register(email: str, password: str) -> User:
    """A new account, unverified, and the letter with its link (sent after the commit)."""
    user = accounts.new_user(email, password, verified=False)
    outbox.post("verify", user_id=user.id, email=user.email)
    db.session.commit()
    return user


def check_verified(user: User) -> None:
    """Uploading and publishing need a verified address (Forbidden, naming what to do, otherwise)."""
    if user.email_verified_at is None:
        raise Forbidden(NOT_VERIFIED.format(email=user.email))


def resend(user: User) -> None:
    """Mail the link again (a few times an hour at most); nothing to do once verified."""
    if user.email_verified_at is not None:
        return
    try:
        throttle.attempt(f"verify-mail:{user.id}", limit=RESENDS_PER_HOUR, window=3600)
    except Throttled as exc:
        raise Throttled(
            f"the link was sent {RESENDS_PER_HOUR} times in the last hour; try again in {exc.retry_after} seconds",
            exc.retry_after,
        ) from None
    outbox.post("verify", user_id=user.id, email=user.email)
    db.session.commit()


def verify(token: str) -> User:
    """Mark the address of the link verified (again: no harm). InvalidInput for a bad or old link, or one for
    an address the account no longer has."""
    payload = signed_links.read(signed_links.VERIFY, token, max_age=VERIFY_LINK_DAYS * 86400)
    # A GET that writes: begun as a writer, as a form's request is. On SQLite a transaction that read first could
    # not become one once the confirmation letter's job had committed meanwhile ("database is locked": the
    # link opened at once after the letter arrived failed now and then).
    with write_transaction():
        user = db.session.get(User, int(payload["u"])) if isinstance(payload, dict) and "u" in payload else None
        if user is None or not isinstance(payload, dict) or payload.get("e") != user.email:
            raise InvalidInput(
                f"this confirmation link is not valid (links last {VERIFY_LINK_DAYS} days); "
                "log in and send a new one from your account page"
            )
        if user.email_verified_at is None:
            user.email_verified_at = utcnow()
            db.session.commit()
    return user


def _verify_letter(args: dict) -> Letter | None:
    user = db.session.get(User, int(args["user_id"]))
    if user is None or user.email_verified_at is not None or user.email != args["email"]:
        return None
    token = signed_links.sign(signed_links.VERIFY, {"u": user.id, "e": user.email})
    return Letter(
        to=user.email,
        subject="Confirm your email address for Holdout",
        body=(
            "Welcome to Holdout.\n\n"
            "Follow this link to confirm that this address is yours; until then you can look around but not\n"
            "upload or publish:\n\n"
            f"{outbox.link('/account/verify/' + token)}\n\n"
            f"The link works for {VERIFY_LINK_DAYS} days. If you did not make an account, ignore this mail.\n"
        ),
    )


def refusal(user: User) -> UndeliverableAddress | None:
    """The mail server's lasting refusal of the account's address, if it refused it (the account page says so:
    only the letters its owner asks for, a confirmation or a password reset, are tried there until one is
    delivered)."""
    return undeliverable.mark_of(user.email)


# A confirmation letter checks the address: it is sent even where the server refused before.
outbox.writer("verify", _verify_letter, checks_address=True)
