"""The settings are one typed object (app/settings.py) with one set of defaults: what an empty environment
gives, what a config without the key gives, and what the deployment table says are the same values."""

from __future__ import annotations

import dataclasses

import pytest

from app.settings import DEFAULT_INSTANCE, ConfigError, Settings, settings_table_markdown

FIELDS = dataclasses.fields(Settings)


def test_an_empty_environment_and_an_empty_config_give_the_fields_defaults():
    assert Settings.from_environment(DEFAULT_INSTANCE, {}) == Settings()
    assert Settings.from_config({}) == Settings()
    assert Settings().job_max_attempts == 4 and Settings().storage_timeout == 10.0


def test_flask_config_holds_every_setting_under_its_key_and_reads_back_the_same():
    settings = Settings.from_environment(DEFAULT_INSTANCE, {"JOB_MAX_ATTEMPTS": "7", "AWS_REGION": "eu-central-1"})
    config = settings.flask_config()
    assert config["JOB_MAX_ATTEMPTS"] == 7 and config["S3_REGION"] == "eu-central-1"
    assert config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///") and config["MAIL_SUPPRESS_SEND"] is False
    assert {field.metadata["key"] for field in FIELDS} <= set(config)
    assert Settings.from_config(config) == settings


def test_defaults_that_depend_on_the_instance_folder_or_the_database_follow_them(tmp_path):
    settings = Settings.from_environment(tmp_path, {"DATABASE_URL": "postgres://h@db/holdout"})
    assert settings.submissions_dir == tmp_path / "submissions"
    assert settings.database_url == "postgresql+psycopg://h@db/holdout" and settings.job_queue == "procrastinate"
    assert Settings.from_environment(tmp_path, {}).job_queue == "inline"


def test_a_bad_value_is_refused_naming_its_variable():
    with pytest.raises(ConfigError, match="JOB_MAX_ATTEMPTS must be a whole number of at least 1, got '0'"):
        Settings.from_environment(DEFAULT_INSTANCE, {"JOB_MAX_ATTEMPTS": "0"})
    with pytest.raises(ConfigError, match="MAIL_USE_TLS must be 1/true/yes or 0/false/no"):
        Settings.from_environment(DEFAULT_INSTANCE, {"MAIL_USE_TLS": "maybe"})


def test_the_settings_table_lists_every_setting_with_its_default_and_what_it_does():
    rows = settings_table_markdown().splitlines()
    assert rows[0] == "| Setting | Default | What it does |"
    body = rows[2:]
    assert len(body) == len(FIELDS)
    for field, row in zip(FIELDS, body, strict=True):
        name, default, doc = (cell.strip() for cell in row.strip("|").split(" | "))
        assert name == " or ".join(f"`{env}`" for env in field.metadata["env"])
        assert default and len(doc) > 10, row
    assert "| `JOB_MAX_ATTEMPTS` | `4` |" in settings_table_markdown()
    assert "| `AWS_DEFAULT_REGION` or `AWS_REGION` | unset |" in settings_table_markdown()
