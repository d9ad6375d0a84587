"""Accounts: making them, password checks, sessions and API tokens, and what an account whose address is not
confirmed may not do (`check_verified`, the one rule). Registration with its address check is
people/addresses.py; password resets, people/password_resets.py."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta
from functools import lru_cache

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import joinedload
from werkzeug.security import check_password_hash, generate_password_hash

from app.db import db, write_transaction
from app.models import ApiToken, Membership, User, as_utc, utcnow
from app.services.errors import Conflict, Forbidden, InvalidInput, NotFound, check_visible

# One plain address: no display name, comment, route or list (mail software reads "Bob<ann@x.org>" and
# "(1)ann@x.org" as ann@x.org, which would give ann's mailbox a second account or slip past an opt-out).
EMAIL = re.compile(r"^[^@\s<>()\[\],;:\"\\]+@[^@\s<>()\[\],;:\"\\]+\.[^@\s<>()\[\],;:\"\\]+$")
MIN_PASSWORD = 8
# Hashing cost grows with the input; a generous cap keeps a login form from becoming a CPU sink.
MAX_PASSWORD = 1024
TOKEN_PREFIX = "hd_"
TOKEN_PREFIX_LENGTH = 10
# An account whose address is not confirmed this long after registering is taken for abandoned: the team
# names it holds are free again (people/teams.py `abandoned`), and `flask users prune-unconfirmed` removes it.
UNCONFIRMED_DAYS = 7
NOT_VERIFIED = (
    "confirm your email address first: follow the link mailed to {email} "
    "(no mail? send it again from your account page, /account)"
)


def never_confirmed(now: datetime) -> ColumnElement[bool]:
    """Which accounts are taken for abandoned: registered more than UNCONFIRMED_DAYS ago, address never
    confirmed (maintainers' accounts are made confirmed; none is ever taken)."""
    return and_(
        User.email_verified_at.is_(None),
        User.created_at < now - timedelta(days=UNCONFIRMED_DAYS),
        User.is_admin.is_(False),
    )


def check_verified(user: User) -> None:
    """Until its address is confirmed an account may look around and confirm it, nothing more: no upload, no
    publishing or unpublishing, no team made or joined, no invitation, no API token (Forbidden, naming what to
    do). Every one of those calls this: a throwaway account nobody answers for must not squat a team's name,
    mail strangers or change what a team shows (issue 35)."""
    if user.email_verified_at is None:
        raise Forbidden(NOT_VERIFIED.format(email=user.email))


def normalise_email(email: str | None) -> str:
    return (email or "").strip().lower()


def get_user_by_email(email: str | None) -> User | None:
    return db.session.scalar(select(User).where(User.email == normalise_email(email)))


def same_mailbox(email: str) -> list[User]:
    """The accounts whose address reaches the same mailbox as `email` (a normalised address): the same address
    with or without a "+tag" after its local part (victim@x.org and victim+x@x.org), so that an opt-out made
    under one holds for mail sent to the other."""
    local, _, domain = email.rpartition("@")
    base = local.split("+", 1)[0]

    def escaped(text: str) -> str:
        return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

    pattern = f"{escaped(base)}+%@{escaped(domain)}"
    return list(
        db.session.scalars(
            select(User).where((User.email == f"{base}@{domain}") | User.email.like(pattern, escape="\\"))
        )
    )


def create_user(email: str, password: str, *, admin: bool = False) -> User:
    """An account made by a maintainer (the CLI): its address counts as verified."""
    user = new_user(email, password, admin=admin, verified=True)
    db.session.commit()
    return user


def checked_email(email: str | None, *, invalid: str = "enter a valid email address", field: str | None = None) -> str:
    """The address normalised, when it is one plain address with no invisible character (InvalidInput with
    `invalid` otherwise): what an account may be made with, and what mail may be sent to. A domain with an
    empty label ("example.org.", "a..org") is refused here: mail servers refuse it (553) after the fact."""
    email = normalise_email(email)
    if len(email) > 254 or not EMAIL.match(email) or "" in email.rsplit("@", 1)[-1].split("."):
        raise InvalidInput(invalid, field=field)
    check_visible("the email address", email, field=field)  # shown to teammates and maintainers
    return email


def new_user(email: str, password: str, *, admin: bool = False, verified: bool) -> User:
    """The account, added to the session and not committed; Conflict when the address has one (a maintainer's
    way: registration, people/addresses.py, never says so)."""
    email = checked_email(email)
    check_new_password(password)
    if get_user_by_email(email) is not None:
        raise Conflict("an account with this email already exists")
    return add_user(email, hash_password(password), admin=admin, verified=verified)


def hash_password(password: str) -> str:
    return generate_password_hash(password)


def add_user(email: str, password_hash: str, *, admin: bool = False, verified: bool) -> User:
    """The account for an address and password checked already, added and flushed, not committed (a second
    account for the address fails the flush: IntegrityError)."""
    user = User(
        email=email,
        password_hash=password_hash,
        is_admin=admin,
        email_verified_at=utcnow() if verified else None,
    )
    db.session.add(user)
    db.session.flush()
    return user


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return generate_password_hash(secrets.token_hex(16))


def authenticate(email: str, password: str) -> User | None:
    """The user with this email and password, or None.

    An unknown email still costs one hash check, so timing does not tell which emails have accounts.
    """
    password = password or ""
    user = get_user_by_email(email) if len(password) <= MAX_PASSWORD else None
    if user is None:
        check_password_hash(_dummy_hash(), password[:MAX_PASSWORD])
        return None
    return user if check_password_hash(user.password_hash, password) else None


def check_new_password(password: str) -> None:
    if not password or len(password) < MIN_PASSWORD:
        raise InvalidInput(f"a password needs at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise InvalidInput(f"a password can have at most {MAX_PASSWORD} characters")


def bump_generation(user_id: int) -> int:
    """End every session of the user (sessions carry the generation they were started under); returns
    the new generation. An UPDATE ... + 1, so two servers bumping at once both count."""
    db.session.execute(update(User).where(User.id == user_id).values(session_generation=User.session_generation + 1))
    return db.session.scalars(select(User.session_generation).where(User.id == user_id)).one()


def end_sessions(user: User) -> None:
    """Log the user out everywhere: every session cookie issued to them so far stops working."""
    bump_generation(user.id)
    db.session.commit()


def change_password(user: User, current: str, new: str) -> int:
    """Set a new password after checking the current one; every other session of the user ends. Returns
    the new session generation, for the session that made the change to carry on under."""
    if len(current or "") > MAX_PASSWORD or not check_password_hash(user.password_hash, current or ""):
        raise InvalidInput("the current password is wrong")
    check_new_password(new)
    # Reset links mailed before the change die with it (they carry the reset generation).
    db.session.execute(
        update(User)
        .where(User.id == user.id)
        .values(password_hash=generate_password_hash(new), reset_generation=User.reset_generation + 1)
    )
    generation = bump_generation(user.id)
    db.session.commit()
    return generation


MAX_TOKEN_DAYS = 3650


def create_token(user: User, name: str, expires_in_days: int | None = None) -> tuple[ApiToken, str]:
    """A new API token for the user, valid until revoked or for `expires_in_days`; returns the row and the
    plaintext, which is never stored."""
    check_verified(user)
    name = (name or "").strip()
    if not name or len(name) > 80:
        raise InvalidInput("a token name must have 1 to 80 characters", field="name")
    check_visible("the token name", name)
    if expires_in_days is not None and not 1 <= expires_in_days <= MAX_TOKEN_DAYS:
        raise InvalidInput(f"a token expires in 1 to {MAX_TOKEN_DAYS} days", field="expires_in_days")
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user=user,
        name=name,
        token_hash=token_digest(plaintext),
        prefix=plaintext[:TOKEN_PREFIX_LENGTH],
        expires_at=utcnow() + timedelta(days=expires_in_days) if expires_in_days else None,
    )
    db.session.add(token)
    db.session.commit()
    return token, plaintext


def list_tokens(user: User) -> list[ApiToken]:
    return list(
        db.session.scalars(
            select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.created_at.desc(), ApiToken.id.desc())
        )
    )


def revoke_token(user: User, token_id: int) -> ApiToken:
    """Revoke one of the user's own tokens; revoking twice keeps the first time."""
    token = db.session.scalar(select(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user.id))
    if token is None:
        # Someone else's token is reported exactly like a missing one.
        raise NotFound("no such token")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        db.session.commit()
    return token


# Recording every use would turn each API read into a write; a few minutes' resolution is enough to tell
# a live token from a forgotten one.
TOKEN_USE_RESOLUTION = timedelta(minutes=5)


def token_digest(token: str) -> str:
    """How API tokens and invite links are stored: they are long random strings, so a plain sha256 is sound."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def user_for_token(token: str) -> User | None:
    """The owner of a valid API token, not revoked nor expired (noting when it was last used), or None."""
    if not token or len(token) > 200:
        return None
    row = (
        db.session.scalars(
            select(ApiToken)
            .where(
                ApiToken.token_hash == token_digest(token),
                ApiToken.revoked_at.is_(None),
                or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > utcnow()),
            )
            # The owner and their teams in the same query: an API upload needs them next (resolve_team).
            .options(joinedload(ApiToken.user).joinedload(User.memberships).joinedload(Membership.team))
        )
        .unique()
        .one_or_none()
    )
    if row is None:
        return None
    user = row.user
    token_id, now = row.id, utcnow()
    if row.last_used_at is None or as_utc(row.last_used_at) < now - TOKEN_USE_RESOLUTION:
        _note_use(token_id, now)  # a new transaction: the user is read again when next used
    return user


def _note_use(token_id: int, now) -> None:
    # Best effort: a busy database must not fail the request the token authenticates.
    try:
        with write_transaction():
            db.session.execute(
                update(ApiToken)
                .where(ApiToken.id == token_id)
                .where(or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at < now - TOKEN_USE_RESOLUTION))
                .values(last_used_at=now)
            )
            db.session.commit()
    except OperationalError:
        db.session.rollback()


def set_notifications(user: User, *, reveal: bool, rescore: bool, invite: bool) -> None:
    """Which notification mail the user gets (password resets and address checks are always sent)."""
    user.notify_reveal, user.notify_rescore, user.notify_invite = bool(reveal), bool(rescore), bool(invite)
    db.session.commit()
