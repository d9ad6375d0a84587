"""Users made straight in the database, and the header an API token is sent in."""

from __future__ import annotations

from werkzeug.security import generate_password_hash

from app.db import db
from app.models import Membership, Team, User, utcnow

PASSWORD = "correct horse battery"


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


def bearer(token: str | None) -> dict[str, str]:
    """The Authorization header for an API token; none for an anonymous caller."""
    return {"Authorization": f"Bearer {token}"} if token else {}
