"""Configuration from the environment (migrations and drift: test_migrations.py)."""

from __future__ import annotations

import pytest

from app import create_app
from app.settings import ConfigError


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


@pytest.mark.parametrize(
    "name, raw",
    [
        ("PROBE_DISTANCE", "lots"),
        ("PROBE_DISTANCE", "1.5"),
        ("LEADERBOARD_PAGE_TTL", "-1"),
        ("LEADERBOARD_PAGE_TTL", "nan"),
        ("LEADERBOARD_PAGE_TTL", "soon"),
    ],
)
def test_numeric_settings_out_of_range_are_refused_by_name(monkeypatch, name, raw):
    monkeypatch.setenv(name, raw)
    with pytest.raises(ConfigError, match=name):
        create_app({"TESTING": True})


def test_leaderboard_page_ttl_comes_from_the_environment_and_is_off_in_tests(monkeypatch, tmp_path):
    database = f"sqlite:///{tmp_path / 'x.sqlite3'}"
    monkeypatch.setenv("SECRET_KEY", "k" * 32)
    monkeypatch.delenv("LEADERBOARD_PAGE_TTL", raising=False)
    assert create_app({"SQLALCHEMY_DATABASE_URI": database}).config["LEADERBOARD_PAGE_TTL"] == 2.0
    monkeypatch.setenv("LEADERBOARD_PAGE_TTL", "5")
    assert create_app({"SQLALCHEMY_DATABASE_URI": database}).config["LEADERBOARD_PAGE_TTL"] == 5.0
    assert create_app({"TESTING": True}).config["LEADERBOARD_PAGE_TTL"] == 0
    assert create_app({"TESTING": True, "LEADERBOARD_PAGE_TTL": 5.0}).config["LEADERBOARD_PAGE_TTL"] == 5.0
