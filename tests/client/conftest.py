"""The client as a team installs it: `pip install ./clients/python` into a temporary venv, once a session."""

from __future__ import annotations

import shutil
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
