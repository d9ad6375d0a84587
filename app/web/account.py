"""The account page: API tokens, the password, mail settings and the address check."""

from __future__ import annotations

from flask import Blueprint, flash, make_response, redirect, render_template, url_for
from flask_login import current_user, login_required

from app.http.security import continue_session
from app.models import utcnow
from app.services.errors import ServiceError
from app.services.people import accounts, addresses
from app.web.forms import ConfirmForm, NotificationsForm, PasswordForm, TokenForm

bp = Blueprint("account", __name__)


def _me():
    return current_user._get_current_object()


def _page(
    form: TokenForm, *, new_token: str | None = None, status: int = 200, password_form: PasswordForm | None = None
):
    me = _me()
    response = make_response(
        render_template(
            "account/index.html",
            form=form,
            tokens=accounts.list_tokens(me),
            refusal=addresses.refusal(me),
            confirm=ConfirmForm(),
            new_token=new_token,
            password_form=password_form or PasswordForm(formdata=None),
            notifications=NotificationsForm(
                formdata=None,
                notify_reveal=me.notify_reveal,
                notify_rescore=me.notify_rescore,
                notify_invite=me.notify_invite,
            ),
            now=utcnow(),
        ),
        status,
    )
    if new_token:
        response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/account")
@login_required
def index():
    return _page(TokenForm())


@bp.post("/account/tokens")
@login_required
def create_token():
    form = TokenForm()
    if not form.validate_on_submit():
        return _page(form, status=400)
    try:
        days = int(form.expires_in_days.data) if form.expires_in_days.data else None
        _, plaintext = accounts.create_token(_me(), form.name.data, expires_in_days=days)
    except ServiceError as exc:
        form.form_errors.append(exc.message)
        return _page(form, status=exc.status)
    # The plaintext exists only in this response: it is not stored, flashed or put in the session.
    return _page(TokenForm(formdata=None), new_token=plaintext)


@bp.post("/account/tokens/<int:token_id>/revoke")
@login_required
def revoke_token(token_id: int):
    token = accounts.revoke_token(_me(), token_id)
    flash(f"Token {token.name!r} is revoked; scripts using it will be refused.")
    return redirect(url_for("account.index"))


@bp.post("/account/password")
@login_required
def change_password():
    form = PasswordForm()
    if not form.validate_on_submit():
        return _page(TokenForm(formdata=None), password_form=form, status=400)
    try:
        generation = accounts.change_password(_me(), form.current_password.data, form.new_password.data)
    except ServiceError as exc:
        form.form_errors.append(exc.message)
        return _page(TokenForm(formdata=None), password_form=form, status=exc.status)
    continue_session(generation)  # this browser stays logged in; every other session has ended
    flash("Your password is changed; every other session of yours is signed out.")
    return redirect(url_for("account.index"), code=303)


@bp.post("/account/notifications")
@login_required
def notifications():
    form = NotificationsForm()
    if not form.validate_on_submit():
        return _page(TokenForm(formdata=None), status=400)
    accounts.set_notifications(
        _me(), reveal=form.notify_reveal.data, rescore=form.notify_rescore.data, invite=form.notify_invite.data
    )
    flash("Your mail settings are saved.")
    return redirect(url_for("account.index"), code=303)


@bp.post("/account/verify/resend")
@login_required
def resend_verification():
    if not ConfirmForm().validate_on_submit():
        return redirect(url_for("account.index"), code=303)
    addresses.resend(_me())
    flash(f"A new confirmation link is on its way to {_me().email}.")
    return redirect(url_for("account.index"), code=303)


@bp.get("/account/verify/<verify_token>")
def verify(verify_token: str):
    # No login needed: the signed link shows the address is its reader's. A bad link is a 422 page.
    user = addresses.verify(verify_token)
    return render_template("account/verified.html", email=user.email)
