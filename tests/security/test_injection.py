"""SQL injection through every query parameter, URL part and form field: a 4xx or a normal page, never a
5xx, no effect on the database, and no answer that carries a password hash, an API token (or its hash), a
hidden label or the path of a gold file."""

from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import ApiToken, Split, User
from tests.security import crawler
from tests.security.leaks import LeakDetector
from tests.support.browser import post_form
from tests.support.security_world import build, table_counts

pytestmark = pytest.mark.postgres(
    reason=(
        "SQL injection is a matter of each dialect's parser and quoting; PostgreSQL also refuses NUL bytes "
        "SQLite accepts"
    )
)

PAYLOADS = (
    "' OR '1'='1",
    "1; DROP TABLE users; --",
    '" OR 1=1 --',
    "1' UNION SELECT password_hash FROM users --",
    "-1",
    "0",
    "99999999999999999999999999",
    "1e309",
    "NaN",
    "%00",
    "\x00",
    "nlvr2'--",
    "[]",
    "é' ;--",
)
PARAMETERS = (
    "sort",
    "order",
    "page",
    "per_page",
    "q",
    "split",
    "team",
    "benchmark",
    "format",
    "fmt",
    "subset",
    "metric",
    "status",
    "since",
    "next",
    "id",
    "limit",
    "offset",
)
# Requests may fill the leaderboard cache, note when a token was used and count the test's own logins
# (the shared login throttle); nothing else may change.
CACHES = {"leaderboard_cache", "auth_attempts"}


def _counts(app) -> dict[str, int]:
    return {name: count for name, count in table_counts(app).items() if name not in CACHES}


def _secrets(app, world) -> dict[str, str]:
    """What no answer may carry, to anyone: stored hashes, tokens, where the gold files are."""
    with app.app_context():
        found = {f"password hash of {u.email}": u.password_hash for u in db.session.scalars(select(User))}
        found |= {f"token hash {t.id}": t.token_hash for t in db.session.scalars(select(ApiToken))}
        found |= {f"gold path of {s.slug}": s.gold_path for s in db.session.scalars(select(Split))}
        found["the labels folder"] = str(Path(app.config["HIDDEN_LABELS_DIR"]).resolve())
    found |= {f"API token of {role}": token for role, token in world.tokens.items()}
    return found


def _carried(text: str, role: str, secrets: dict[str, str], detector: LeakDetector) -> list[str]:
    found = [what for what, value in secrets.items() if value and value in text]
    # Maintainers may see labels (the label audit names them), never a gold file's lines.
    return found + (detector.gold_bytes(text) if role == "admin" else detector.leaks(text))


def test_the_content_check_can_fail(app):
    world = build(app)
    secrets, detector = _secrets(app, world), LeakDetector(world)
    assert len(secrets) >= 3 + 3 + 4 + 1 + 3
    row = world.rows("test-none")[0]
    for what, value in secrets.items():
        assert _carried(f"<td>{value}</td>", "admin", secrets, detector) == [what]
    assert _carried(f"{row['identifier']},{row['label']}", "anonymous", secrets, detector)
    assert not _carried("<p>an ordinary page</p>", "anonymous", secrets, detector)


def test_query_parameters_on_every_route(app):
    world = build(app)
    secrets, detector = _secrets(app, world), LeakDetector(world)
    by_endpoint: dict[str, list[str]] = {}
    for endpoint, url in crawler.get_urls(app, world):
        if endpoint in crawler.VENDORED_FILES:
            continue
        by_endpoint.setdefault(endpoint, [])
        if len(by_endpoint[endpoint]) < 2:
            by_endpoint[endpoint].append(url)
    before = _counts(app)
    problems, answered = [], {}
    for role in ("anonymous", "admin"):
        client = crawler.logged_in_client(app, role)
        for urls in by_endpoint.values():
            for url in urls:
                for payload in PAYLOADS:
                    query = urlencode(dict.fromkeys(PARAMETERS, payload))
                    response = client.get(f"{url}?{query}", headers=world.headers(role))
                    if response.status_code >= 500:
                        problems.append(f"{role} GET {url}?… {payload!r}: {response.status_code}")
                    # Bytes that are not text (a bundle's .zip) are read as far as they are.
                    text = response.get_data().decode("utf-8", errors="replace")
                    for what in _carried(text, role, secrets, detector):
                        problems.append(f"{role} GET {url}?… {payload!r} ({response.status_code}) carries {what}")
                    answered[response.status_code // 100] = answered.get(response.status_code // 100, 0) + 1
    assert not problems, "\n".join(problems[:40])
    assert _counts(app) == before
    # The check looked at real pages, not only refusals.
    assert answered.get(2, 0) > 100, answered


def test_quoted_slugs_and_ids_in_paths_are_plain_4xx(app):
    build(app)
    client = crawler.logged_in_client(app, "admin")
    before = _counts(app)
    for payload in PAYLOADS:
        segment = quote(payload, safe="")
        for path in (
            f"/leaderboards/{segment}",
            f"/leaderboards/nlvr2/{segment}",
            f"/leaderboards/{segment}/dev",
            f"/api/v1/leaderboards/{segment}/dev",
            f"/api/v1/leaderboards/nlvr2/{segment}",
            f"/leaderboards/nlvr2/dev/export.{segment}",
            f"/console/splits/nlvr2/{segment}",
            f"/submissions/{segment}",
            f"/api/v1/submissions/{segment}",
            f"/teams/{segment}",
            f"/invites/{segment}",
        ):
            response = client.get(path)
            # 401: the API asks for its token before it looks anything up; 422: a NUL byte (see below).
            assert response.status_code in (400, 401, 404, 422), (path, response.status_code)
    assert _counts(app) == before


def test_form_and_api_fields(app):
    world = build(app)
    before = _counts(app)
    anonymous = app.test_client()
    for email in ("' OR 1=1 --", "owner@example.org' --", '" OR ""="', "*"):
        response = post_form(anonymous, "/login", {"email": email, "password": "' OR '1'='1"})
        assert response.status_code in (400, 401), (email, response.status_code)
    assert anonymous.get("/account").status_code == 302  # still nobody
    client = crawler.logged_in_client(app, "owner")
    data = synthetic.predictions("nlvr2", world.gold["dev"], 0.7, seed=5)
    for field, value, status in (
        ("benchmark", "nlvr2' OR '1'='1", 404),
        ("split", "dev' --", 404),
        ("team", "1 OR 1=1", 403),
        ("team", "Lab' --", 403),
    ):
        form = {
            "benchmark": "nlvr2",
            "split": "dev",
            "model_name": "m",
            field: value,
            "file": (io.BytesIO(data), "p.csv"),
        }
        response = client.post(
            "/api/v1/submissions", data=form, headers=world.headers("owner"), content_type="multipart/form-data"
        )
        assert response.status_code == status, (field, value, response.get_data(as_text=True))
    assert _counts(app) == before
    # Text fields are stored as written, not interpreted.
    name = "Robert'); DROP TABLE teams;--"
    response = post_form(client, "/teams", {"name": name})
    assert response.status_code == 302
    assert "Robert&#39;); DROP TABLE teams;--" in client.get(response.headers["Location"]).get_data(as_text=True)
    after = _counts(app)
    assert after["teams"] == before["teams"] + 1 and after["users"] == before["users"]


def test_nul_bytes_and_broken_encodings_are_4xx_everywhere(app):
    """PostgreSQL text cannot hold a NUL byte: wherever one arrives the answer is a 4xx naming the input,
    never the database's error as a 500 (and SQLite stores nothing either)."""
    world = build(app)
    before = _counts(app)
    client = crawler.logged_in_client(app, "owner")
    headers = world.headers("owner")
    for path in (
        "/leaderboards/nlvr2/%00",
        "/leaderboards/%00/dev",
        "/api/v1/leaderboards/nlvr2/a%00b",
        "/leaderboards/nlvr2/dev?sort=%00",
        "/console/flags?split=%00",
        "/invites/%00",
        "/leaderboards/nlvr2/%ff",
        "/leaderboards/nlvr2/%ed%a0%80",
        "/leaderboards/%c0%af/dev",
    ):
        response = client.get(path, headers=headers)
        assert 400 <= response.status_code < 500, (path, response.status_code)
        if "%00" in path.split("?")[0]:
            assert response.status_code == 404, path  # no address has a NUL byte (and the API documents 404)
    data = synthetic.predictions("nlvr2", world.gold["dev"], 0.7, seed=6)
    for field in ("benchmark", "split", "model_name", "description", "paper_url", "code_url", "team", "anonymous"):
        form = {"benchmark": "nlvr2", "split": "dev", "model_name": "m", "file": (io.BytesIO(data), "p.csv")}
        form[field] = "https://example.org/a\x00b" if field.endswith("_url") else "a\x00b"
        response = client.post("/api/v1/submissions", data=form, headers=headers, content_type="multipart/form-data")
        assert 400 <= response.status_code < 500, (field, response.status_code)
        assert response.json["error"]
    sid = world.submissions["owner:dev:unpublished"]
    for content_type in ("application/json", "text/plain"):
        response = client.post(
            f"/api/v1/submissions/{sid}/publish",
            data='{"description": "a\\u0000b"}',
            headers={**headers, "Content-Type": content_type},
        )
        assert response.status_code == 422, (content_type, response.get_data(as_text=True))
    for path, fields in (
        ("/login", {"email": "a\x00@b.org", "password": "x"}),
        ("/teams", {"name": "a\x00b"}),
        ("/account/tokens", {"name": "a\x00b"}),
        (f"/submissions/{sid}/publish", {"description": "a\x00b"}),
    ):
        response = post_form(client, path, fields, form_page="/account")
        assert response.status_code == 422, (path, response.status_code)
        assert "NUL" in response.get_data(as_text=True)
    assert _counts(app) == before


def test_multipart_parts_without_a_name_are_plain_input(app):
    """A part with no name (its key is None) must not trip the input checks: a 4xx, never a 500."""
    world = build(app)
    client = crawler.logged_in_client(app, "owner")
    for body in (
        b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",
        b"--b\r\nContent-Disposition: form-data\r\n\r\nx\x00y\r\n--b--\r\n",
    ):
        for path in ("/api/v1/submissions", "/submit", "/teams"):
            response = client.post(
                path, data=body, content_type="multipart/form-data; boundary=b", headers=world.headers("owner")
            )
            assert 400 <= response.status_code < 500, (path, body, response.status_code)
