"""A real S3 server for tests: s3rver 3.7.1 (a Node.js S3 server that keeps objects on disk) on a free loopback
port with a data folder of its own, which a test can stop, kill (SIGKILL) and start again on the same port and
data.

SeaweedFS, which a deployment would rather run, cannot be installed here (no Debian package; its releases
cannot be downloaded), so scripts/install-system-deps.sh installs s3rver from npm into
``${XDG_CACHE_HOME:-~/.cache}/holdout/s3rver-3.7.1`` (HOLDOUT_S3RVER names another s3rver script). Without
node or s3rver, ``S3Unavailable`` says why; the fixtures skip with that reason, or fail when CI is set.

Use it from a fixture (tests/storage/conftest.py has ``s3_server``, one per module)::

    with running_s3rver(tmp_path_factory.mktemp("s3")) as server:
        app = create_app({..., "STORAGE_URL": f"s3://{server.bucket}/prefix", "S3_ENDPOINT_URL": server.endpoint_url})

with ``server.environment()`` in os.environ (monkeypatch.setenv) for boto3's credentials.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.postgres import free_port

VERSION = "3.7.1"
ACCESS_KEY = SECRET_KEY = "S3RVER"  # s3rver's own credentials
BUCKET = "holdout-test"
START_SECONDS = 15


class S3Unavailable(RuntimeError):
    """node or s3rver is missing, or the server did not start; the message says why."""


def install_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "holdout" / f"s3rver-{VERSION}"


def s3rver_script() -> Path:
    explicit = os.environ.get("HOLDOUT_S3RVER")
    script = Path(explicit) if explicit else install_dir() / "node_modules" / "s3rver" / "bin" / "s3rver.js"
    if not script.is_file():
        raise S3Unavailable(f"s3rver {VERSION} not found at {script}: `make system-deps` installs it (npm)")
    return script


class S3Server:
    """One s3rver process: ``endpoint_url``, ``bucket`` (made at start), the data folder it keeps objects in."""

    def __init__(self, data: Path, bucket: str = BUCKET):
        node = shutil.which("node")
        if node is None:
            raise S3Unavailable("node not found: `make system-deps` installs Debian's nodejs")
        self.command = [node, str(s3rver_script())]
        self.data = data
        self.bucket = bucket
        self.log = data.parent / f"{data.name}.log"
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self._client = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def environment() -> dict[str, str]:
        """What boto3 needs in the environment to talk to it (and never to a metadata service)."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start on the same port and data folder as before (a restart keeps every object)."""
        if self.running:
            return
        self.data.mkdir(parents=True, exist_ok=True)
        arguments = ["-d", str(self.data), "-a", "127.0.0.1", "-p", str(self.port), "--configure-bucket", self.bucket]
        # s3rver makes ListObjectsV2's continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider.
        env = {**os.environ, "NODE_OPTIONS": "--openssl-legacy-provider"}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [*self.command, *arguments], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        tail = self.log.read_text(errors="replace")[-2000:]
        raise S3Unavailable(f"s3rver did not start on port {self.port}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: gone at once, in the middle of whatever it was doing."""
        self._end(signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()

    def _end(self, how: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(how)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def client(self):
        """A boto3 client of the test's own, to look at the bucket past the app (made once: ~70 ms each)."""
        if self._client is not None:
            return self._client
        import boto3
        from botocore.config import Config

        self._client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
            config=Config(
                s3={"addressing_style": "path"},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )
        return self._client

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """The keys under ``prefix`` in the bucket (by default the one made at start), sorted."""
        found = []
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket or self.bucket, Prefix=prefix)
        for page in pages:
            found += [item["Key"] for item in page.get("Contents", ())]
        return sorted(found)


@contextmanager
def running_s3rver(data: Path, bucket: str = BUCKET) -> Iterator[S3Server]:
    """A started server, stopped at the end; raises S3Unavailable when it cannot run here."""
    server = S3Server(data, bucket)
    server.start()
    try:
        yield server
    finally:
        server.stop()
