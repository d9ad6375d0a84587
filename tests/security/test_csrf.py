"""CSRF: every state-changing route of the HTML blueprints (found in the URL map) refuses a POST without a
valid token with 400 and changes nothing (an upload from a visitor not logged in is sent to log in first,
before its body is read); the API takes no session cookie, so it needs no token."""

from __future__ import annotations

import io

from app import synthetic
from tests.security import crawler
from tests.support.browser import csrf_token
from tests.support.security_world import build, table_counts


def html_post_rules(app):
    return [
        rule for rule in app.url_map.iter_rules() if "POST" in rule.methods and not rule.endpoint.startswith("api_v1.")
    ]


def test_every_html_post_refuses_a_missing_or_forged_token(app):
    world = build(app)
    rules = html_post_rules(app)
    assert {rule.endpoint for rule in rules} >= {
        "auth.login",
        "auth.logout",
        "submissions.new",
        "teams.index",
        "account.create_token",
        "submissions.publish",
    }
    problems = []
    for role in ("anonymous", "owner", "admin"):
        client = crawler.logged_in_client(app, role)
        csrf_token(client, "/login")  # the session holds a real token; the requests below do not send it
        for rule in rules:
            for url in crawler.example_urls(app, world, rule, limit=2):
                for data in ({}, {"csrf_token": "forged"}, {"csrf_token": ""}):
                    before = table_counts(app)
                    response = client.post(url, data={**data, "name": "x", "reason": "x", "description": "x"})
                    if role == "anonymous" and getattr(app.view_functions[rule.endpoint], "accepts_upload", False):
                        if response.status_code != 302 or "/login" not in response.headers["Location"]:
                            problems.append(f"anonymous upload to {url}: {response.status_code}, not sent to log in")
                    elif response.status_code != 400:
                        problems.append(f"{role} POST {url} {data}: {response.status_code}")
                    if table_counts(app) != before:
                        problems.append(f"{role} POST {url} {data} changed the database")
        # Still logged in: a refused logout must not have ended the session.
        if role != "anonymous":
            assert client.get("/account").status_code == 200
    assert not problems, "\n".join(problems)


def test_a_token_from_another_session_is_refused(app):
    world = build(app)
    attacker = crawler.logged_in_client(app, "other")
    stolen = csrf_token(attacker, "/account")
    victim = crawler.logged_in_client(app, "owner")
    before = table_counts(app)
    response = victim.post("/account/tokens", data={"csrf_token": stolen, "name": "planted"})
    assert response.status_code == 400
    response = victim.post(
        f"/submissions/{world.submissions['owner:dev:published']}/unpublish", data={"csrf_token": stolen}
    )
    assert response.status_code == 400
    assert table_counts(app) == before


def test_uploads_need_the_token_too(app):
    world = build(app)
    client = crawler.logged_in_client(app, "owner")
    data = synthetic.predictions("nlvr2", world.gold["dev"], 0.8)
    before = table_counts(app)
    response = client.post(
        "/submit",
        content_type="multipart/form-data",
        data={
            "team": str(world.team_ids["owner"]),
            "split": "nlvr2/dev",
            "model_name": "m",
            "file": (io.BytesIO(data), "p.csv"),
        },
    )
    assert response.status_code == 400
    assert table_counts(app) == before


def test_the_api_ignores_the_session_cookie(app):
    """A logged-in browser session cannot be ridden to the API: without a bearer token it is 401."""
    world = build(app)
    client = crawler.logged_in_client(app, "owner")
    data = synthetic.predictions("nlvr2", world.gold["dev"], 0.8)
    before = table_counts(app)
    response = client.post(
        "/api/v1/submissions",
        content_type="multipart/form-data",
        data={"benchmark": "nlvr2", "split": "dev", "model_name": "m", "file": (io.BytesIO(data), "p.csv")},
    )
    assert response.status_code == 401
    sid = world.submissions["owner:dev:published"]
    assert client.post(f"/api/v1/submissions/{sid}/unpublish").status_code == 401
    assert client.get("/api/v1/submissions").status_code == 401
    assert table_counts(app) == before
