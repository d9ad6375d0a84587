"""Browser-like helpers for web tests: CSRF stays on, so every POST carries the token a page handed out."""

from __future__ import annotations

import re

_INPUT = re.compile(r"<input\b[^>]*>", re.IGNORECASE)
_NAME = re.compile(r"""\bname=["']csrf_token["']""")
_VALUE = re.compile(r"""\bvalue=["']([^"']+)["']""")


def csrf_token(client, path: str) -> str:
    """GET `path` and return the hidden csrf_token input's value (any form on the page will do)."""
    response = client.get(path)
    assert response.status_code == 200, f"GET {path} answered {response.status_code}, expected a page with a form"
    page = response.get_data(as_text=True)
    for tag in _INPUT.findall(page):
        if _NAME.search(tag):
            value = _VALUE.search(tag)
            if value:
                return value.group(1)
    raise AssertionError(f"no csrf_token input on {path}")


def post_form(client, path: str, data: dict | None = None, *, form_page: str | None = None, **kwargs):
    """POST `data` to `path` with the CSRF token from `form_page` (default: `path` itself), like a browser.

    Extra keyword arguments go to client.post (e.g. follow_redirects=True).
    """
    token = csrf_token(client, form_page if form_page is not None else path)
    return client.post(path, data={**(data or {}), "csrf_token": token}, **kwargs)


def register(client, email: str, password: str, **kwargs):
    """Register through the form; on success (200, "a mail is on its way") the client is NOT logged in: the
    answer is the same for an address that has an account. Log in once the mailed link is followed."""
    return post_form(client, "/register", {"email": email, "password": password}, **kwargs)


def login(client, email: str, password: str, **kwargs):
    return post_form(client, "/login", {"email": email, "password": password}, **kwargs)


def logout(client, **kwargs):
    # /login is a page with a form for everyone, logged in or not; any token of the session will do.
    return post_form(client, "/logout", form_page="/login", **kwargs)


def forget_user() -> None:
    """For tests that hold an application context, which each request reuses: flask-login's user of the
    previous request and its CSRF token (kept in g) are forgotten, so each client is seen as who it is."""
    from flask import g

    g.pop("_login_user", None)
    g.pop("csrf_token", None)
