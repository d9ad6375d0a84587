"""The client as a team installs it (`pip install ./clients/python` into a temporary venv, once a session), and
the client run in this process with its requests answered by the app (`served`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "python"

sys.path.insert(0, str(CLIENT))
from holdout_client import api  # noqa: E402  (the client is not installed in this venv)


@pytest.fixture(scope="session")
def holdout_command(tmp_path_factory) -> Path:
    """The installed `holdout` script (a venv without the server's packages: the client needs none)."""
    venv = tmp_path_factory.mktemp("client-venv")
    # Built from a copy: pip builds in the source folder, and the checkout should stay clean.
    source = tmp_path_factory.mktemp("client-source") / "python"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv / "bin" / "holdout"


@pytest.fixture
def served(app, monkeypatch, tmp_path):
    """The client's requests answered by `app` in process (uploads too: the multipart body the client builds);
    returns the (path, sent a token) of each."""
    pages = app.test_client()
    sent: list[tuple[str, bool]] = []

    def fetch(self, request, authorized=True):
        parts = urllib.parse.urlsplit(request.full_url)
        headers = dict(request.header_items())
        if self.token and authorized:
            headers["Authorization"] = f"Bearer {self.token}"
        sent.append((parts.path, "Authorization" in headers))
        response = pages.open(
            parts.path, query_string=parts.query, method=request.get_method(), data=request.data, headers=headers
        )
        if response.status_code >= 400:
            raise api._error(response.status_code, response.get_data())
        return response.get_data()

    def upload_once(self, fields, file_name, file_data, progress, key):
        parts, content_type = api.multipart(fields, file_name, file_data)
        headers = {"Content-Type": content_type, "Idempotency-Key": key, "Authorization": f"Bearer {self.token}"}
        sent.append(("/api/v1/submissions", True))
        response = pages.post("/api/v1/submissions", data=b"".join(parts), headers=headers)
        if response.status_code >= 400:
            raise api._error(response.status_code, response.get_data())
        return response.json

    monkeypatch.setattr(api.Client, "_fetch", fetch)
    monkeypatch.setattr(api.Client, "_upload_once", upload_once)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOLDOUT_URL", "http://localhost")
    monkeypatch.delenv("HOLDOUT_TOKEN", raising=False)
    return sent
