"""The console's blueprint and its gate: admins only (anonymous visitors are sent to log in, other users get 403)."""

from __future__ import annotations

from functools import wraps

from flask import Blueprint, abort
from flask_login import current_user

from app.http.security import login_manager

bp = Blueprint("console", __name__, url_prefix="/console")


def admin_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        if not current_user.is_authenticated:
            return login_manager.unauthorized()
        if not current_user.is_admin:
            abort(403)
        return view(*args, **kwargs)

    return wrapped
