"""/metrics: the Prometheus text format, what it counts (requests, uploads by outcome, parse and score time,
board computations, database errors) and who may read it (METRICS_ALLOW, METRICS_TOKEN).

Metrics are per process and the suite runs many apps in one, so each test compares before and after.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app import create_app
from app.db import db
from app.services import catalog
from app.settings import ConfigError, from_environment, networks
from tests.conftest import make_config
from tests.support.api_world import build_world, post_file, stored_submission

pytestmark = pytest.mark.postgres(reason="database-error counts come from each dialect's exceptions")

PUBLIC_ADDRESS = {"REMOTE_ADDR": "203.0.113.7"}


def scrape(client, **kw) -> dict[tuple, float]:
    """{(sample name, sorted label items): value} from /metrics, read with Prometheus' own parser."""
    response = client.get("/metrics", **kw)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.one_backend
def test_requests_are_counted_by_endpoint_and_status_with_latency(client):
    """On SQLite alone: request counts, the same on every database (errors by dialect: on both, below)."""
    before = scrape(client)
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
    assert client.get("/no/such/page").status_code == 404
    after = scrape(client)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("holdout_http_requests_total", endpoint="public.healthz", method="GET", status="200") == 3
    assert delta("holdout_http_request_duration_seconds_count", endpoint="public.healthz", method="GET") == 3
    assert (
        delta("holdout_http_request_duration_seconds_bucket", endpoint="public.healthz", method="GET", le="+Inf") == 3
    )
    assert delta("holdout_http_request_duration_seconds_sum", endpoint="public.healthz", method="GET") > 0
    # Unknown paths share one series, whatever they are.
    assert delta("holdout_http_requests_total", endpoint="unmatched", method="GET", status="404") == 1
    assert not any("no/such" in str(key) for key in after)


@pytest.mark.one_backend
def test_uploads_by_outcome_parse_time_and_board_computations(app, client):
    """On SQLite alone: upload counts, the same on every database (errors by dialect: on both, below)."""
    world = build_world(app)
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=1)
    before = scrape(client)
    invalid = world.predictions(seed=2).decode().replace("True", "maybe", 1).encode()
    assert post_file(client, world, "member", invalid).status_code == 422
    assert post_file(client, world, "member", world.predictions(seed=1)).status_code == 201
    assert post_file(client, world, "member", world.predictions(seed=3)).status_code == 429
    after = scrape(client)
    for outcome in ("scored", "rejected", "over_quota"):
        assert (
            value(after, "holdout_uploads_total", outcome=outcome)
            - value(before, "holdout_uploads_total", outcome=outcome)
            == 1
        ), outcome
    # Every file that reached the parser was timed; the over-quota one never did (cheap refusals first).
    assert (
        value(after, "holdout_upload_parse_score_seconds_count")
        - value(before, "holdout_upload_parse_score_seconds_count")
        == 2
    )
    assert (
        value(after, "holdout_http_requests_total", endpoint="api_v1.create_submission", method="POST", status="429")
        - value(before, "holdout_http_requests_total", endpoint="api_v1.create_submission", method="POST", status="429")
        == 1
    )

    stored_submission(app, world, publish=True)
    assert client.get("/leaderboards/nlvr2/dev").status_code == 200
    assert client.get("/api/v1/leaderboards/nlvr2/dev").status_code == 200  # the same board, not recomputed
    boards = scrape(client)
    assert (
        value(boards, "holdout_board_computation_seconds_count")
        - value(after, "holdout_board_computation_seconds_count")
        == 1
    )
    assert value(boards, "holdout_board_computation_seconds_sum") > value(
        after, "holdout_board_computation_seconds_sum"
    )
    # The same build by benchmark, split and board, with the growth of the process's peak memory during it.
    dev = {"benchmark": "nlvr2", "split": "dev", "board": "whole"}
    assert (
        value(boards, "holdout_board_build_seconds_count", **dev)
        - value(after, "holdout_board_build_seconds_count", **dev)
        == 1
    )
    assert ("holdout_board_build_peak_bytes", tuple(sorted(dev.items()))) in boards
    assert value(boards, "holdout_board_build_peak_bytes", **dev) >= 0


def test_database_errors_are_counted_by_kind(app, client, tmp_path):
    before = scrape(client)
    with app.app_context():
        with pytest.raises(SQLAlchemyError):
            db.session.execute(text("SELECT * FROM no_such_table"))
        db.session.rollback()
    # A database that cannot be reached: the page is a 503 and the error is counted as "unavailable".
    unreachable = create_app(make_config(tmp_path, tmp_path / "missing" / "folder" / "db.sqlite3"))
    assert unreachable.test_client().get("/").status_code == 503
    after = scrape(client)
    assert (
        value(after, "holdout_database_errors_total", kind="other")
        - value(before, "holdout_database_errors_total", kind="other")
        == 1
    )
    assert (
        value(after, "holdout_database_errors_total", kind="unavailable")
        - value(before, "holdout_database_errors_total", kind="unavailable")
        >= 1
    )


# --- who may read it -----------------------------------------------------------------------------------


def _app(tmp_path, database_url, **settings):
    return create_app(make_config(tmp_path, database_url) | settings)


@pytest.mark.one_backend
def test_served_to_loopback_only_by_default(client):
    """On SQLite alone: who may read /metrics, the same on every database (errors by dialect: on both, above)."""
    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "::1"}).status_code == 200
    refused = client.get("/metrics", environ_base=PUBLIC_ADDRESS)
    assert refused.status_code == 404
    assert b"holdout_" not in refused.data


@pytest.mark.one_backend
def test_allowed_networks_replace_the_default(tmp_path, database_url):
    """On SQLite alone: who may read /metrics, the same on every database (errors by dialect: on both, above)."""
    client = _app(
        tmp_path, database_url, METRICS_ALLOW=networks("METRICS_ALLOW", "10.0.0.0/8, 192.0.2.1")
    ).test_client()
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "10.20.30.40"}).status_code == 200
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "192.0.2.1"}).status_code == 200
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "192.0.2.2"}).status_code == 404
    assert client.get("/metrics").status_code == 404  # loopback is no longer in the list


@pytest.mark.one_backend
def test_token_opens_it_from_anywhere_and_a_wrong_one_is_refused(tmp_path, database_url):
    """On SQLite alone: who may read /metrics, the same on every database (errors by dialect: on both, above)."""
    client = _app(tmp_path, database_url, METRICS_TOKEN="scrape-secret-123").test_client()
    ok = client.get("/metrics", environ_base=PUBLIC_ADDRESS, headers={"Authorization": "Bearer scrape-secret-123"})
    assert ok.status_code == 200 and b"holdout_http_requests_total" in ok.data
    wrong = client.get("/metrics", environ_base=PUBLIC_ADDRESS, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403
    assert client.get("/metrics", environ_base=PUBLIC_ADDRESS).status_code == 404
    # A wrong token is refused even from an allowed address: whoever sends one meant to use it.
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 403


@pytest.mark.one_backend
def test_behind_a_trusted_proxy_the_client_address_decides(tmp_path, database_url):
    """On SQLite alone: who may read /metrics, the same on every database (errors by dialect: on both, above)."""
    client = _app(tmp_path, database_url, TRUSTED_PROXIES=1).test_client()
    assert client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 404
    assert client.get("/metrics", headers={"X-Forwarded-For": "127.0.0.1"}).status_code == 200


def test_metrics_allow_is_validated(tmp_path, monkeypatch):
    monkeypatch.setenv("METRICS_ALLOW", "10.0.0.0/8, not-an-address")
    with pytest.raises(ConfigError, match="METRICS_ALLOW.*not-an-address"):
        from_environment(str(tmp_path))
    monkeypatch.setenv("METRICS_ALLOW", "")
    assert from_environment(str(tmp_path))["METRICS_ALLOW"] == ()
    monkeypatch.delenv("METRICS_ALLOW")
    assert [str(n) for n in from_environment(str(tmp_path))["METRICS_ALLOW"]] == ["127.0.0.0/8", "::1/128"]
