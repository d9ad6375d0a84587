"""The secrets of links mailed to people, signed with SECRET_KEY (itsdangerous): nothing to store, and a
link names what it opens (an account and its reset generation, an address, an invitation) so it cannot be
turned to anything else. Each purpose has its own salt: a verification link is no reset link."""

from __future__ import annotations

from typing import Any

from itsdangerous import BadData, URLSafeSerializer, URLSafeTimedSerializer

from app import settings

RESET = "password-reset"
VERIFY = "verify-address"
INVITE = "team-invite"


def sign(purpose: str, payload: Any) -> str:
    return URLSafeTimedSerializer(settings.current().secret_key, salt=purpose).dumps(payload)


def read(purpose: str, token: str, max_age: int) -> Any | None:
    """The payload of a link signed for `purpose` no more than `max_age` seconds ago, else None."""
    if not token or len(token) > 500:
        return None
    try:
        return URLSafeTimedSerializer(settings.current().secret_key, salt=purpose).loads(token, max_age=max_age)
    except BadData:
        return None


def sign_for_good(purpose: str, payload: Any) -> str:
    """A signed token without a time (an invitation carries its own expiry in its row)."""
    return URLSafeSerializer(settings.current().secret_key, salt=purpose).dumps(payload)
