"""STORAGE_URL and S3_ENDPOINT_URL (app/settings.py `Settings.upload_location`): empty keeps SUBMISSIONS_DIR, a path or
file:///path names another folder, s3://bucket/prefix a bucket; anything else refuses to start, naming the
variable and never repeating what may be a credential. STORAGE_TIMEOUT, the store's budget, within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import create_app
from app.settings import ConfigError, S3Location, Settings
from tests.conftest import make_config
from tests.support.api_world import build_world, post_file

BASE = {"submissions_dir": Path("/srv/holdout/submissions")}


@pytest.mark.parametrize(
    "url, endpoint, region, expected",
    [
        ("", None, None, Path("/srv/holdout/submissions")),
        ("  ", None, None, Path("/srv/holdout/submissions")),
        ("/data/uploads", None, None, Path("/data/uploads")),
        ("relative/uploads", None, None, Path("relative/uploads")),
        ("file:///data/up%20loads", None, None, Path("/data/up loads")),
        ("file://localhost/data/uploads", None, None, Path("/data/uploads")),
        ("s3://holdout-uploads", None, None, S3Location("holdout-uploads", "")),
        ("s3://holdout-uploads/", None, None, S3Location("holdout-uploads", "")),
        (
            "s3://holdout.uploads/prod/originals/",
            None,
            "eu-west-1",
            S3Location("holdout.uploads", "prod/originals", None, "eu-west-1"),
        ),
        ("s3://holdout/p", "http://127.0.0.1:8333/", None, S3Location("holdout", "p", "http://127.0.0.1:8333")),
        ("S3://holdout/p", "https://minio.internal", None, S3Location("holdout", "p", "https://minio.internal")),
    ],
)
def test_where_uploads_are_kept(url, endpoint, region, expected):
    settings = Settings(**BASE, storage_url=url, s3_endpoint_url=endpoint, s3_region=region)
    assert settings.upload_location == expected


@pytest.mark.parametrize(
    "url, says",
    [
        ("s3://", "s3://bucket/prefix"),
        ("s3://Holdout/p", "s3://bucket/prefix"),
        ("s3://ab/p", "s3://bucket/prefix"),
        ("s3://-holdout/p", "s3://bucket/prefix"),
        ("s3://holdout/a//b", "prefix must not have empty"),
        ("s3://holdout/a/../b", "prefix must not have empty"),
        ("s3://holdout/p?region=x", "without credentials or a query"),
        ("file://otherhost/data", "file:///absolute/path"),
        ("gs://holdout/p", "s3://bucket/prefix"),
        ("http://127.0.0.1:9000/holdout", "s3://bucket/prefix"),
        ("s3:holdout/p", "s3://bucket/prefix"),
        ("s3://[::1/p", "s3://bucket/prefix"),
    ],
)
def test_a_malformed_storage_url_is_refused_by_name(url, says):
    with pytest.raises(ConfigError, match="STORAGE_URL") as info:
        Settings(**BASE, storage_url=url).check()
    assert says in str(info.value)


@pytest.mark.parametrize("url", ["s3://AKIAEXAMPLE:wJalrXUtnFEMI@holdout/p", "https://key:secret@s3.example.org"])
def test_what_may_be_a_credential_is_never_repeated(url):
    name = "STORAGE_URL" if url.startswith("s3") else "S3_ENDPOINT_URL"
    settings = {**BASE, "storage_url": "s3://holdout/p"} | {name.lower(): url}
    with pytest.raises(ConfigError, match=name) as info:
        Settings(**settings).check()
    assert "secret" not in str(info.value) and "wJalrXUtnFEMI" not in str(info.value)


@pytest.mark.parametrize("endpoint", ["127.0.0.1:8333", "ftp://s3.example.org", "http://", "http://host:port"])
def test_a_malformed_endpoint_is_refused_by_name(endpoint):
    with pytest.raises(ConfigError, match="S3_ENDPOINT_URL"):
        Settings(**BASE, storage_url="s3://holdout/p", s3_endpoint_url=endpoint).check()


def test_the_server_refuses_to_start_with_a_malformed_storage_url(monkeypatch):
    monkeypatch.setenv("STORAGE_URL", "s3://No_Such/Bucket")
    with pytest.raises(ConfigError, match="STORAGE_URL"):
        create_app({"TESTING": True})


def test_the_environment_sets_them(monkeypatch, tmp_path):
    monkeypatch.setenv("STORAGE_URL", "s3://holdout/prod")
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://127.0.0.1:8333")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")  # boto3 reads only AWS_DEFAULT_REGION: passed on for it
    settings = Settings.from_config(create_app({"TESTING": True}).config)
    assert settings.upload_bucket == S3Location("holdout", "prod", "http://127.0.0.1:8333", "eu-central-1")


@pytest.mark.parametrize("raw, seconds", [(None, 10.0), ("2.5", 2.5), ("0.5", 0.5), ("25", 25.0)])
def test_storage_timeout_is_the_stores_budget(monkeypatch, raw, seconds):
    if raw is None:
        monkeypatch.delenv("STORAGE_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("STORAGE_TIMEOUT", raw)
    assert Settings.from_config(create_app({"TESTING": True}).config).storage_timeout == seconds


@pytest.mark.parametrize("raw", ["0", "0.1", "60", "soon", "nan"])
def test_a_storage_timeout_out_of_bounds_is_refused_by_name(monkeypatch, raw):
    """Above 25 s a request could wait past gunicorn's 60 s (the write, then its check after the commit)."""
    monkeypatch.setenv("STORAGE_TIMEOUT", raw)
    with pytest.raises(ConfigError, match="STORAGE_TIMEOUT must be a number of seconds between 0.5 and 25"):
        create_app({"TESTING": True})


def test_a_storage_url_folder_takes_the_uploads(tmp_path, database_url):
    folder = tmp_path / "elsewhere"
    app = create_app({**make_config(tmp_path, database_url), "STORAGE_URL": f"file://{folder}"})
    world = build_world(app)
    assert post_file(app.test_client(), world, "member", world.predictions()).status_code == 201
    assert [p.suffix for p in folder.rglob("*") if p.is_file()] == [".gz"]
    assert not (tmp_path / "submissions").exists()  # SUBMISSIONS_DIR is not used
    result = app.test_cli_runner().invoke(args=["uploads", "check"])
    assert result.exit_code == 0 and "uploads and rows agree" in result.output
