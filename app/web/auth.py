"""Registration, login and logout."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, redirect, render_template, request, session, url_for
from flask_login import current_user, logout_user

from app.security import start_session
from app.services.errors import ServiceError
from app.services.people import accounts, throttle
from app.web.forms import LoginForm, RegisterForm

bp = Blueprint("auth", __name__)

INVALID_LOGIN = "Invalid email or password."


def safe_next(target: str | None, default: str = "/") -> str:
    """`target` if it is a path on this site, else `default`: `next` must never send users elsewhere."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return default
    # Browsers read a backslash as a slash and drop tabs and newlines, so "/\t/evil" would become "//evil".
    if "\\" in target or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in target):
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return target


def _prepared(form, action: str):
    """The form with the page's `next` kept; a POST counts as an attempt for the client's address (behind
    TRUSTED_PROXIES, the client's own)."""
    if request.method == "GET":
        form.next.data = request.args.get("next", "")
    if request.method == "POST":
        throttle.attempt(f"{action}:{request.remote_addr or 'unknown'}")
    return form


@bp.route("/register", methods=["GET", "POST"])
def register():
    form = _prepared(RegisterForm(), "register")
    status = 200
    if form.validate_on_submit():
        try:
            user = accounts.register(form.email.data, form.password.data)
        except ServiceError as exc:
            form.form_errors.append(exc.message)
            status = exc.status
        else:
            target = safe_next(form.next.data or request.args.get("next"), default=url_for("teams.index"))
            start_session(user)
            return redirect(target)
    elif form.is_submitted():
        status = 400
    return render_template("auth/register.html", form=form), status


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = _prepared(LoginForm(), "login")
    status = 200
    if form.validate_on_submit():
        user = accounts.authenticate(form.email.data, form.password.data)
        if user is not None:
            target = safe_next(form.next.data or request.args.get("next"))
            start_session(user)
            return redirect(target)
        form.form_errors.append(INVALID_LOGIN)
        status = 401
    elif form.is_submitted():
        status = 400
    return render_template("auth/login.html", form=form, logged_in=current_user.is_authenticated), status


@bp.post("/logout")
def logout():
    # Every session of the user ends, not just this cookie: a copy taken earlier stops working too.
    if current_user.is_authenticated:
        accounts.end_sessions(current_user._get_current_object())
    logout_user()
    session.clear()
    return redirect(url_for("public.index"))
