"""Configuration from the environment (migrations and drift: test_migrations.py)."""
from __future__ import annotations

import pytest

from app import create_app
from app.config import ConfigError


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
