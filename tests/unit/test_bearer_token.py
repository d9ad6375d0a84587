"""`Authorization: Bearer <token>` is parsed in one place (app.http.security.bearer_token), for the API and /metrics."""

from __future__ import annotations

import pytest

from app.http.security import bearer_token


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer hd_abc", "hd_abc"),
        ("bearer hd_abc", "hd_abc"),  # the scheme name is case-insensitive (RFC 9110)
        ("  BEARER   hd_abc  ", "hd_abc"),
        ("Bearer HD_ABC", "HD_ABC"),  # the token is not
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer    ", None),
        ("Basic hd_abc", None),
        ("hd_abc", None),
    ],
)
def test_bearer_token(header, token):
    assert bearer_token(header) == token
