"""Holdout: a leaderboard and blind-test evaluation server for visual-reasoning benchmarks."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Flask

from app.config import ConfigError, from_environment
from app.db import db, migrate

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"


def create_app(config: dict | None = None) -> Flask:
    app = Flask(__name__, instance_relative_config=True, template_folder=str(TEMPLATES),
                static_folder=str(STATIC))
    os.makedirs(app.instance_path, exist_ok=True)
    app.config.update(from_environment(app.instance_path))
    if config:
        app.config.update(config)
    _ensure_secret_key(app)

    db.init_app(app)
    migrate.init_app(app, db, directory=str(ROOT / "migrations"))

    from app import cli, security
    from app.web import account, auth, errors, public, teams

    security.init_app(app)

    app.register_blueprint(public.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(teams.bp)
    app.register_blueprint(account.bp)
    from app.web import submissions as submission_pages

    app.register_blueprint(submission_pages.bp)
    from app.api import v1 as api_v1

    app.register_blueprint(api_v1.bp)
    errors.register(app)
    cli.register(app)
    return app


def _ensure_secret_key(app: Flask) -> None:
    if app.config.get("SECRET_KEY"):
        return
    if app.config.get("TESTING"):
        app.config["SECRET_KEY"] = secrets.token_hex(32)
        return
    if app.config.get("HOLDOUT_DEMO"):
        # The demo runs several gunicorn workers that must share one key; keep it in the instance folder.
        key_file = Path(app.instance_path) / "demo-secret-key"
        if not key_file.exists():
            key_file.write_text(secrets.token_hex(32))
            key_file.chmod(0o600)
        app.config["SECRET_KEY"] = key_file.read_text().strip()
        return
    raise ConfigError(
        "SECRET_KEY is not set. Export a long random value, e.g. "
        "SECRET_KEY=$(python -c 'import secrets; print(secrets.token_hex(32))'), "
        "or set HOLDOUT_DEMO=1 for a local demo."
    )
