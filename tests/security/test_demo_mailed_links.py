"""`make run` mails links to the port the demo serves on (issue 35), whatever HOST, PORT and SITE_URL say.

Each test reproduces what a red team found in issue 35 (FAILS: what the old code did) and guards the fix."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from app.settings import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("variables", "environment", "expected"),
    [
        ({"PORT": "8123"}, {}, "http://127.0.0.1:8123"),
        ({"PORT": "8123", "HOST": "0.0.0.0"}, {}, "http://127.0.0.1:8123"),
        ({"PORT": "8123"}, {"SITE_URL": "https://demo.example.org"}, "https://demo.example.org"),
    ],
)
def test_make_run_mails_links_to_the_port_the_demo_serves_on(tmp_path, variables, environment, expected):
    """FAILS on the old code: `make run PORT=8123` served on 8123 and mailed links to 8000. The run target's
    server line is run as make writes it, with a stand-in gunicorn that reports its SITE_URL and --bind."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gunicorn").write_text('#!/bin/sh\nprintf "%s\\n" "$SITE_URL" "$*"\n')
    (fake / "gunicorn").chmod(0o755)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SITE_URL", "HOST", "PORT", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    }
    settings = [f"{name}={value}" for name, value in variables.items()]
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", f"BIN={fake}", *settings],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in printed.splitlines() if "/gunicorn " in line]
    served = subprocess.run(
        ["sh", "-c", line], env={**env, **environment}, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert Settings(site_url=served[0]).link_base == expected
    bind = shlex.split(served[1])
    assert bind[bind.index("--bind") + 1] == f"{variables.get('HOST', '127.0.0.1')}:{variables['PORT']}"
