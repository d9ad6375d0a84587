"""Metrics and access logs under real gunicorn: /metrics sums the counts of every worker (those that have
exited too), its access rule holds, and LOG_FORMAT=json writes one JSON object a line with no secrets."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families

from app import synthetic
from tests.load.servers import REPO, TIMEOUT, Deployment, Gunicorn, prepare, send, upload_request

# On SQLite alone: database-error counts per dialect are checked in-process by tests/web/test_metrics.py (on
# both dialects), and gunicorn on PostgreSQL by the other load tests; what is checked here, metrics adding up
# over workers and the access log, does not depend on the dialect.

METRICS_TOKEN = "scrape-token-for-the-test"
HEALTHZ = ("holdout_http_requests_total", (("endpoint", "public.healthz"), ("method", "GET"), ("status", "200")))


@pytest.fixture
def server(tmp_path, database_backend):
    """gunicorn with 2 workers, JSON access logs, /metrics only with the token; yields (server, deployment,
    metrics folder)."""
    deployment = prepare(
        Deployment(database_backend.new_database(tmp_path, name="observed"), tmp_path), teams=1, per_day=None
    )
    folder = tmp_path / "metrics"
    env = deployment.env | {
        "LOG_FORMAT": "json",
        "METRICS_ALLOW": "",
        "METRICS_TOKEN": METRICS_TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
    }
    server = Gunicorn(env, tmp_path / "gunicorn.log", workers=2)
    try:
        server.wait_until_up()
        yield server, deployment, folder
    finally:
        server.stop()
        database_backend.drop(deployment.database_url)


def get(url: str, headers: dict | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def scrape(base: str) -> dict[tuple, float]:
    status, body = get(f"{base}/metrics", {"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert status == 200, body
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def healthz_by_file(folder: Path) -> dict[str, float]:
    """The /healthz count in each counter file: counter_<pid>.db of a live worker, counter_retired.db of the
    workers that have exited."""
    counts = {}
    for path in folder.glob("counter_*.db"):
        for key, value, *_ in MmapedDict.read_all_values_from_file(str(path)):
            _metric, sample, labels, _help = json.loads(key)
            if sample == HEALTHZ[0] and tuple(sorted(labels.items())) == HEALTHZ[1]:
                counts[path.stem.split("_", 1)[1]] = counts.get(path.stem.split("_", 1)[1], 0) + value
    return counts


@pytest.mark.slow
def test_metrics_add_up_over_workers_and_json_access_log(server):
    server, deployment, folder = server
    earlier = sum(healthz_by_file(folder).values())  # the readiness checks
    for _ in range(10):
        assert get(f"{server.base}/healthz")[0] == 200
    first = server.worker_pids()
    # Replace both workers: the next requests are served by new processes, and the counts of the ones that
    # exited must stay in the sum.
    for pid in first:
        os.kill(pid, signal.SIGTERM)
    server.wait_for_workers(2, exclude=first)
    for _ in range(10):
        assert get(f"{server.base}/healthz")[0] == 200

    token = deployment.tokens["team-0"]
    data = synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=3)
    status, body, _ = send(upload_request(server.base, token, "observed-model", data))
    assert status == 201, body

    samples = scrape(server.base)
    per_file = healthz_by_file(folder)
    # The exited workers' files are folded into one; the new workers served the last 10.
    assert not {str(pid) for pid in first} & set(per_file), per_file
    assert per_file["retired"] == earlier + 10, per_file
    assert len([name for name, count in per_file.items() if count]) >= 2, per_file  # a sum over processes
    assert samples[HEALTHZ] == sum(per_file.values()) == earlier + 20
    assert samples[("holdout_uploads_total", (("outcome", "scored"),))] == 1
    assert samples[("holdout_upload_parse_score_seconds_count", ())] == 1

    # The access rule: METRICS_ALLOW is empty here, so even loopback needs the token.
    assert get(f"{server.base}/metrics")[0] == 404
    assert get(f"{server.base}/metrics", {"Authorization": "Bearer wrong"})[0] == 403

    # Secrets that must never reach the log: a bearer token, a query parameter named like one, an invite
    # token in the path, and a password in a form body.
    assert (
        get(f"{server.base}/healthz?access_token=query-secret-1&page=2", {"Authorization": f"Bearer {token}"})[0] == 200
    )
    get(f"{server.base}/invites/invite-secret-2")
    login = urllib.request.Request(
        f"{server.base}/login", data=b"email=a%40b.org&password=form-secret-3", method="POST"
    )
    with contextlib.suppress(urllib.error.HTTPError):  # refused for want of a CSRF token; the log line matters
        urllib.request.urlopen(login, timeout=TIMEOUT)

    server.stop()
    log = server.log.read_text()
    for secret in (token, "query-secret-1", "invite-secret-2", "form-secret-3", METRICS_TOKEN, "observed-model"):
        assert secret not in log, secret
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert len([r for r in records if r["path"] == "/healthz"]) == earlier + 21
    assert {"time", "method", "path", "query", "status", "duration_ms", "bytes", "remote_addr"} <= set(records[0])
    upload = next(r for r in records if r["path"] == "/api/v1/submissions")
    assert upload["method"] == "POST" and upload["status"] == 201 and upload["remote_addr"] == "127.0.0.1"
    assert upload["duration_ms"] > 0 and upload["time"].endswith("Z")
    queried = next(r for r in records if r["query"])
    assert queried["query"] == "access_token=[redacted]&page=2"
    assert any(r["path"] == "/invites/[redacted]" for r in records)
    # Every access line is JSON; gunicorn's own messages (start-up, workers) stay as they are.
    assert not [line for line in log.splitlines() if '"GET /healthz' in line]


def test_an_unknown_log_format_stops_gunicorn_with_a_message(tmp_path):
    env = {
        **os.environ,
        "LOG_FORMAT": "xml",
        "SECRET_KEY": "x" * 32,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
    }
    result = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py", "--bind", "127.0.0.1:0", "wsgi:app"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "LOG_FORMAT must be text or json, got 'xml'" in result.stderr + result.stdout
