"""Real servers for load and fault tests: a deployment (migrated database, folders, teams with API tokens)
and gunicorn processes started with the project's gunicorn.conf.py on free loopback ports."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from flask_migrate import upgrade

from app import create_app, synthetic
from app.db import db
from tests.postgres import free_port

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60  # seconds, for any one request


@dataclass
class Deployment:
    """What app servers share: the database URL, the folders, a split and teams with API tokens."""

    database_url: str
    folder: Path
    secret_key: str = field(default_factory=lambda: secrets.token_hex(32))
    gold: bytes = b""
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "SECRET_KEY": self.secret_key,
            "DATABASE_URL": self.database_url,
            "HIDDEN_LABELS_DIR": str(self.folder / "hidden_labels"),
            "SUBMISSIONS_DIR": str(self.folder / "submissions"),
            # A board rebuilt after every change, as in-process tests have it (create_app under TESTING): these
            # servers' tests act faster than a person, within a window of the default 5 s; the window itself is
            # tested in tests/service/test_board_churn.py. A test that wants it sets it.
            "BOARD_REBUILD_SECONDS": "0",
        }
        for name in (
            "HOLDOUT_DEMO",
            "MAX_UPLOAD_MB",
            "GUNICORN_CMD_ARGS",
            "LOG_FORMAT",
            "METRICS_ALLOW",
            "METRICS_TOKEN",
            "PROMETHEUS_MULTIPROC_DIR",
            "TRUSTED_PROXIES",
        ):
            env.pop(name, None)
        return env

    def app(self):
        """An app on the deployment's database, for setting up and inspecting it from the test."""
        env = self.env
        return create_app(
            {
                "SECRET_KEY": self.secret_key,
                "SQLALCHEMY_DATABASE_URI": self.database_url,
                "HIDDEN_LABELS_DIR": env["HIDDEN_LABELS_DIR"],
                "SUBMISSIONS_DIR": env["SUBMISSIONS_DIR"],
            }
        )


def prepare(
    deployment: Deployment, *, teams: int, per_day: int | None, examples: int = 1000, seed: int = 5
) -> Deployment:
    """Migrate, add NLVR2 Test-P with a daily quota, and one-user teams `team-<i>` with API tokens."""
    from app.services import catalog
    from app.services.people import accounts
    from app.services.people import teams as team_service

    app = deployment.app()
    deployment.gold = synthetic.nlvr2_gold(examples, split="test-p", seed=seed)
    with app.app_context():
        upgrade()
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-p", deployment.gold, name="Test-P")
        catalog.set_policy("nlvr2", "test-p", per_day=per_day)
        for i in range(teams):
            user = accounts.create_user(f"user{i}@example.org", f"password-{i}-long")
            team_service.create_team(f"team-{i}", user)
            deployment.tokens[f"team-{i}"] = accounts.create_token(user, "load")[1]
        db.engine.dispose()
    return deployment


def multipart(fields: dict[str, str], file_data: bytes) -> tuple[bytes, str]:
    boundary = "holdout-" + secrets.token_hex(12)
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="predictions.csv"\r\n'
        "Content-Type: text/csv\r\n\r\n".encode()
        + file_data
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def upload_request(
    base: str, token: str, model_name: str, data: bytes, split: str = "test-p"
) -> urllib.request.Request:
    body, content_type = multipart({"benchmark": "nlvr2", "split": split, "model_name": model_name}, data)
    return urllib.request.Request(
        f"{base}/api/v1/submissions",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )


def send(request: urllib.request.Request, timeout: float = TIMEOUT) -> tuple[int, dict, dict]:
    """(status, JSON body, headers) of an answered request; connection failures raise OSError
    (ConnectionResetError, http.client.RemoteDisconnected, URLError...)."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as exc:
        payload = exc.read()
        try:
            body = json.loads(payload)
        except ValueError:
            body = {"raw": payload[:2000].decode("utf-8", "replace")}
        return exc.code, body, dict(exc.headers)


class Gunicorn:
    """`gunicorn -c gunicorn.conf.py` on a free loopback port; its output goes to a log file."""

    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        *,
        workers: int | None = 2,
        app: str = "wsgi:app",
        extra: list[str] | None = None,
    ):
        """`workers=None` keeps gunicorn.conf.py's count."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            "-c",
            "gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{self.port}",
            *(["--workers", str(workers)] if workers else []),
            *(extra or []),
            app,
        ]
        with open(log, "ab") as out:
            self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)

    def log_tail(self, size: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-size:]

    def wait_until_up(self, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"gunicorn exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                # A long timeout: a check given up on while a busy worker still answers it is counted later
                # (tests count the /healthz requests each worker served).
                wait = max(deadline - time.monotonic(), 1.0)
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=wait) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)  # poll interval (the deadline bounds the wait)
        pytest.fail(f"gunicorn did not answer /healthz within {limit} s:\n{self.log_tail()}")

    def worker_pids(self) -> set[int]:
        """The master's live child processes (its workers), from /proc/<pid>/stat."""
        return children_of(self.process.pid)

    def wait_for_workers(self, count: int, exclude: set[int] = frozenset(), limit: float = 30.0) -> set[int]:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            pids = self.worker_pids() - set(exclude)
            if len(pids) >= count:
                return pids
            time.sleep(0.02)  # poll interval (the deadline bounds the wait)
        pytest.fail(f"gunicorn did not bring up {count} workers within {limit} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def children_of(parent: int) -> set[int]:
    """Live (not zombie) processes whose parent is `parent`."""
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == parent and state != "Z":
            children.add(int(entry.name))
    return children


def rss_kib(pid: int) -> int:
    """Resident memory of a process in KiB (VmRSS in /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError(f"no VmRSS for process {pid}")


def uploads_check(deployment: Deployment, repair: bool = False):
    """`flask uploads check` on the deployment's folder (min age 0: every server has stopped writing)."""
    from app.services.storage import upload_files

    app = deployment.app()
    with app.app_context():
        found = upload_files.check_folder(delete=repair, min_age=0)
        db.engine.dispose()
    return found


@contextmanager
def running_server(
    tmp_path: Path,
    database_backend,
    name: str,
    *,
    teams: int,
    per_day: int | None,
    workers: int,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[Gunicorn, Deployment]]:
    """A prepared deployment on a new database of the backend, served by gunicorn; stopped and dropped after."""
    deployment = prepare(
        Deployment(database_backend.new_database(tmp_path, name=name), tmp_path), teams=teams, per_day=per_day
    )
    server = Gunicorn(deployment.env | (env or {}), tmp_path / "gunicorn.log", workers=workers)
    try:
        server.wait_until_up()
        yield server, deployment
    finally:
        server.stop()
        database_backend.drop(deployment.database_url)
