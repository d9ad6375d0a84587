"""Shared fixtures: an app on a migrated SQLite copy with its own folders, a client and a CLI runner."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from flask_migrate import upgrade

from app import create_app
from app.db import db

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("HOLDOUT_SHARED_DATA") or REPO.parent / "shared" / "data")


def make_config(tmp_path: Path, database: Path) -> dict:
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": f"sqlite:///{database}",
        "HIDDEN_LABELS_DIR": str(tmp_path / "hidden_labels"),
        "SUBMISSIONS_DIR": str(tmp_path / "submissions"),
    }


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory) -> Path:
    """Run the migrations once; each test gets a copy of the result."""
    folder = tmp_path_factory.mktemp("template")
    database = folder / "template.sqlite3"
    app = create_app(make_config(folder, database))
    with app.app_context():
        upgrade()
        db.engine.dispose()
    return database


@pytest.fixture
def app(tmp_path, migrated_database):
    database = tmp_path / "holdout.sqlite3"
    shutil.copy(migrated_database, database)
    app = create_app(make_config(tmp_path, database))
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def ctx(app):
    """An application context for calling services directly."""
    with app.app_context():
        yield app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real benchmark data not found at {SHARED_DATA} (set HOLDOUT_SHARED_DATA)")
    return SHARED_DATA
