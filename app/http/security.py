"""Authentication plumbing: sessions (Flask-Login) bound to the user's session generation, bearer tokens
for the API, CSRF, the trusted Host names."""

from __future__ import annotations

from flask import Flask, redirect, request, session, url_for
from flask_login import LoginManager, current_user, login_user
from flask_wtf.csrf import CSRFProtect
from werkzeug.exceptions import UnsupportedMediaType

from app.db import db
from app.http.errors import ErrorAnswer
from app.http.request_limits import is_upload_route
from app.models import User
from app.services.errors import InvalidInput, NotFound

login_manager = LoginManager()
login_manager.login_view = "auth.login"
login_manager.login_message = "Please log in to continue."
login_manager.session_protection = "strong"
csrf = CSRFProtect()
SESSION_GENERATION = "_generation"
# The Host names a deployment answers to unless TRUSTED_HOSTS or SERVER_NAME says otherwise: the machine
# itself, so `make run` and the tests work as they are.
LOCAL_HOSTS = ("localhost", "127.0.0.1")


def start_session(user: User) -> None:
    """Log the user in on a fresh session stamped with their session generation."""
    # Nothing planted in the session beforehand survives into the logged-in one.
    session.clear()
    login_user(user)
    session[SESSION_GENERATION] = user.session_generation


def continue_session(generation: int) -> None:
    """Keep the current session alive after the user's generation was bumped by this very session (a
    password change): every other session ends, this one carries on."""
    session[SESSION_GENERATION] = generation


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    try:
        user = db.session.get(User, int(user_id))
    except (TypeError, ValueError):
        return None
    # A cookie from before the user's last logout, password change or "sign out everywhere" is refused,
    # whichever server or worker it is shown to.
    if user is None or session.get(SESSION_GENERATION, 0) != user.session_generation:
        return None
    return user


@login_manager.unauthorized_handler
def unauthorized():
    """API clients get a 401 JSON answer; browsers are sent to log in and come back afterwards."""
    if request.path.startswith("/api/"):
        return ErrorAnswer(401, "authentication required").json()
    # Only a page can be returned to; after a refused POST the user starts again from the login page.
    if request.method in ("GET", "HEAD"):
        return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
    return redirect(url_for("auth.login"))


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for a header of any other form. The
    scheme name is case-insensitive (RFC 9110); the token itself is not."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


# Everything the pages use is served from this site: no inline script or style, no framing, no plugins.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "base-uri 'self'; form-action 'self'; object-src 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def _security_headers(response):
    # setdefault: a view may ask for something stricter (the invite page sends no Referer at all).
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _json_texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _json_texts(key)
            yield from _json_texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_texts(item)


MAX_FORM_PARTS = 20  # fields and files of one form; the upload form has 10
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
REPLACEMENT = "\ufffd"  # what werkzeug decodes invalid UTF-8 in a form field to


def too_many_parts(count: int) -> InvalidInput:
    return InvalidInput(f"the form has {count} parts; a form may have at most {MAX_FORM_PARTS}")


def check_form_parts() -> None:
    """The form's number of parts and the text of its fields, which must have been UTF-8 (422 naming it)."""
    parts = sum(len(values) for values in request.form.listvalues()) + sum(
        len(values) for values in request.files.listvalues()
    )
    if parts > MAX_FORM_PARTS:
        raise too_many_parts(parts)
    for name, values in request.form.lists():
        if name is not None and (REPLACEMENT in name or any(REPLACEMENT in value for value in values)):
            field = repr(name[:80]) if REPLACEMENT not in name else "name"
            raise InvalidInput(f"form field {field} is not valid UTF-8; send text fields as UTF-8")


def _check_text_input():
    """Refuse input no field accepts, before CSRF or any query reads it.

    A NUL byte: no text needs one, and PostgreSQL text refuses it (a 500 where a 4xx belongs). An address
    with one is a 404; one in the query string, a form or a JSON body is a 422 naming the field. A form part
    without a name (its key is None, which Flask-WTF's CSRF check cannot handle) is a 422 too. Every form the
    CSRF check will read is read here first; multipart bodies of the API (exempt from CSRF) are left to the
    API, so an unauthenticated upload is never parsed before its token is checked. Every read is bounded by
    app/http/request_limits.py, whose hook runs before this one.
    """
    if "\x00" in request.path:
        raise NotFound("there is nothing at an address with a NUL byte")
    fields = [(f"query parameter {name!r}", v) for name, values in request.args.lists() for v in [name, *values]]
    has_body = request.method in BODY_METHODS  # a body sent with a GET is never read
    if has_body and request.is_json and not request.path.startswith("/api/"):
        # Flask-WTF would read a JSON body as the form, and a list or a number there is a 500.
        raise UnsupportedMediaType("This address takes a form (urlencoded or multipart), not JSON; the API takes JSON.")
    if has_body and (not request.path.startswith("/api/") or request.mimetype == "application/x-www-form-urlencoded"):
        for name, values in request.form.lists():
            if name is None:
                raise InvalidInput("a part of the form has no name")
            fields += [(f"form field {name!r}", v) for v in [name, *values]]
        if request.mimetype in ("multipart/form-data", "application/x-www-form-urlencoded"):
            check_form_parts()
    if has_body and request.is_json:
        fields += [("the JSON body", v) for v in _json_texts(request.get_json(silent=True))]
    for where, value in fields:
        if "\x00" in value:
            raise InvalidInput(f"{where[:80]} contains a NUL byte, which no field accepts")


def _uploads_need_a_login():
    """A page's upload from a visitor who is not logged in is sent to log in before its body is read (the
    CSRF check would otherwise parse the whole file first). The API checks its token before reading."""
    page_upload = request.method == "POST" and is_upload_route() and not request.path.startswith("/api/")
    if page_upload and not current_user.is_authenticated:
        return login_manager.unauthorized()
    return None


def trusted_hosts(config) -> list[str] | None:
    """TRUSTED_HOSTS for Flask: a request with another Host header is answered 400 before any view runs, so
    no absolute URL (an invite link, a redirect) is ever built from a Host an attacker chose. With SERVER_NAME
    set, URLs are built from it and only it is accepted; with neither, only the machine's own names are."""
    hosts = config.get("TRUSTED_HOSTS")
    if hosts:
        return list(hosts)
    if config.get("SERVER_NAME"):
        # Flask 3.1 builds URLs from SERVER_NAME but no longer refuses other hosts by itself.
        return [config["SERVER_NAME"].rsplit(":", 1)[0]]
    return list(LOCAL_HOSTS)


def init_app(app: Flask) -> None:
    app.config["TRUSTED_HOSTS"] = trusted_hosts(app.config)
    app.before_request(_uploads_need_a_login)
    app.before_request(_check_text_input)  # before the CSRF check, which reads the form it vets
    login_manager.init_app(app)
    csrf.init_app(app)
    app.after_request(_security_headers)
