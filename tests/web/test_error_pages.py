"""Error pages: a page with a proper title for browsers, JSON for the API and for clients that ask only for
JSON, and the session rolled back whatever went wrong."""

from __future__ import annotations

import io
import re

import pytest
from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.models import Benchmark
from app.services import catalog
from app.services.people import accounts, teams
from tests.support.browser import csrf_token, login

pytestmark = pytest.mark.postgres(
    reason="the session must be rolled back after an error: PostgreSQL aborts the transaction, SQLite does not"
)


def _title(response) -> str:
    return re.search(r"<title>(.*?)</title>", response.get_data(as_text=True), re.S).group(1)


@pytest.fixture
def boom(app):
    """A route that writes a row and then fails, to see the 500 page and the rollback."""

    def fail():
        db.session.add(Benchmark(slug="half", name="Half", task_type="nlvr2", description=""))
        db.session.flush()
        raise RuntimeError("the disk caught fire")

    app.add_url_rule("/boom", "boom", fail, methods=["GET", "POST"])
    app.add_url_rule("/api/v1/boom", "api_boom", fail)
    return app


@pytest.mark.one_backend
def test_404_page_and_json(client):
    """On SQLite alone: an answer's shape: no database error to roll back (the 500 test runs on both)."""
    page = client.get("/no/such/page")
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert _title(page) == "Not found (404) · Holdout"
    assert "Check the address" in page.get_data(as_text=True)
    as_json = client.get("/no/such/page", headers={"Accept": "application/json"})
    assert as_json.status_code == 404 and as_json.json == {"error": "There is nothing here.", "details": []}
    api = client.get("/api/v1/no-such-thing", headers={"Accept": "text/html"})
    assert api.status_code == 404 and api.mimetype == "application/json"


@pytest.mark.one_backend
def test_browser_accept_header_gets_html(client):
    """On SQLite alone: an answer's shape: no database error to roll back (the 500 test runs on both)."""
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    assert client.get("/nowhere", headers={"Accept": browser}).mimetype == "text/html"
    assert client.get("/nowhere", headers={"Accept": "*/*"}).mimetype == "text/html"
    assert client.get("/nowhere", headers={"Accept": "application/json, */*;q=0.01"}).mimetype == "application/json"


@pytest.mark.one_backend
def test_service_404_names_what_is_missing(client):
    """On SQLite alone: an answer's words: no database error to roll back (the 500 test runs on both)."""
    page = client.get("/leaderboards/no-such-benchmark")
    assert page.status_code == 404
    assert "unknown benchmark &#39;no-such-benchmark&#39;" in page.get_data(as_text=True)


@pytest.mark.one_backend
def test_403_page(app, client):
    """On SQLite alone: an answer's shape: no database error to roll back (the 500 test runs on both)."""
    with app.app_context():
        accounts.create_user("user@example.org", "password123")
    login(client, "user@example.org", "password123")
    page = client.get("/console/")
    assert page.status_code == 403
    assert _title(page) == "Not allowed (403) · Holdout"
    assert "You are logged in as <strong>user@example.org</strong>" in page.get_data(as_text=True)
    assert client.get("/console/", headers={"Accept": "application/json"}).json["error"]


@pytest.mark.one_backend
def test_405_keeps_allow_header(client):
    """On SQLite alone: an answer's headers: no database error to roll back (the 500 test runs on both)."""
    response = client.delete("/")
    assert response.status_code == 405 and "GET" in response.headers["Allow"]


@pytest.mark.one_backend
def test_413_page_and_json(app, client):
    """On SQLite alone: an answer's shape: no database error to roll back (the 500 test runs on both)."""
    app.config["MAX_CONTENT_LENGTH"] = 1024
    with app.app_context():
        accounts.create_user("user@example.org", "password123")
    login(client, "user@example.org", "password123")
    token = csrf_token(client, "/submit")
    body = {"csrf_token": token, "file": (io.BytesIO(b"x" * 4096), "p.csv")}
    page = client.post("/submit", data=body, content_type="multipart/form-data")
    assert page.status_code == 413
    assert _title(page) == "File too large (413) · Holdout"
    # What the upload page's script sends: it shows the JSON error beside the form.
    body = {"csrf_token": token, "file": (io.BytesIO(b"x" * 4096), "p.csv")}
    script = client.post(
        "/submit",
        data=body,
        content_type="multipart/form-data",
        headers={"Accept": "application/json", "X-Requested-With": "fetch"},
    )
    assert script.status_code == 413 and "larger than this server accepts" in script.json["error"]


@pytest.mark.one_backend
def test_default_request_limit_follows_max_upload_mb(tmp_path, migrated_database):
    """On SQLite alone: a setting: no database error to roll back (the 500 test runs on both)."""
    from app import create_app
    from tests.conftest import make_config

    app = create_app({**make_config(tmp_path, migrated_database), "MAX_UPLOAD_MB": 2})
    assert 2 * 1024 * 1024 < app.config["MAX_CONTENT_LENGTH"] < 3 * 1024 * 1024


def test_429_page_says_when_to_retry(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(64, seed=1)
        catalog.add_split("nlvr2", "dev", gold)
        catalog.set_policy("nlvr2", "dev", per_day=0)
        user = accounts.create_user("user@example.org", "password123")
        team_id = teams.create_team("Lab", creator=user).id
    login(client, "user@example.org", "password123")
    form = {
        "csrf_token": csrf_token(client, "/submit"),
        "team": str(team_id),
        "split": "nlvr2/dev",
        "model_name": "M",
        "file": (io.BytesIO(synthetic.predictions("nlvr2", gold, 0.7)), "p.csv"),
    }
    response = client.post("/submit", data=form, content_type="multipart/form-data")
    assert response.status_code == 429
    assert "next slot opens" in response.get_data(as_text=True)


def test_429_service_error_page_has_retry_after(app, client):
    from datetime import timedelta

    from app.models import utcnow
    from app.services.errors import QuotaExceeded

    def over():
        raise QuotaExceeded("the team has used its 1 submissions for today", utcnow() + timedelta(minutes=30))

    app.add_url_rule("/over", "over", over)
    response = client.get("/over")
    assert response.status_code == 429
    assert _title(response) == "Too many requests (429) · Holdout"
    assert 1700 < int(response.headers["Retry-After"]) <= 1801
    assert "Try again in about 30 minutes" in response.get_data(as_text=True)


def test_login_throttle_429_is_a_page(client):
    statuses = []
    for _ in range(12):
        token = csrf_token(client, "/login")
        statuses.append(client.post("/login", data={"csrf_token": token, "email": "a@b.org", "password": "x" * 8}))
    throttled = statuses[-1]
    assert throttled.status_code == 429
    assert _title(throttled) == "Too many requests (429) · Holdout"
    assert throttled.headers.get("Retry-After")


def test_500_page_rolls_back(boom, client):
    page = client.get("/boom")
    assert page.status_code == 500
    assert _title(page) == "Something went wrong (500) · Holdout"
    text = page.get_data(as_text=True)
    assert "disk caught fire" not in text and "Traceback" not in text
    api = client.get("/api/v1/boom")
    assert api.status_code == 500 and api.json["error"].startswith("Something went wrong")
    with boom.app_context():
        assert db.session.scalar(select(func.count(Benchmark.id))) == 0


@pytest.mark.one_backend
def test_csrf_failure_explains_itself(client):
    """On SQLite alone: an answer's words: no database error to roll back (the 500 test runs on both)."""
    response = client.post("/login", data={"email": "a@b.org", "password": "whatever1"})
    assert response.status_code == 400
    assert "The form has expired" in response.get_data(as_text=True)


@pytest.mark.one_backend
def test_every_page_has_a_specific_title(app, client):
    """On SQLite alone: the pages' titles: no database error to roll back (the 500 test runs on both)."""
    with app.app_context():
        accounts.create_user("admin@example.org", "password123", admin=True)
    login(client, "admin@example.org", "password123")
    for path in (
        "/",
        "/login",
        "/register",
        "/teams",
        "/account",
        "/submit",
        "/submissions",
        "/console/",
        "/console/splits/new",
        "/console/rejected",
        "/console/audit",
    ):
        title = _title(client.get(path))
        assert title.endswith(" · Holdout") and len(title) > len(" · Holdout") + 2, (path, title)


@pytest.mark.one_backend
def test_a_body_too_large_for_a_form_gets_the_general_page_not_the_upload_hint(client):
    """On SQLite alone: an answer's words: no database error to roll back (the 500 test runs on both)."""
    response = client.post("/login", data=b"email=" + b"a" * 200_000, content_type="application/x-www-form-urlencoded")
    page = response.get_data(as_text=True)
    assert response.status_code == 413
    assert "larger than this address accepts (128 KB)" in page and "prediction file" not in page
