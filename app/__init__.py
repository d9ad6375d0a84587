"""Holdout: a leaderboard and blind-test evaluation server for visual-reasoning benchmarks."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Flask, request
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.routing import IntegerConverter

from app.db import begin_writes_immediately, db, engine_options, migrate
from app.http.request_limits import request_body_limit
from app.settings import ConfigError, Settings

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"


def create_app(config: dict | None = None) -> Flask:
    app = Flask(__name__, instance_relative_config=True, template_folder=str(TEMPLATES), static_folder=str(STATIC))
    os.makedirs(app.instance_path, exist_ok=True)
    app.config.update(Settings.from_environment(app.instance_path).flask_config())
    if config:
        app.config.update(config)
        if config.get("TESTING") and "LEADERBOARD_PAGE_TTL" not in config:
            app.config["LEADERBOARD_PAGE_TTL"] = 0  # tests read pages right after changing them
        if config.get("TESTING") and "BOARD_REBUILD_SECONDS" not in config:
            app.config["BOARD_REBUILD_SECONDS"] = 0  # and boards right after changing them (a test sets a window)
    # Flask's defaults already hold MAX_CONTENT_LENGTH = None, so setdefault would never apply the limit.
    if not app.config.get("MAX_CONTENT_LENGTH"):
        app.config["MAX_CONTENT_LENGTH"] = request_body_limit(app.config["MAX_UPLOAD_MB"])
    app.config.setdefault("SQLALCHEMY_ENGINE_OPTIONS", engine_options(app.config["SQLALCHEMY_DATABASE_URI"]))
    _ensure_secret_key(app)
    # Integer URL parts larger than an INTEGER id (32-bit on PostgreSQL) are no row of ours: a plain 404.
    app.url_map.converters["int"] = BoundedIntConverter

    from app.services.catalog.label_files import secure_labels_dir
    from app.services.storage.upload_files import secure_uploads_dir

    settings = Settings.from_config(app.config)  # what the environment gave, with the caller's config over it
    secure_labels_dir(settings.hidden_labels_dir)
    settings.check()  # refuses a malformed STORAGE_URL or SITE_URL now, not at the first upload or mail
    if settings.upload_bucket is None:
        secure_uploads_dir(settings.upload_folder)
    db.init_app(app)
    migrate.init_app(app, db, directory=str(ROOT / "migrations"))

    # Imported here: blueprints and the CLI import services, which need the models defined first.
    from app import cli
    from app.api import docs as api_docs
    from app.api import v1 as api_v1
    from app.http import caching, request_limits, security
    from app.web import account, auth, console, errors, metrics, public, teams, templating
    from app.web import submissions as submission_pages

    metrics.init_app(app)  # first, so its clock starts before any other hook runs
    request_limits.init_app(app)  # before anything reads a body
    security.init_app(app)
    caching.init_app(app)  # Cache-Control and ETag of every response
    templating.init_app(app)  # links, the score filter, the visibility predicates
    blueprints = (public.bp, auth.bp, teams.bp, account.bp, submission_pages.bp, console.bp, api_v1.bp, api_docs.bp)
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    errors.register(app)
    if app.config.get("TRUSTED_PROXIES"):
        hops = int(app.config["TRUSTED_PROXIES"])
        # Flask's documented way to wrap the WSGI app: replacing the bound method is the point.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)  # type: ignore[method-assign]
    _register_write_requests(app)
    _register_jobs(app)
    cli.register(app)
    return app


def _register_jobs(app: Flask) -> None:
    # The kinds of job, registered by the services that own their work, in every process (a worker too).
    from app.services.boards import board_snapshots  # noqa: F401
    from app.services.catalog import notifications  # noqa: F401
    from app.services.intake import originals  # noqa: F401
    from app.services.mail import delivery, outbox  # noqa: F401
    from app.services.maintenance import rescore_job  # noqa: F401
    from app.services.people import addresses, password_resets, teams  # noqa: F401

    delivery.mail.init_app(app)


def _register_write_requests(app: Flask) -> None:
    @app.before_request
    def _begin_writes() -> None:
        begin_writes_immediately(request.method not in ("GET", "HEAD", "OPTIONS"))

    @app.teardown_request
    def _end_writes(_exc) -> None:
        begin_writes_immediately(False)


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


class BoundedIntConverter(IntegerConverter):
    def __init__(self, map, *args, **kwargs):  # noqa: A002 (werkzeug's parameter name)
        kwargs.setdefault("max", 2**31 - 1)
        super().__init__(map, *args, **kwargs)
