"""Configuration, migrations and the model/migration drift check."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask_migrate import downgrade, upgrade
from sqlalchemy import inspect

from app import create_app
from app.config import ConfigError
from app.db import db


def test_refuses_to_start_without_secret_key(monkeypatch, tmp_path):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("HOLDOUT_DEMO", raising=False)
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.sqlite3'}"})


def test_demo_mode_keeps_one_key_for_all_workers(monkeypatch, tmp_path):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("HOLDOUT_DEMO", "1")
    first = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.sqlite3'}"})
    second = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.sqlite3'}"})
    assert first.config["SECRET_KEY"] and first.config["SECRET_KEY"] == second.config["SECRET_KEY"]


def test_database_url_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", "postgresql://holdout@127.0.0.1:5432/holdout")
    app = create_app({"TESTING": True})
    assert app.config["SQLALCHEMY_DATABASE_URI"] == "postgresql+psycopg://holdout@127.0.0.1:5432/holdout"


def test_max_upload_mb_must_be_a_number(monkeypatch):
    monkeypatch.setenv("MAX_UPLOAD_MB", "lots")
    with pytest.raises(ConfigError, match="MAX_UPLOAD_MB"):
        create_app({"TESTING": True})


def test_migrations_match_models(app):
    with app.app_context():
        with db.engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection, opts={"compare_type": True}),
                                    db.metadata)
    assert diff == []


def test_upgrade_on_empty_database_then_down_and_up(tmp_path):
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'empty.sqlite3'}"})
    with app.app_context():
        upgrade()
        tables = set(inspect(db.engine).get_table_names())
        assert {"benchmarks", "splits", "subsets", "submissions", "scores", "teams", "users"} <= tables
        downgrade(revision="base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        upgrade()
        assert "submissions" in inspect(db.engine).get_table_names()
        db.engine.dispose()
