"""Any body to any route: Hypothesis draws a route that takes a body (every POST of the URL map, the API's
included), a sender (an anonymous visitor, a logged-in owner with a real CSRF token, a bearer token), a
content type, and a body of a hostile shape (deep or wide JSON, NUL bytes, invalid UTF-8, long fields,
nameless or many parts, garbage), and checks that the answer is never a 5xx and that a refused body
changes nothing in the database."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.http.request_limits import BODY_LIMIT
from tests.security import crawler
from tests.support.browser import csrf_token
from tests.support.security_world import build, table_counts


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """One app and world for every example (Hypothesis calls the test many times)."""
    from app import create_app
    from app.db import db
    from tests.conftest import make_config

    folder = tmp_path_factory.mktemp("hostile-bodies")
    app = create_app(make_config(folder, f"sqlite:///{folder / 'db.sqlite3'}"))
    with app.app_context():
        db.create_all()
    world = build(app)
    rules = [rule for rule in app.url_map.iter_rules() if "POST" in rule.methods]
    urls = sorted({url for rule in rules for url in crawler.example_urls(app, world, rule, limit=1)})
    clients = {role: crawler.logged_in_client(app, role) for role in ("anonymous", "owner")}
    tokens = {"owner": csrf_token(clients["owner"], "/account")}
    yield app, world, urls, clients, tokens
    with app.app_context():
        db.engine.dispose()


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


json_bodies = st.one_of(
    st.integers(33, 200_000).map(_deep),
    st.integers(1, 40_000).map(lambda n: json.dumps(["a"] * n).encode()),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=50),
        lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
        max_leaves=30,
    ).map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=2000),
)
form_bodies = st.one_of(
    st.dictionaries(st.text(max_size=20), st.text(max_size=200), max_size=30).map(
        lambda fields: "&".join(f"{k}={v}" for k, v in fields.items()).encode("utf-8", "surrogatepass")
    ),
    st.integers(1, 3 * BODY_LIMIT).map(lambda n: b"description=" + b"d" * n),
    st.binary(max_size=5000),
    st.just(b"name=%00x&reason=%ff%fe"),
)


def _multipart(fields: list[tuple[str, bytes]]) -> bytes:
    parts = [b'--b0und\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (n.encode(), v) for n, v in fields]
    return b"".join(parts) + b"--b0und--\r\n"


multipart_bodies = st.one_of(
    st.lists(st.tuples(st.sampled_from(["file", "model_name", "x", ""]), st.binary(max_size=500)), max_size=40).map(
        _multipart
    ),
    st.integers(21, 1500).map(lambda n: _multipart([(f"f{i}", b"1") for i in range(n)])),
    st.just(b"--b0und\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--b0und--\r\n"),
    st.binary(max_size=3000),
)
bodies = st.one_of(
    st.tuples(st.just("application/json"), json_bodies),
    st.tuples(st.just("application/x-www-form-urlencoded"), form_bodies),
    st.tuples(st.just("multipart/form-data; boundary=b0und"), multipart_bodies),
    st.tuples(st.sampled_from(["text/plain", "application/octet-stream", ""]), st.binary(max_size=3000)),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), sender=st.sampled_from(["anonymous", "owner", "token"]), body=bodies)
def test_no_body_on_any_route_is_a_server_error(setting, data, sender, body):
    app, world, urls, clients, tokens = setting
    url = data.draw(st.sampled_from(urls), label="url")
    content_type, payload = body
    client = clients["anonymous" if sender == "token" else sender]
    headers = {"Content-Type": content_type} if content_type else {}
    if sender == "owner" and not url.startswith("/api/"):
        headers["X-CSRFToken"] = tokens["owner"]
    if sender == "token":
        headers["Authorization"] = f"Bearer {world.tokens['owner']}"
    before = table_counts(app)
    response = client.post(url, data=payload, headers=headers)
    assert response.status_code < 500, (url, content_type, payload[:200], response.get_data(as_text=True)[:500])
    if response.status_code in (400, 413, 415, 422):
        # A refused body stores nothing, but for what is kept of every attempt: a rejected prediction file,
        # and a login or registration attempt (the throttle counts them).
        after, before = table_counts(app), dict(before, auth_attempts=table_counts(app)["auth_attempts"])
        if after != before:
            assert url in ("/api/v1/submissions", "/submit"), (url, before, after)
