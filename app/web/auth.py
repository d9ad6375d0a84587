"""Registration, login and logout."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, flash, make_response, redirect, render_template, request, session, url_for
from flask_login import current_user, logout_user

from app.http.security import start_session
from app.services.errors import ServiceError
from app.services.people import accounts, addresses, password_resets, throttle
from app.web.forms import ForgotPasswordForm, LoginForm, RegisterForm, ResetPasswordForm

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


REGISTER_ANSWER = (
    "A mail is on its way to {email}: follow its link to confirm the address, then log in. If the address has "
    "an account already, the mail says so instead. No mail after a few minutes? Check the spam folder."
)


@bp.route("/register", methods=["GET", "POST"])
def register():
    form = _prepared(RegisterForm(), "register")
    status = 200
    if form.validate_on_submit():
        try:
            email = addresses.register(form.email.data, form.password.data)
        except ServiceError as exc:
            form.form_errors.append(exc.message)
            status = exc.status
        else:
            # The same page whether the address had an account or not, and no session (one for a new account
            # only would tell): the newcomer logs in once the mailed link has confirmed the address.
            target = safe_next(form.next.data or request.args.get("next"), default="") or None
            sent = REGISTER_ANSWER.format(email=email)
            return render_template("auth/register.html", form=None, sent=sent, next=target)
    elif form.is_submitted():
        status = 400
    return render_template("auth/register.html", form=form, sent=None), status


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


FORGOT_ANSWER = (
    "If an account has this address, a link to choose a new password is on its way to it; it works once, for "
    f"{password_resets.RESET_MINUTES} minutes. No mail after a few minutes? Check the spam folder, or ask again."
)


@bp.route("/password/forgot", methods=["GET", "POST"])
def forgot_password():
    form = ForgotPasswordForm()
    if request.method == "POST":
        throttle.attempt(f"forgot:{request.remote_addr or 'unknown'}")
    if form.validate_on_submit():
        # The same answer for every address: whether one has an account is nobody's business here.
        password_resets.request_reset(form.email.data)
        return render_template("auth/forgot.html", form=None, sent=FORGOT_ANSWER)
    status = 400 if form.is_submitted() else 200
    return render_template("auth/forgot.html", form=form, sent=None), status


@bp.route("/password/reset/<reset_token>", methods=["GET", "POST"])
def reset_password(reset_token: str):
    token = reset_token
    form = ResetPasswordForm()
    status, link_ok = 200, True
    if request.method == "POST":
        throttle.attempt(f"reset:{request.remote_addr or 'unknown'}")
        if form.validate_on_submit():
            try:
                password_resets.reset_password(token, form.new_password.data, revoke_tokens=form.revoke_tokens.data)
            except ServiceError as exc:
                form.form_errors.append(exc.message)
                status, link_ok = exc.status, exc.message != password_resets.LINK_INVALID
            else:
                logout_user()
                session.clear()
                flash("Your password is changed and every session of the account has ended: log in with it now.")
                return redirect(url_for("auth.login"), code=303)
        else:
            status = 400
    else:
        try:
            password_resets.open_link(token)
        except ServiceError as exc:
            form.form_errors.append(exc.message)
            status, link_ok = exc.status, False
    response = make_response(render_template("auth/reset.html", form=form, usable=link_ok), status)
    # The link's secret is in this page's address: neither kept by caches nor sent on to other sites.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
