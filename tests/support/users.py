"""Users made straight in the database, and the header an API token is sent in."""

from __future__ import annotations

import secrets

from werkzeug.security import generate_password_hash

from app.db import db
from app.models import ApiToken, Membership, Team, User, utcnow
from app.services.people import accounts

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase"  # what a test changes a password to


def make_user(
    email: str, *, admin: bool = False, team: Team | None = None, password: str = PASSWORD, verified: bool = True
) -> User:
    """A user (a member of `team` if given) with a verified address unless not `verified`; needs an
    application context."""
    # A cheap hash: scrypt would dominate the suite's time; logins check it all the same.
    user = User(
        email=email,
        password_hash=generate_password_hash(password, method="pbkdf2:sha256:1000"),
        is_admin=admin,
        email_verified_at=utcnow() if verified else None,
    )
    db.session.add(user)
    if team is not None:
        db.session.add(Membership(user=user, team=team))
    db.session.commit()
    return user


def make_token(user: User, name: str = "script") -> str:
    """An API token for the user, straight in the database: also for an account whose address is not confirmed
    (accounts.create_token refuses those since issue 35; tokens made before it still exist). The plaintext."""
    plaintext = accounts.TOKEN_PREFIX + secrets.token_urlsafe(32)
    prefix = plaintext[: accounts.TOKEN_PREFIX_LENGTH]
    db.session.add(ApiToken(user=user, name=name, token_hash=accounts.token_digest(plaintext), prefix=prefix))
    db.session.commit()
    return plaintext


def bearer(token: str | None) -> dict[str, str]:
    """The Authorization header for an API token; none for an anonymous caller."""
    return {"Authorization": f"Bearer {token}"} if token else {}
