"""Errors the use cases raise; the web, API and CLI layers turn them into answers."""
from __future__ import annotations

from app.evaluation import Problem


class ServiceError(Exception):
    status = 400

    def __init__(self, message: str, problems: list[Problem] | None = None):
        super().__init__(message)
        self.message = message
        self.problems = problems or []

    def details(self) -> list[dict]:
        return [{"line": p.line, "message": p.message} for p in self.problems]


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class InvalidInput(ServiceError):
    status = 422
