"""Real full disks under a real gunicorn: the upload folder, then the SQLite database, on a small tmpfs that
is filled up. An upload then answers 507 (upload folder) or 503 without Retry-After (database), stores no
row and no file, is counted in /metrics, /healthz says why, and once space is freed the same upload is taken.

Mounting a tmpfs needs root (as CI and this machine have); elsewhere the test is skipped, saying so, and
tests/service/test_storage_faults.py still raises the same errors where the writes happen."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from app import synthetic
from tests.load.servers import Deployment, Gunicorn, prepare, send, upload_request


@contextmanager
def small_disk(folder: Path, size: str = "8m") -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Write a file until the disk refuses; the file is the space to free later."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while fh.write(b"\0" * 65536):
                pass
        except OSError:
            pass
    return filler


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def _metric(base: str, name: str, **labels) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as response:
        page = response.read().decode()
    wanted = name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    for line in page.splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[-1])
    return 0.0


def _rows(database_url: str) -> int:
    engine = create_engine(database_url)
    with engine.connect() as connection:
        count = connection.execute(text("SELECT count(*) FROM submissions")).scalar_one()
    engine.dispose()
    return count


def test_a_full_disk_refuses_the_upload_cleanly_and_recovers(tmp_path):
    """The upload folder and the database each on a disk of its own; each filled in turn, then freed."""
    with small_disk(tmp_path / "uploads-disk") as uploads_disk, small_disk(tmp_path / "database-disk") as db_disk:
        deployment = Deployment(f"sqlite:///{db_disk / 'holdout.sqlite3'}", tmp_path)
        prepare(deployment, teams=1, per_day=None)
        env = deployment.env | {"SUBMISSIONS_DIR": str(uploads_disk / "submissions")}
        server = Gunicorn(env, tmp_path / "gunicorn.log", workers=1)
        try:
            server.wait_until_up()
            token = deployment.tokens["team-0"]
            data = synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=3)
            assert send(upload_request(server.base, token, "before", data))[0] == 201
            for store, disk in (("uploads", uploads_disk), ("database", db_disk)):
                filler = fill(disk)
                before_rows = _rows(deployment.database_url)
                status, body, headers = send(upload_request(server.base, token, f"while-{store}-full", data))
                if store == "uploads":
                    assert status == 507, body
                    assert "upload storage is full" in body["error"]
                else:
                    assert status == 503, body
                    assert "database is full" in body["error"] and "Retry-After" not in headers
                assert _rows(deployment.database_url) == before_rows
                assert not [p for p in (uploads_disk / "submissions").rglob("*") if p.name.endswith(".tmp")]
                health = _get_json(f"{server.base}/healthz")
                assert health["status"] == "degraded"
                assert any(p.startswith(f"{store}: ") for p in health["problems"]), health
                assert _metric(server.base, "holdout_storage_failures_total", store=store) >= 1
                filler.unlink()
                status, body, _ = send(upload_request(server.base, token, f"after-{store}", data))
                assert status == 201, body
        finally:
            server.stop()
        log = server.log.read_text()
        assert "Traceback" not in log, log[-3000:]
