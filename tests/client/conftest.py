"""The client as a team installs it: `pip install ./clients/python` into a temporary venv, once a session."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "python"


@pytest.fixture(scope="session")
def holdout_command(tmp_path_factory) -> Path:
    """The installed `holdout` script (a venv without the server's packages: the client needs none)."""
    venv = tmp_path_factory.mktemp("client-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
         "--disable-pip-version-check", str(CLIENT)],
        capture_output=True, text=True, timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv / "bin" / "holdout"
