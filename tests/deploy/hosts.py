"""Hosts for the deployment test: network namespaces on this machine joined by veth links to one switch, and the
processes the systemd units in serving/systemd/ run on them, started with the units' own command lines and
environment file.

Each host is a namespace ``<tag>-<host>`` with one link ``eth0`` to a bridge in the namespace ``<tag>-lan`` (the
switch), an address in 10.39.0.0/24 and no route anywhere else: nothing leaves the namespaces a run made, and
two runs (unique tags) never meet. A host is cut off by taking its port on the switch down (``ip link set ...
down``): its packets go nowhere, as when a machine or its cable goes, and the other hosts wait on timeouts.

The test process itself is a client on a host of its own: ``Network.inside(host)`` moves the calling thread into
that namespace (setns), so urllib, boto3 and psycopg reach the hosts as any machine on the network would.

Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's ``ip``; ``NamespacesUnavailable`` says what is
missing, and the test skips with that reason.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.postgres import PostgresCluster
from tests.support.s3_server import S3Server

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "serving" / "systemd"
SUBNET = "10.39.0"  # /24, private, and only ever inside the namespaces
CLONE_NEWNET = 0x40000000
# Where the units expect the installation (serving/systemd/holdout-web@.service): here, this clone and its venv.
INSTALLED_APP = "/srv/holdout/app"
INSTALLED_VENV_BIN = "/srv/holdout/venv/bin"


class NamespacesUnavailable(RuntimeError):
    """Network namespaces cannot be made here; the message says why."""


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise NamespacesUnavailable(f"`ip {' '.join(args)}` failed ({result.returncode}): {result.stderr.strip()}")


def _setns(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    with open(path) as namespace:
        if libc.setns(namespace.fileno(), CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise NamespacesUnavailable(f"setns({path}) failed: {os.strerror(error)}")


class Network:
    """Namespaces of one run: ``add(host, last_octet)`` makes a host on the switch; ``close`` removes them all
    (their links and addresses go with them)."""

    def __init__(self) -> None:
        if shutil.which("ip") is None:
            raise NamespacesUnavailable("iproute2's `ip` is not installed")
        self.tag = "h39" + secrets.token_hex(3)  # unique per run: namespaces are machine-wide
        self.addresses: dict[str, str] = {}
        self._made: list[str] = []
        self._make(f"{self.tag}-lan")
        _ip("-n", self.namespace("lan"), "link", "add", "br0", "type", "bridge")
        _ip("-n", self.namespace("lan"), "link", "set", "br0", "up")

    def namespace(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def _make(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)

    def add(self, host: str, octet: int) -> str:
        """A host at 10.39.0.<octet> on the switch; returns its address."""
        name, port = self.namespace(host), self.port(host)
        self._make(name)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", self.namespace("lan"), "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", name)
        _ip("-n", self.namespace("lan"), "link", "set", port, "master", "br0", "up")
        address = f"{SUBNET}.{octet}"
        _ip("-n", name, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", name, "link", "set", "eth0", "up")
        self.addresses[host] = address
        return address

    @staticmethod
    def port(host: str) -> str:
        return f"p-{host}"[:15]  # an interface name has at most 15 characters

    def cut(self, host: str) -> None:
        """The host's port on the switch down: nothing reaches it and nothing it sends arrives."""
        _ip("-n", self.namespace("lan"), "link", "set", self.port(host), "down")

    def restore(self, host: str) -> None:
        _ip("-n", self.namespace("lan"), "link", "set", self.port(host), "up")

    def routes(self, host: str) -> list[str]:
        """The host's routing table (IPv4 and IPv6), one route a line."""
        found = []
        for family in ("-4", "-6"):
            result = subprocess.run(
                ["ip", family, "-n", self.namespace(host), "route", "show"], capture_output=True, text=True, timeout=30
            )
            found += result.stdout.splitlines()
        return found

    def command(self, host: str, command: list[str]) -> list[str]:
        """`command` run on `host`."""
        return ["ip", "netns", "exec", self.namespace(host), *command]

    @contextmanager
    def inside(self, host: str) -> Iterator[None]:
        """The calling thread on `host` until the block ends (sockets it opens meanwhile stay there)."""
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            _setns(f"/run/netns/{self.namespace(host)}")
            try:
                yield
            finally:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.setns(own, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "could not return to the test's own network namespace")
        finally:
            os.close(own)

    def close(self) -> None:
        """Every namespace of the run removed, with its links; a process of the run still in one (a test that
        failed before stopping it) is killed first, or it would keep its namespace alive, unnamed."""
        for name in reversed(self._made):
            found = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30)
            for pid in found.stdout.split():
                with suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        self._made.clear()


def probe() -> None:
    """Raise NamespacesUnavailable when this machine cannot make a namespace (not root, no CAP_SYS_ADMIN, a
    container without the rights): the reason is `ip`'s own message."""
    name = "h39probe" + secrets.token_hex(3)
    _ip("netns", "add", name)
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


# --- the units --------------------------------------------------------------------------------------------


def unit_settings(name: str) -> dict[str, str]:
    """The [Service] settings of a unit file in serving/systemd (the last of a repeated key)."""
    found: dict[str, str] = {}
    section = None
    for line in (UNITS / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line:
            key, value = line.split("=", 1)
            found[key.strip()] = value.strip()
    return found


def unit_command(name: str, instance: str = "") -> list[str]:
    """ExecStart of a unit as systemd runs it here: %i is the instance, the installation is this clone's."""
    service = unit_settings(name)
    assert service["WorkingDirectory"] == INSTALLED_APP, service
    assert service["EnvironmentFile"] == "/etc/holdout/holdout.env", service
    command = shlex.split(service["ExecStart"].replace("%i", instance))
    venv_bin = str(Path(sys.executable).parent)
    installed = len(INSTALLED_VENV_BIN)
    return [venv_bin + word[installed:] if word.startswith(INSTALLED_VENV_BIN) else word for word in command]


def environment_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them (comments and blank lines skipped; values
    unquoted)."""
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, value = line.split("=", 1)
        found[key.strip()] = " ".join(shlex.split(value)) if value.strip() else ""
    return found


def example_environment() -> dict[str, str]:
    return environment_file((UNITS / "holdout.env.example").read_text())


def service_environment(settings: dict[str, str]) -> dict[str, str]:
    """A process's environment under systemd: its own few variables and the environment file's, nothing of the
    test's (a variable the test happens to have set must not reach the servers)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/root", **settings}


# --- the data hosts' servers --------------------------------------------------------------------------------


def postgres_on(network: Network, host: str) -> PostgresCluster:
    """A throwaway cluster (tests/postgres.py) on `host`: listening on its address, trusting the network's, each
    of its commands run there."""
    return PostgresCluster.create(network.addresses[host], tuple(network.command(host, [])), trust=f"{SUBNET}.0/24")


class HostS3Server(S3Server):
    """SeaweedFS (tests/support/s3_server.py) on a host: its processes started there, listening on its address.
    Everything else (ports, identity, bucket, stop/kill/start) is the loopback server's."""

    def __init__(self, data: Path, network: Network, host: str):
        super().__init__(data)
        self.network, self.host = network, host

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.network.addresses[self.host]}:{self.ports['s3']}"

    def _on_host(self, command: list[str]) -> list[str]:
        address = self.network.addresses[self.host]
        return self.network.command(self.host, [word.replace("127.0.0.1", address) for word in command])

    def _store_command(self) -> list[str]:
        return self._on_host(super()._store_command())

    def _gateway_command(self) -> list[str]:
        return self._on_host(super()._gateway_command())
