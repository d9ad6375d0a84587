"""A throwaway PostgreSQL cluster for tests: `initdb` into a temporary folder, a free loopback port.

The server binaries come from Debian's `postgresql` package (scripts/install-system-deps.sh installs it).
PostgreSQL refuses to run as root, so when the tests run as root the cluster belongs to the `postgres`
user and its commands run through `runuser` (or `su`). The cluster trusts local connections and keeps
nothing durable (fsync off): it lives for one test session and is removed afterwards.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

SUPERUSER = "postgres"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries here, or the cluster could not start; the message says why."""


def bin_dir() -> Path | None:
    """The folder with initdb/pg_ctl: $HOLDOUT_PG_BIN, Debian's newest /usr/lib/postgresql/*/bin, or PATH."""
    explicit = os.environ.get("HOLDOUT_PG_BIN")
    if explicit:
        return Path(explicit) if (Path(explicit) / "initdb").exists() else None
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if found:
        newest = max(found, key=lambda p: int(re.search(r"/(\d+)/bin/", p).group(1)))
        return Path(newest).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresCluster:
    """One PostgreSQL server on 127.0.0.1:<port> (or `host`), its data and socket in a temporary folder."""

    def __init__(self, root: Path, bindir: Path, owner: pwd.struct_passwd | None):
        self.root = root
        self.bindir = bindir
        self.owner = owner  # None: run the server as the current (non-root) user
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.log = root / "server.log"
        self.port = 0
        self._counter = 0
        # Where it listens and how its commands start: a test may move it into a network namespace of its own
        # (tests/deploy: `ip netns exec NAME` before each command, the namespace's address to listen on).
        self.host = "127.0.0.1"
        self.prefix: list[str] = []

    # --- life cycle ------------------------------------------------------------------------------------

    @classmethod
    def create(cls, host: str = "127.0.0.1", prefix: tuple[str, ...] = (), trust: str = "") -> PostgresCluster:
        """initdb a new cluster and start it; raises PostgresUnavailable with the reason. `host`, `prefix`: where
        it listens and what its commands start with (see __init__); `trust`: a network it trusts besides loopback."""
        bindir = bin_dir()
        if bindir is None:
            raise PostgresUnavailable(
                "PostgreSQL server binaries not found (apt-get install postgresql, or set HOLDOUT_PG_BIN)"
            )
        owner = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PostgresUnavailable("running as root but there is no `postgres` user to own the cluster") from exc
        root = Path(tempfile.mkdtemp(prefix="holdout-pg-"))
        cluster = cls(root, bindir, owner)
        cluster.host, cluster.prefix = host, list(prefix)
        try:
            cluster.sockets.mkdir()
            if owner is not None:
                for path in (root, cluster.sockets):
                    os.chown(path, owner.pw_uid, owner.pw_gid)
            cluster._run(
                [
                    "initdb",
                    "-D",
                    str(cluster.data),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                timeout=120,
            )
            if trust:
                with open(cluster.data / "pg_hba.conf", "a") as hba:
                    hba.write(f"host all all {trust} trust\n")
            cluster.start()
        except BaseException:
            cluster.remove()
            raise
        return cluster

    def start(self) -> None:
        """Start the server (on the same port as before when restarted) and wait until it accepts."""
        for attempt in range(3):
            if not self.port or attempt:
                self.port = free_port()
            options = (
                f"-p {self.port} -k {self.sockets} -c listen_addresses={self.host} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
                "-c shared_buffers=64MB"
            )
            result = self._run(
                ["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options, "start"],
                check=False,
                timeout=90,
            )
            if result.returncode == 0:
                return
        raise PostgresUnavailable(f"pg_ctl start failed:\n{result.stdout}{result.stderr}\n{self._log_tail()}")

    def stop(self, mode: str = "fast") -> None:
        self._run(["pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"], check=False, timeout=90)

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # --- databases -------------------------------------------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL (psycopg 3) for a database of this cluster, as the superuser."""
        return f"postgresql+psycopg://{SUPERUSER}@{self.host}:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(
            host=self.host, port=self.port, user=SUPERUSER, dbname=database, autocommit=True, connect_timeout=10
        )

    def create_database(self, prefix: str = "holdout", template: str | None = None) -> str:
        """Create a new, uniquely named database (a copy of `template` when given); return its name."""
        self._counter += 1
        name = f"{prefix}_{os.getpid()}_{self._counter}"
        sql = f'CREATE DATABASE "{name}"'
        if template:
            # FILE_COPY: copying a small template's files is faster than WAL-logging every block.
            sql += f' TEMPLATE "{template}" STRATEGY FILE_COPY'
        with self.connect() as connection:
            connection.execute(sql)
        return name

    def drop_database(self, name: str) -> None:
        with self.connect() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    # --- helpers ---------------------------------------------------------------------------------------

    def _run(self, args: list[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.owner is not None:
            if shutil.which("runuser"):
                command = ["runuser", "-u", self.owner.pw_name, "--", *command]
            else:
                command = ["su", self.owner.pw_name, "-s", "/bin/sh", "-c", " ".join(map(_quote, command))]
        command = [*self.prefix, *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if check and result.returncode != 0:
            raise PostgresUnavailable(
                f"{args[0]} failed ({result.returncode}):\n{result.stdout}{result.stderr}\n{self._log_tail()}"
            )
        return result

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def wait_until_accepting(self, limit: float = 30.0) -> None:
        deadline = time.monotonic() + limit
        while True:
            try:
                with self.connect():
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # poll interval (the deadline bounds the wait)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
