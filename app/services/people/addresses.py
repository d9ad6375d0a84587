"""Verified addresses: registration mails a link, following it shows the address is the account's. An
unverified account may log in, look around and confirm its address, nothing more (`check_verified`, the one
rule, kept with the accounts: API tokens need it too); accounts made with the CLI are verified when made, and
the migration that brought this counted every existing account as verified.

Registering answers alike whether the address has an account or not: an address that has one is not given a
second, its owner is mailed that someone tried instead (issue 35: "already exists" told which addresses had
accounts)."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from app.db import db, write_transaction
from app.models import UndeliverableAddress, User, utcnow
from app.services.errors import InvalidInput, Throttled
from app.services.mail import outbox, undeliverable
from app.services.mail.delivery import Letter
from app.services.people import accounts, signed_links, throttle

VERIFY_LINK_DAYS = 7
RESENDS_PER_HOUR = 3
# Letters telling an address's owner that someone tried to register with it: a few an hour at most, so that
# registering cannot be a way to flood a mailbox (the extra tries are answered alike and mail nothing).
TAKEN_MAILS_PER_HOUR = 3


def register(email: str, password: str) -> str:
    """A new account for the address, unverified, and the letter with its link; or, when the address has an
    account, a letter to its owner saying someone tried (sent after the commit). Returns the address as
    normalised: the caller answers alike either way ("a mail is on its way"). Both ways hash the password,
    count one try for the address and queue at most one letter, so neither the answer nor its time tells."""
    email = accounts.checked_email(email)
    accounts.check_new_password(password)
    password_hash = accounts.hash_password(password)
    try:
        throttle.attempt(f"taken-mail:{email}", limit=TAKEN_MAILS_PER_HOUR, window=3600)
        may_mail = True
    except Throttled:
        may_mail = False
    with write_transaction():
        existing = accounts.get_user_by_email(email)
        if existing is None:
            try:
                user = accounts.add_user(email, password_hash, verified=False)
            except IntegrityError:  # registered meanwhile, by another request
                db.session.rollback()
                existing = accounts.get_user_by_email(email)
            else:
                outbox.post("verify", user_id=user.id, email=user.email)
        if existing is not None and may_mail:
            outbox.post("taken", user_id=existing.id, email=existing.email)
        db.session.commit()
    return email


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
            "Follow this link to confirm that this address is yours; until then you can look around, but not\n"
            "make or join a team, upload or publish:\n\n"
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


def _taken_letter(args: dict) -> Letter | None:
    user = db.session.get(User, int(args["user_id"]))
    if user is None or user.email != args["email"]:
        return None
    unconfirmed = (
        "The address of this account was never confirmed: choosing a new password confirms it (and revokes\n"
        "the account's API tokens, in case it was made by someone else).\n\n"
        if user.email_verified_at is None
        else ""
    )
    return Letter(
        to=user.email,
        subject="Someone tried to register with your address on Holdout",
        body=(
            "Someone (perhaps you) tried to make a Holdout account with this address. It has one already, so\n"
            "no account was made and yours is unchanged.\n\n"
            f"If it was you, log in:\n\n{outbox.link('/login')}\n\n"
            f"or, if you forgot the password, choose a new one:\n\n{outbox.link('/password/forgot')}\n\n"
            f"{unconfirmed}"
            "If it was not you, ignore this mail.\n"
        ),
    )


outbox.writer("taken", _taken_letter)
