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


def form_status(form) -> int:
    """400 for a missing or stale CSRF token (as elsewhere on the site), 422 for a field's content."""
    return 400 if "csrf_token" in form.errors else 422
