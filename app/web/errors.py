"""Error pages (HTML), and the one error answer (app/http/errors.py) for scripts and the API; every error
rolls the session back."""

from __future__ import annotations

import contextlib

from flask import Flask, current_app, g, render_template, request
from flask_wtf.csrf import CSRFError
from jinja2 import Template
from markupsafe import escape
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException

from app import observability
from app.db import db, disk_full
from app.http import request_limits
from app.http.errors import ErrorAnswer, answer_to
from app.http.security import login_manager
from app.services.errors import ServiceError

MESSAGES = {
    400: "The request could not be understood.",
    403: "You are not allowed to do that.",
    404: "There is nothing here.",
    405: "That method is not allowed here.",
    409: "That conflicts with the current state.",
    413: "The upload is larger than this server accepts.",
    415: "This address takes a form (urlencoded or multipart), not JSON; the API takes JSON.",
    422: "The input is not valid.",
    429: "Too many requests; please wait before trying again.",
    500: "Something went wrong on our side. It has been logged.",
    503: "The service is briefly unavailable; please retry in a moment.",
}
DATABASE_RETRY_AFTER = 5  # seconds: a database restart or failover usually takes a few
DATABASE_FULL_MESSAGE = (
    "The server's database is full, so nothing was stored. Retrying will not help until the maintainers free "
    "space; reading boards still works."
)
CSRF_MESSAGE = "The form has expired or did not come from this site. Go back, reload the page and send it again."
# Statuses with a page of their own in templates/errors/; the rest use errors/error.html.
PAGES = (403, 404, 413, 429, 500)


def _wants_json() -> bool:
    """The API always answers JSON; elsewhere JSON goes to clients that prefer it to HTML (scripts, the
    upload page's XMLHttpRequest), and browsers (or no Accept header at all) get a page."""
    if request.path.startswith("/api/") or request.headers.get("X-Requested-With") == "fetch":
        return True  # the API, and the upload page's script, which shows the message in the form
    accept = request.accept_mimetypes
    return accept["application/json"] > accept["text/html"]


def _rollback() -> None:
    with contextlib.suppress(Exception):  # a broken connection must not hide the original error
        db.session.rollback()


def _render(answer: ErrorAnswer, own_page: bool = True):
    if _wants_json():
        return answer.json()
    status, message = answer.status, answer.message
    templates: list[str | Template] = (
        [f"errors/{status}.html", "errors/error.html"] if status in PAGES and own_page else ["errors/error.html"]
    )
    try:
        page = render_template(
            templates, status=status, message=message, details=answer.details, retry_after=answer.retry_after
        )
    except Exception:
        # The error page itself failed (say the database is down and the layout asks who is logged in):
        # answer with bare HTML rather than a traceback.
        page = f"<!doctype html><title>Error {status} · Holdout</title><h1>Error {status}</h1><p>{escape(message)}</p>"
    return page, status, answer.all_headers()


def register(app: Flask) -> None:
    """The error handlers below, for every page and the API."""
    app.register_error_handler(ServiceError, _service_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
    app.register_error_handler(PoolTimeout, _database_error)
    app.register_error_handler(DBAPIError, _database_error)


def _service_error(exc: ServiceError):
    _rollback()
    return _render(answer_to(exc))


def _http_error(exc: HTTPException):
    _rollback()
    status = exc.code or 500
    message = MESSAGES.get(status, exc.description or "Error")
    if isinstance(exc, CSRFError):
        message = CSRF_MESSAGE
    own_page = True
    if status == 413:
        message = request_limits.refusal(current_app.config["MAX_UPLOAD_MB"])
        own_page = request_limits.is_upload_route()  # errors/413.html is about prediction files
    elif isinstance(exc, request_limits.JsonTooDeep):
        message = exc.description
    headers = {}
    valid_methods = getattr(exc, "valid_methods", None)  # MethodNotAllowed's
    if status == 405 and valid_methods:
        headers["Allow"] = ", ".join(valid_methods)
    return _render(ErrorAnswer(status, message, headers=headers), own_page=own_page)


def _unexpected(exc: Exception):
    _rollback()
    current_app.logger.exception("unhandled error on %s %s", request.method, request.path)
    return _render(ErrorAnswer(500, MESSAGES[500]))


def _database_full(exc: Exception):
    """The database's disk is full: nothing was stored, and no retry helps until a maintainer frees space,
    so the 503 carries no Retry-After (a client would retry forever); /healthz says why."""
    _rollback()
    reason = _first_line(exc) or "disk full"
    observability.storage_failure("database", reason)
    current_app.logger.error("database full on %s %s: %s", request.method, request.path, reason)
    g._login_user = login_manager.anonymous_user()  # the layout must not ask the database who is logged in
    return _render(ErrorAnswer(503, DATABASE_FULL_MESSAGE))


def _first_line(exc: Exception) -> str:
    """The driver's own message (its first line), for the log and the metrics."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else ""


def _database_error(exc: Exception):
    """The database is unreachable, restarting or locked: 503 with Retry-After, not a traceback.
    The pool (pre-ping on PostgreSQL) reconnects by itself once it is back. Other database errors
    are bugs: 500 and logged."""
    if disk_full(exc):
        return _database_full(exc)
    unavailable = isinstance(exc, (OperationalError, InterfaceError, PoolTimeout)) or getattr(
        exc, "connection_invalidated", False
    )
    if not unavailable:
        return _unexpected(exc)
    _rollback()
    current_app.logger.warning(
        "database unavailable on %s %s: %s", request.method, request.path, _first_line(exc) or type(exc).__name__
    )
    # The layout asks who is logged in, which needs the database: render the page for a visitor.
    g._login_user = login_manager.anonymous_user()
    return _render(ErrorAnswer(503, MESSAGES[503], retry_after=DATABASE_RETRY_AFTER))
