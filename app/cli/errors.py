"""How a command fails: a service's refusal, or a file it cannot read, becomes exit code 2 with a message
(the one the API gives, for a refusal)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import click

from app.services.errors import ServiceError


class CliError(click.ClickException):
    exit_code = 2


def read_file(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path!r}: {exc.strerror}") from exc


@contextmanager
def refusals():
    """A service's refusal becomes the command's error: exit code 2 with the message the API gives."""
    try:
        yield
    except ServiceError as exc:
        raise _fail(exc) from exc


def _fail(exc: ServiceError) -> CliError:
    lines = [exc.message] + [
        f"line {d['line']}: {d['message']}" if d["line"] and not d["message"].startswith("line ") else d["message"]
        for d in exc.details()
    ]
    return CliError("\n".join(lines))
