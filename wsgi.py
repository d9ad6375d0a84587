"""WSGI entry point: `gunicorn -c gunicorn.conf.py wsgi:app`, `flask --app wsgi ...`."""

import sys

import click
from sqlalchemy.exc import InterfaceError, OperationalError

from app import create_app
from app.schema import SchemaOutOfDate, require_current
from app.settings import ConfigError

try:
    app = create_app()
except ConfigError as exc:
    # A setting is wrong: say which, without a traceback. A `flask` command exits 2 (the settings are the
    # caller's to fix); a WSGI server gets 4, "the application cannot load", and stops instead of restarting
    # workers that would fail the same way.
    print(f"holdout: {exc}", file=sys.stderr, flush=True)
    sys.exit(2 if click.get_current_context(silent=True) is not None else 4)

# Serving refuses a database whose schema is behind the code. The `flask` commands load this module from
# inside a click command (that is how `flask db upgrade` can bring the schema up to date) and skip it.
if click.get_current_context(silent=True) is None:
    try:
        require_current(app)
    except SchemaOutOfDate as exc:
        print(f"holdout: refusing to serve: {exc}", file=sys.stderr, flush=True)
        # 4 is what WSGI servers treat as "the application cannot load": gunicorn stops instead of
        # restarting workers that would fail the same way.
        sys.exit(4)
    except (OperationalError, InterfaceError) as exc:
        # The database is briefly unreachable (restart, failover): a worker booting now serves 503s
        # until it is back rather than taking the whole server down.
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()
        print(
            f"holdout: database unreachable at startup, schema not checked: {reason[0] if reason else exc}",
            file=sys.stderr,
            flush=True,
        )
