"""The JSON access line (LOG_FORMAT=json): its fields, and no secret that travels in a URL."""

from __future__ import annotations

import json

from serving.access_log import clean_path, clean_query, record


def test_record_fields():
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/leaderboards/nlvr2/test-u",
        "QUERY_STRING": "page=2&sort=a",
        "REMOTE_ADDR": "192.0.2.4",
        "HTTP_AUTHORIZATION": "Bearer hd_secret",
        "HTTP_COOKIE": "session=abc",
    }
    line = record(environ, "200 OK", 0.0123, 5120)
    assert line == {
        "time": line["time"],
        "method": "GET",
        "path": "/leaderboards/nlvr2/test-u",
        "query": "page=2&sort=a",
        "status": 200,
        "duration_ms": 12.3,
        "bytes": 5120,
        "remote_addr": "192.0.2.4",
    }
    assert line["time"].endswith("Z") and "T" in line["time"]
    text = json.dumps(line)
    assert "hd_secret" not in text and "abc" not in text


def test_secrets_in_urls_are_redacted():
    assert clean_path("/invites/abcDEF123") == "/invites/[redacted]"
    assert clean_path("/invites/abc/accept") == "/invites/[redacted]/accept"
    assert clean_path("/teams/3/invites") == "/teams/3/invites"
    assert (
        clean_query("access_token=s1&page=2&password=s2&API_KEY=s3")
        == "access_token=[redacted]&page=2&password=[redacted]&API_KEY=[redacted]"
    )
    assert clean_query("next=/invites/s4") == "next=/invites/[redacted]"
    assert clean_query("") == ""


def test_client_address_behind_trusted_proxies(monkeypatch):
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_X_FORWARDED_FOR": "198.51.100.1, 203.0.113.5",
    }
    assert record(environ, 200, 0.001, 1)["remote_addr"] == "127.0.0.1"  # no proxy trusted: the peer
    monkeypatch.setenv("TRUSTED_PROXIES", "1")
    assert record(environ, 200, 0.001, 1)["remote_addr"] == "203.0.113.5"
    monkeypatch.setenv("TRUSTED_PROXIES", "2")
    assert record(environ, 200, 0.001, 1)["remote_addr"] == "198.51.100.1"


def test_gunicorn_master_loads_no_app_code():
    """gunicorn.conf.py and what it loads in the master (serving/) leave the app to the workers, so each new
    worker imports the deployment's code afresh (preload_app = False)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    script = (
        "import runpy, sys; runpy.run_path('gunicorn.conf.py'); "
        "import serving.access_log, serving.metric_files; "
        "print(sorted(m for m in sys.modules if m == 'app' or m.startswith('app.')))"
    )
    env = {**os.environ, "LOG_FORMAT": "json", "PROMETHEUS_MULTIPROC_DIR": "/nonexistent-holdout-test"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
