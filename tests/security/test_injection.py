"""SQL injection through every query parameter, URL part and form field: a 4xx or a normal page, never a
5xx, and no effect on the database."""
from __future__ import annotations

import io
from urllib.parse import quote, urlencode

from app import synthetic
from tests.clients import post_form
from tests.security import crawler
from tests.security.world import build, table_counts

PAYLOADS = ("' OR '1'='1", "1; DROP TABLE users; --", "\" OR 1=1 --", "1' UNION SELECT password_hash FROM users --",
            "-1", "0", "99999999999999999999999999", "1e309", "NaN", "%00", "\x00", "nlvr2'--", "[]", "é' ;--")
PARAMETERS = ("sort", "order", "page", "per_page", "q", "split", "team", "benchmark", "format", "fmt", "subset",
              "metric", "status", "since", "next", "id", "limit", "offset")
# Requests may fill the leaderboard cache and note when a token was used; nothing else may change.
CACHES = {"leaderboard_cache"}


def _counts(app) -> dict[str, int]:
    return {name: count for name, count in table_counts(app).items() if name not in CACHES}


def test_query_parameters_on_every_route(app):
    world = build(app)
    by_endpoint: dict[str, list[str]] = {}
    for endpoint, url in crawler.get_urls(app, world):
        by_endpoint.setdefault(endpoint, [])
        if len(by_endpoint[endpoint]) < 2:
            by_endpoint[endpoint].append(url)
    before = _counts(app)
    problems = []
    for role in ("anonymous", "admin"):
        client = crawler.logged_in_client(app, role)
        for urls in by_endpoint.values():
            for url in urls:
                for payload in PAYLOADS:
                    query = urlencode({name: payload for name in PARAMETERS})
                    response = client.get(f"{url}?{query}", headers=world.headers(role))
                    if response.status_code >= 500:
                        problems.append(f"{role} GET {url}?… {payload!r}: {response.status_code}")
    assert not problems, "\n".join(problems)
    assert _counts(app) == before


def test_quoted_slugs_and_ids_in_paths_are_plain_4xx(app):
    build(app)
    client = crawler.logged_in_client(app, "admin")
    before = _counts(app)
    for payload in PAYLOADS:
        segment = quote(payload, safe="")
        for path in (f"/leaderboards/{segment}", f"/leaderboards/nlvr2/{segment}", f"/leaderboards/{segment}/dev",
                     f"/api/v1/leaderboards/{segment}/dev", f"/api/v1/leaderboards/nlvr2/{segment}",
                     f"/leaderboards/nlvr2/dev/export.{segment}", f"/console/splits/nlvr2/{segment}",
                     f"/submissions/{segment}", f"/api/v1/submissions/{segment}", f"/teams/{segment}",
                     f"/invites/{segment}"):
            response = client.get(path)
            # 401: the API asks for its token before it looks anything up.
            assert response.status_code in (400, 401, 404), (path, response.status_code)
    assert _counts(app) == before


def test_form_and_api_fields(app):
    world = build(app)
    before = _counts(app)
    anonymous = app.test_client()
    for email in ("' OR 1=1 --", "owner@example.org' --", "\" OR \"\"=\"", "*"):
        response = post_form(anonymous, "/login", {"email": email, "password": "' OR '1'='1"})
        assert response.status_code in (400, 401), (email, response.status_code)
    assert anonymous.get("/account").status_code == 302  # still nobody
    client = crawler.logged_in_client(app, "owner")
    data = synthetic.predictions("nlvr2", world.gold["dev"], 0.7, seed=5)
    for field, value, status in (("benchmark", "nlvr2' OR '1'='1", 404), ("split", "dev' --", 404),
                                 ("team", "1 OR 1=1", 403), ("team", "Lab' --", 403)):
        form = {"benchmark": "nlvr2", "split": "dev", "model_name": "m", field: value,
                "file": (io.BytesIO(data), "p.csv")}
        response = client.post("/api/v1/submissions", data=form, headers=world.headers("owner"),
                               content_type="multipart/form-data")
        assert response.status_code == status, (field, value, response.get_data(as_text=True))
    assert _counts(app) == before
    # Text fields are stored as written, not interpreted.
    name = "Robert'); DROP TABLE teams;--"
    response = post_form(client, "/teams", {"name": name})
    assert response.status_code == 302
    assert "Robert&#39;); DROP TABLE teams;--" in client.get(response.headers["Location"]).get_data(as_text=True)
    after = _counts(app)
    assert after["teams"] == before["teams"] + 1 and after["users"] == before["users"]
