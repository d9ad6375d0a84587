"""A deployment across hosts (issue 39): network namespaces on this machine joined by veth links to one switch
(tests/deploy/hosts.py), each host running what docs/deployment/hosts.md gives it, started with the command lines
and environment file of the systemd units in serving/systemd/:

- ``db`` (10.39.0.2): PostgreSQL; ``store`` (10.39.0.3): SeaweedFS (``weed server`` and its ``weed s3`` gateway,
  an identity whose secret is checked);
- ``web1``, ``web2`` (10.39.0.11, .12): ``holdout-web@<address>:8000`` (gunicorn), the same environment file;
- ``worker`` (10.39.0.21): ``holdout-migrate`` once, then ``holdout-worker@1`` (``flask worker``);
- ``client`` (10.39.0.100): this test, as the teams and a maintainer.

The hosts share this machine's filesystem, so HIDDEN_LABELS_DIR is one folder (a shared mount in production).
A maintainer adds the benchmark and its split with the CLI on the worker host (`flask bundle apply`); two
teams upload through both web hosts and publish; the worker is killed (SIGKILL) with the publications' jobs
queued, and started again; the database host is cut off and restored, then the storage host. Then: every
accepted upload is in the database and its original in the bucket, nothing else is but writes the cut left in
doubt, each with its repair job queued; both web hosts serve the same board, whose scores are those computed
here from the files and the gold; /healthz on each web host said why while the store or the database was away
(answering within the connection's timeouts), and is ok again; the worker lived through the database's
absence and builds the board after it.

Where namespaces cannot be made (not root, a container without CAP_SYS_ADMIN) the test is skipped with the
reason `ip` gave (failed under `make deploy-test`, which asks for it by name); PostgreSQL or SeaweedFS missing
fails it in CI, as it does the other tests that need them.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app import create_app, synthetic
from app.db import db
from app.evaluation import get_task
from app.models import Job, Submission
from app.services.people import accounts
from app.services.people import teams as team_service
from tests.deploy.hosts import (
    REPO,
    SUBNET,
    HostS3Server,
    NamespacesUnavailable,
    Network,
    environment_file,
    example_environment,
    postgres_on,
    probe,
    service_environment,
    unit_command,
)
from tests.load.servers import send, upload_request
from tests.postgres import PostgresUnavailable
from tests.support.processes import LoggedProcess
from tests.support.s3_server import S3Unavailable

HOSTS = {"db": 2, "store": 3, "web1": 11, "web2": 12, "worker": 21, "client": 100}
WEB_PORT = 8000
EXAMPLES = 300
DATABASE_TIMEOUTS = "?tcp_user_timeout=1500&connect_timeout=2"
PATIENCE = 60.0  # seconds any one wait may take before the test gives up (no time is asserted)
# The test's settings beyond the environment file's: one gunicorn worker a host (cheap), a killed job worker's
# job taken back after six missed beats of 0.5 s, a board rebuilt after every change and no page reused (the
# test acts faster than people), a store that does not answer given up on after 3 s (2 attempts within it).
TEST_SETTINGS = {
    "WEB_CONCURRENCY": "1",
    "JOB_HEARTBEAT": "0.5",
    "BOARD_REBUILD_SECONDS": "0",
    "LEADERBOARD_PAGE_TTL": "0",
    "STORAGE_TIMEOUT": "3",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the deployment test must run)", pytrace=False)
    pytest.skip(reason)


def no_namespaces(exc: NamespacesUnavailable):
    """Skip with `ip`'s reason; under `make deploy-test`, which asks for this test by name, fail with it."""
    reason = f"network namespaces cannot be made here: {exc}"
    if os.environ.get("HOLDOUT_DEPLOY_TEST"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


class Service(LoggedProcess):
    """A unit's process on a host, its output in a log file."""

    def __init__(self, network: Network, host: str, command: list[str], env: dict[str, str], log: Path):
        super().__init__(network.command(host, command), env, log, REPO)


@dataclass
class Layout:
    network: Network
    folder: Path
    env: dict[str, str]  # a service's: the environment file's settings and systemd's few
    s3: HostS3Server
    app: Any
    gold: bytes
    web: dict[str, str]  # host -> base URL
    services: dict[str, Service]
    tokens: dict[str, str] = field(default_factory=dict)

    def start_worker(self) -> Service:
        command = unit_command("holdout-worker@.service", "1")
        log = self.folder / "worker.log"
        self.services["worker"] = Service(self.network, "worker", command, self.env, log)
        return self.services["worker"]


def _wait(what, why, limit: float = PATIENCE):
    """What `what` returns once it is true; past the limit, fail with `why()` (made then: a log's tail)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.1)  # poll interval (the deadline bounds the wait)
    pytest.fail(why())


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _answers(base: str) -> bool:
    try:
        return _get(f"{base}/healthz")[0] == 200
    except OSError:
        return False


def _run(network: Network, host: str, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        network.command(host, command), cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def _signal_all(services: dict[str, Service]) -> None:
    """The test is over: every service told at once (the web servers SIGINT, gunicorn's quick shutdown, which
    takes its workers with it; the job worker SIGKILL: its job in hand is no one's now). The rest of the
    teardown goes on while they end; ``_wait_all`` waits for them before the namespaces go."""
    for name, service in services.items():
        if service.process.poll() is None:
            service.process.send_signal(signal.SIGKILL if name == "worker" else signal.SIGINT)


def _wait_all(services: dict[str, Service]) -> None:
    for service in services.values():
        service.stop()


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    try:
        probe()
        network = Network()
    except NamespacesUnavailable as exc:
        no_namespaces(exc)
    folder = tmp_path_factory.mktemp("hosts")
    with ExitStack() as stack:
        stack.callback(network.close)
        services: dict[str, Service] = {}
        stack.callback(_wait_all, services)
        try:  # a namespace made, but no veth link or no setns here: as unable
            for host, octet in HOSTS.items():
                network.add(host, octet)
            stack.enter_context(network.inside("client"))  # threads started from here on are there too
        except NamespacesUnavailable as exc:
            no_namespaces(exc)
        s3 = HostS3Server(folder / "seaweedfs", network, "store")
        stack.callback(s3.close)
        stack.callback(s3.kill_all)  # the test is over: nothing to wait for (its SIGTERM waits on the filer)
        # SeaweedFS starts (mostly its own fixed waits) while initdb runs; leaving the block waits for it either way.
        with ThreadPoolExecutor(1) as beside:
            store_started = beside.submit(s3.start)
            try:
                cluster = postgres_on(network, "db")
            except PostgresUnavailable as exc:
                unavailable(f"PostgreSQL unavailable: {exc}")
            stack.callback(cluster.remove)
            try:
                store_started.result()
            except S3Unavailable as exc:
                unavailable(str(exc))
        database = cluster.create_database("holdout")
        web = {host: f"http://{network.addresses[host]}:{WEB_PORT}" for host in ("web1", "web2")}
        # The environment file every host reads: each of holdout.env.example's settings, with this network's values.
        settings = {
            "SECRET_KEY": secrets.token_hex(32),
            # libpq's own timeouts in the URL, shorter than the app's defaults (10 s unacknowledged, 5 s to
            # connect): the database host is cut off below, and the test waits them out.
            "DATABASE_URL": f"postgresql://postgres@{cluster.host}:{cluster.port}/{database}{DATABASE_TIMEOUTS}",
            "HIDDEN_LABELS_DIR": str(folder / "hidden_labels"),  # one folder: the hosts share this filesystem
            "STORAGE_URL": f"s3://{s3.bucket}/originals",
            "S3_ENDPOINT_URL": s3.endpoint_url,
            **s3.environment(),
            "JOB_QUEUE": "procrastinate",
            "TRUSTED_PROXIES": "0",  # no nginx in front here: clients reach gunicorn directly
            "SESSION_COOKIE_SECURE": "1",
            "TRUSTED_HOSTS": ",".join(network.addresses[host] for host in web),
            "METRICS_ALLOW": f"{SUBNET}.0/24",
        }
        settings.pop("AWS_EC2_METADATA_DISABLED")
        assert set(settings) | {"STORAGE_TIMEOUT"} == set(example_environment()), "holdout.env.example changed"
        settings |= TEST_SETTINGS
        env_file = folder / "holdout.env"
        env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        env = service_environment(environment_file(env_file.read_text()))

        migrate = _run(network, "worker", unit_command("holdout-migrate.service"), env)
        assert migrate.returncode == 0, migrate.stderr
        stack.callback(_signal_all, services)
        for host in web:
            command = unit_command("holdout-web@.service", f"{network.addresses[host]}:{WEB_PORT}")
            services[host] = Service(network, host, command, env, folder / f"{host}.log")
        found = Layout(network, folder, env, s3, None, b"", web, services)
        found.start_worker()
        # The maintainer, on the worker host, while the servers start: the benchmark and its split from a bundle.
        found.gold = gold = synthetic.nlvr2_gold(EXAMPLES, split="test-p", seed=39)
        bundle = folder / "bundle"
        bundle.mkdir()
        (bundle / "test-p.jsonl").write_bytes(gold)
        (bundle / "benchmark.yaml").write_text(
            "format: 1\nslug: nlvr2\nname: NLVR2\ntask: nlvr2\nsplits:\n  - slug: test-p\n    name: Test-P\n"
            f"    labels: {{file: test-p.jsonl, sha256: {hashlib.sha256(gold).hexdigest()}}}\n"
        )
        flask = unit_command("holdout-worker@.service")[0]
        with ThreadPoolExecutor(1) as beside:
            apply = [flask, "--app", "wsgi", "bundle", "apply", str(bundle)]
            applied = beside.submit(_run, network, "worker", apply, env)
            # Teams and their tokens meanwhile, from here (the client host): an app on the deployment's database.
            found.app = app = create_app(
                {
                    "SECRET_KEY": settings["SECRET_KEY"],
                    "SQLALCHEMY_DATABASE_URI": cluster.url(database),
                    "HIDDEN_LABELS_DIR": settings["HIDDEN_LABELS_DIR"],
                    "SUBMISSIONS_DIR": str(folder / "unused"),
                }
            )
            with app.app_context():
                for i in range(2):
                    user = accounts.create_user(f"user{i}@example.org", f"password-{i}-long")
                    team_service.create_team(f"team-{i}", user)
                    found.tokens[f"team-{i}"] = accounts.create_token(user, "deploy")[1]
            assert applied.result().returncode == 0, applied.result().stderr
        for host, base in web.items():
            why = f"{host} did not answer"
            _wait(lambda base=base: _answers(base), lambda host=host, why=why: f"{why}:\n{services[host].tail()}")
        yield found
        with app.app_context():
            db.engine.dispose()


def _upload(layout: Layout, host: str, team: str, name: str, data: bytes) -> tuple[int, dict]:
    status, body, _ = send(upload_request(layout.web[host], layout.tokens[team], name, data), timeout=30)
    return status, body


def _publish(layout: Layout, host: str, team: str, submission_id: int) -> None:
    request = urllib.request.Request(
        f"{layout.web[host]}/api/v1/submissions/{submission_id}/publish",
        data=json.dumps({"description": "An entry of the deployment test."}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {layout.tokens[team]}", "Content-Type": "application/json"},
    )
    status, body, _ = send(request, timeout=30)
    assert status == 200, body


def _board(layout: Layout, host: str) -> dict:
    status, board = _get(f"{layout.web[host]}/api/v1/leaderboards/nlvr2/test-p")
    assert status == 200, board
    return board


def _board_of(layout: Layout, published: set[int]) -> dict | None:
    """The board once both web hosts serve it finished with exactly the published entries."""
    boards = [_board(layout, host) for host in layout.web]
    for board in boards:
        if board["updating_since"] is not None or {e["submission_id"] for e in board["entries"]} != published:
            return None
    return boards[0] if boards[0] == boards[1] else None


def _board_built(layout: Layout, published: set[int], when: str) -> dict:
    def why() -> str:
        return f"the board was not built {when}:\n{layout.services['worker'].tail()}"

    return _wait(lambda: _board_of(layout, published), why)


def _health(layout: Layout, host: str) -> dict:
    status, body = _get(f"{layout.web[host]}/healthz")
    assert status == 200, body
    return body


def test_a_deployment_across_hosts_loses_nothing_and_says_what_is_wrong(layout):
    network, accepted, published = layout.network, {}, set()
    for host in HOSTS:  # nothing can leave the network: a host's only routes are the switch's (and IPv6's link)
        assert {route.split()[0] for route in network.routes(host)} <= {f"{SUBNET}.0/24", "fe80::/64"}, host
    teams = ("team-0", "team-1")

    not_stored: set[str] = set()  # the sha256 of each upload refused

    def upload_through(host: str, k: int) -> tuple[int, dict, bytes]:
        data = synthetic.predictions("nlvr2", layout.gold, 0.5 + 0.045 * k, seed=k, split="test-p")
        status, body = _upload(layout, host, teams[k % 2], f"model {k}", data)
        if status == 201:
            accepted[body["id"]] = (teams[k % 2], data)
        else:
            not_stored.add(hashlib.sha256(data).hexdigest())
        return status, body, data

    # Uploads through both web hosts, each published through the other one; the worker builds the board.
    for k in range(4):
        status, body, _ = upload_through(("web1", "web2")[k % 2], k)
        assert status == 201, body
    ids = sorted(accepted)
    for k, submission_id in enumerate(ids[:2]):
        _publish(layout, ("web2", "web1")[k % 2], accepted[submission_id][0], submission_id)
        published.add(submission_id)
    worker = layout.services["worker"]
    _board_built(layout, published, "at first")

    # The worker killed (SIGKILL) right after two more publications queued the board's job: whatever it had in
    # hand is taken back once its heartbeats stop, and a worker started again builds the board.
    for k, submission_id in enumerate(ids[2:]):
        _publish(layout, ("web1", "web2")[k % 2], accepted[submission_id][0], submission_id)
        published.add(submission_id)
    worker.kill()
    for host in layout.web:  # readers are served meanwhile: the last finished board, or already the new one
        entries = {entry["submission_id"] for entry in _board(layout, host)["entries"]}
        assert entries <= published and len(entries) >= 2
    worker = layout.start_worker()
    _board_built(layout, published, "after the kill")

    # The database host cut off: each web host's /healthz answers degraded with the reason within the
    # connection's timeouts (DATABASE_URL's here: 1.5 s unacknowledged, 2 s to connect), not after a worker's
    # timeout; an upload is a 503 to retry; restored, both hosts are ok again.
    network.cut("db")
    try:
        with ThreadPoolExecutor(3) as pool:  # each waits out the timeouts: all at once
            refused = pool.submit(upload_through, "web2", 4)
            healths = dict(zip(layout.web, pool.map(lambda host: _health(layout, host), layout.web), strict=True))
        for host, health in healths.items():
            assert health["status"] == "degraded", (host, health)
            assert "jobs: the queue could not be read (the database did not answer)" in health["problems"], health
        status, body, _ = refused.result()
        assert status == 503, body
    finally:
        network.restore("db")
    for host in layout.web:
        health = _health(layout, host)
        assert health["status"] == "ok" and "problems" not in health, (host, health)
    # The worker lived through it (its sweeps failed meanwhile) and takes work again.
    assert worker.process.poll() is None, worker.tail()
    status, body, _ = upload_through("web1", 5)
    assert status == 201, body
    _publish(layout, "web2", accepted[body["id"]][0], body["id"])
    published.add(body["id"])
    _board_built(layout, published, "after the database's return")

    # The storage host cut off: an upload through either web host is refused with the reason (nothing kept, no
    # quota used), each host's /healthz says the store refused a write, and the boards are still served.
    network.cut("store")
    try:
        with ThreadPoolExecutor(2) as pool:  # each waits out STORAGE_TIMEOUT: both at once
            refused = list(pool.map(upload_through, layout.web, range(6, 8)))
        for status, body, _ in refused:
            assert status == 503, body
            assert "upload storage is unavailable" in body["error"] and "not stored" in body["error"], body
        for host in layout.web:
            health = _health(layout, host)
            assert health["status"] == "degraded", (host, health)
            assert any(p.startswith("uploads: a write was refused") for p in health["problems"]), health
            assert {e["submission_id"] for e in _board(layout, host)["entries"]} == published
    finally:
        network.restore("store")

    # Restored: uploads through both hosts are stored again, and each host's /healthz is ok once its store has
    # confirmed a write.
    for k, host in enumerate(layout.web, start=8):
        status, body, _ = upload_through(host, k)
        assert status == 201, body
        health = _health(layout, host)
        assert health["status"] == "ok" and "problems" not in health, (host, health)
    last = max(accepted)
    _publish(layout, "web1", accepted[last][0], last)
    published.add(last)
    board = _board_built(layout, published, "after the store's return")

    # Nothing lost: the database holds exactly the accepted uploads, the bucket each one's original. Nothing else
    # but what a cut left in doubt: a refused upload's write still under way when the store came back lands with
    # no row to name it, and its "stray-original" job, queued by the refusal, deletes it once that write cannot
    # still be in flight (about 2 x STORAGE_TIMEOUT later: not waited for here).
    with layout.app.app_context():
        rows = db.session.execute(select(Submission.id, Submission.file_sha256, Submission.status)).all()
        failed_jobs = db.session.scalars(select(Job.kind).where(Job.state == "failed")).all()
        repairs = set(db.session.scalars(select(Job.key).where(Job.kind == "stray-original")))
    assert {row.id for row in rows} == set(accepted)
    assert all(row.status == "scored" for row in rows)
    digests = {row.id: row.file_sha256 for row in rows}
    assert digests == {i: hashlib.sha256(data).hexdigest() for i, (_, data) in accepted.items()}
    in_bucket = {key.rsplit("/", 1)[1].removesuffix(".gz") for key in layout.s3.keys("originals/")}
    assert set(digests.values()) <= in_bucket
    assert in_bucket - set(digests.values()) <= not_stored
    assert {f"stray-original:{digest}" for digest in in_bucket - set(digests.values())} <= repairs
    assert failed_jobs == []

    # Every board correct: the one both hosts serve has each entry's scores as computed here from its file and
    # the gold, in the order of its accuracy.
    task = get_task("nlvr2")
    gold = task.read_gold(layout.gold)
    for entry in board["entries"]:
        expected = task.score(gold, task.parse(accepted[entry["submission_id"]][1], gold))
        for subset, metrics in expected.items():
            for metric, value in metrics.items():
                assert entry["scores"][subset][metric]["value"] == pytest.approx(value, abs=1e-9), entry
    accuracies = [entry["scores"]["all"]["accuracy"]["value"] for entry in board["entries"]]
    assert accuracies == sorted(accuracies, reverse=True)
    ranks = [entry["rank"] for entry in board["entries"]]
    assert ranks[0] == 1 and ranks == sorted(ranks)
