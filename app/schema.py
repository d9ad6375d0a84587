"""Is the database's schema the one this code was written for? Serving refuses an older (or unknown) one."""

from __future__ import annotations

from pathlib import Path

from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask import Flask

from app.db import db
from app.settings import ConfigError

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def owned_by_the_app(object, name, type_, reflected, compare_to) -> bool:  # noqa: A002 (alembic's names)
    """Alembic's include_object: the app's tables, not procrastinate's (on PostgreSQL its schema comes from
    procrastinate itself, applied by revision 0016), which the models do not describe."""
    table = object.table.name if type_ in ("index", "column", "unique_constraint", "foreign_key_constraint") else name
    return not str(table or "").startswith("procrastinate_")


class SchemaOutOfDate(ConfigError):
    """The database has not been migrated to the code's revision; the message says what to run."""


def head_revision() -> str:
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    if head is None:  # only a migrations folder without revisions has none
        raise ConfigError(f"no migration revisions found in {MIGRATIONS}")
    return head


def current_revision(app: Flask) -> str | None:
    """The Alembic revision the database is at (None: never migrated)."""
    with app.app_context():
        try:
            with db.engine.connect() as connection:
                return MigrationContext.configure(connection).get_current_revision()
        finally:
            db.engine.dispose()  # no connection may outlive this check into a forked worker


def require_current(app: Flask) -> None:
    """Raise SchemaOutOfDate unless the database is at the newest migration."""
    head = head_revision()
    current = current_revision(app)
    if current == head:
        return
    known = {script.revision for script in ScriptDirectory(str(MIGRATIONS)).walk_revisions()}
    if current is not None and current not in known:
        raise SchemaOutOfDate(
            f"the database schema is at revision {current}, which this code does not know (it expects {head}); "
            "is the database newer than the code? Deploy the matching code version."
        )
    at = "empty (never migrated)" if current is None else f"at revision {current}"
    raise SchemaOutOfDate(
        f"the database schema is {at} but this code needs revision {head}: run `flask --app wsgi db upgrade` "
        "(with the same DATABASE_URL) before starting the server"
    )
