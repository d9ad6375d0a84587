"""Error pages (HTML) and JSON errors for the API; every error rolls the session back."""
from __future__ import annotations

from flask import Flask, render_template, request
from werkzeug.exceptions import HTTPException

from app.db import db
from app.services.errors import ServiceError

MESSAGES = {
    400: "The request could not be understood.",
    403: "You are not allowed to do that.",
    404: "There is nothing here.",
    405: "That method is not allowed here.",
    409: "That conflicts with the current state.",
    413: "The upload is larger than this server accepts.",
    422: "The input is not valid.",
    429: "Too many requests; please wait before trying again.",
    500: "Something went wrong on our side. It has been logged.",
    503: "The service is briefly unavailable; please retry in a moment.",
}


def _wants_json() -> bool:
    return request.path.startswith("/api/") or request.accept_mimetypes.best == "application/json"


def _render(status: int, message: str, details: list[dict] | None = None):
    if _wants_json():
        return {"error": message, "details": details or []}, status
    return (
        render_template("errors/error.html", status=status, message=message, details=details or []),
        status,
    )


def register(app: Flask) -> None:
    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError):
        db.session.rollback()
        return _render(exc.status, exc.message, exc.details())

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        db.session.rollback()
        status = exc.code or 500
        message = MESSAGES.get(status, exc.description or "Error")
        if status == 413:
            message = f"The upload is larger than this server accepts ({app.config['MAX_UPLOAD_MB']} MB)."
        return _render(status, message)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        db.session.rollback()
        app.logger.exception("unhandled error on %s %s", request.method, request.path)
        return _render(500, MESSAGES[500])
