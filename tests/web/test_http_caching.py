"""HTTP caching (app/http/caching.py): every GET route's Cache-Control class, walked from the URL map, and
the ETag / 304 cycle of the public reads: a matching If-None-Match is answered without rendering, and a
change to the board gives a new ETag."""

from __future__ import annotations

import pytest

from app.services import catalog
from app.services.boards import exports, leaderboards, listings, models_view, submission_pages, team_pages
from tests.security import crawler
from tests.support.api_world import build_world, stored_submission
from tests.support.browser import login, post_form
from tests.support.security_world import EMAILS, build
from tests.support.users import PASSWORD

PUBLIC, PRIVATE, NO_STORE, IMMUTABLE = "public", "private", "no-store", "immutable"
PUBLIC_CONTROL = "public, max-age=0, stale-while-revalidate=60"  # LEADERBOARD_PAGE_TTL is 0 in tests
IMMUTABLE_CONTROL = "public, max-age=31536000, immutable"  # files whose address names their version
# Every GET endpoint and its class for a visitor without a session or token. A new route must be added here
# (the walk fails otherwise), which is where its caching is decided.
CLASSES = {
    "public.index": PUBLIC,
    "public.leaderboard": PUBLIC,
    "public.export": PUBLIC,
    "public.sample_file": PUBLIC,
    "public.models": PUBLIC,
    "public.models_export": PUBLIC,
    "public.blind_test": PUBLIC,
    "submissions.show": PUBLIC,
    "teams.public_page": PUBLIC,
    # Comparisons and per-example files are computed per request and not kept by caches (yet).
    "public.compare": NO_STORE,
    "public.compare_csv": NO_STORE,
    "api_v1.compare": NO_STORE,
    "submissions.example_results": NO_STORE,
    "api_v1.example_results": NO_STORE,
    "api_v1.benchmarks": PUBLIC,
    "api_v1.leaderboard": PUBLIC,
    "api_v1.default_leaderboard": PUBLIC,
    "api_v1.models": PUBLIC,
    "api_v1.openapi_document": PUBLIC,
    "api_v1.bundle_schema_document": PUBLIC,
    "api_docs.page": PUBLIC,
    "api_docs.stylesheet": IMMUTABLE,
    "api_docs.script": IMMUTABLE,
    "static": PUBLIC,
    "public.healthz": NO_STORE,
    "metrics.metrics": NO_STORE,
    "auth.login": NO_STORE,
    "auth.register": NO_STORE,
    "auth.forgot_password": NO_STORE,
    "auth.reset_password": NO_STORE,
    "account.verify": NO_STORE,
    "account.index": NO_STORE,
    "teams.index": NO_STORE,
    "teams.detail": NO_STORE,
    "teams.invite": NO_STORE,
    "submissions.mine": NO_STORE,
    "submissions.new": NO_STORE,
    "api_v1.me": NO_STORE,
    "api_v1.list_submissions": NO_STORE,
    "api_v1.get_submission": NO_STORE,
    "api_v1.submission_file": NO_STORE,
    "submissions.original_file": NO_STORE,
    "console.index": NO_STORE,
    "console.audit_log": NO_STORE,
    "console.jobs": NO_STORE,
    "console.flags": NO_STORE,
    "console.rejected": NO_STORE,
    "console.split": NO_STORE,
    "console.label_audit": NO_STORE,
    "console.new_split": NO_STORE,
    "console.benchmark": NO_STORE,
    "console.bundle_download": NO_STORE,  # a benchmark's gold labels, the hidden ones too
    "console.new_bundle": NO_STORE,
}


def _class(response) -> str:
    control = response.headers.get("Cache-Control", "")
    directives = {part.strip().split("=")[0] for part in control.split(",")}
    found = [kind for kind in (NO_STORE, PRIVATE, PUBLIC) if kind in directives]
    assert len(found) == 1, f"Cache-Control {control!r} names no single class"
    return found[0]


def test_every_get_route_has_its_cache_class(app):
    rules = {rule.endpoint for rule in app.url_map.iter_rules() if "GET" in rule.methods}
    assert rules - CLASSES.keys() == set(), "GET routes without a caching class in CLASSES"
    assert CLASSES.keys() - rules == set(), "CLASSES names routes that no longer exist"
    world = build(app)
    anonymous = app.test_client(use_cookies=False)
    sessions = {role: app.test_client() for role in ("owner", "admin")}  # a team's member, a maintainer
    for role, session in sessions.items():
        assert login(session, EMAILS[role], PASSWORD).status_code == 302
    token = world.headers("admin")
    seen_ok: dict[str, set[str]] = {endpoint: set() for endpoint in rules}
    for endpoint, url in crawler.get_urls(app, world, vendored=True) + _comparison_urls(app):
        expected = CLASSES[endpoint]
        answers = {
            "anonymous": anonymous.get(url),
            "token": anonymous.get(url, headers=token),
            **{role: session.get(url) for role, session in sessions.items()},
        }
        for visitor, response in answers.items():
            where = f"{visitor} GET {url} ({response.status_code})"
            if response.status_code == 200:
                seen_ok[endpoint].add(visitor)
            if response.status_code != 200 or expected == NO_STORE:
                assert _class(response) == NO_STORE, where
                assert "ETag" not in response.headers or endpoint == "static", where
            elif expected == IMMUTABLE:  # the same for every visitor, token or not
                assert response.headers["Cache-Control"] == IMMUTABLE_CONTROL, where
            elif endpoint == "static":
                assert _class(response) == PUBLIC, where
            elif visitor == "anonymous":
                assert response.headers["Cache-Control"] == PUBLIC_CONTROL, where
                assert response.headers["ETag"].startswith('"'), f"{where}: not a strong ETag"
                assert {"Cookie", "Accept-Encoding"} <= set(response.vary), where
            elif visitor in sessions:
                assert _class(response) == PRIVATE, where
                assert "ETag" not in response.headers, where
            else:
                assert _class(response) == NO_STORE, where
    # Each class was seen on a real page, not only on errors: public reads answered 200 to a visitor,
    # the rest to a member or the maintainer by session or token.
    for endpoint, visitors in seen_ok.items():
        wanted = {"anonymous"} if CLASSES[endpoint] in (PUBLIC, IMMUTABLE) else set()
        assert visitors and wanted <= visitors, f"{endpoint}: no 200 answer to check ({visitors})"


def _comparison_urls(app) -> list[tuple[str, str]]:
    """The comparison's routes take their entries as query values, which the crawler does not fill: two entries
    on the board of one public split."""
    with app.app_context():
        for split in catalog.list_splits():
            entries = leaderboards.board(split.benchmark.slug, split.slug).entries if not split.hidden else []
            if len(entries) >= 2:
                a, b = entries[0].submission_id, entries[1].submission_id
                break
        else:
            return []
    pair = f"a={a}&b={b}"
    return [
        ("public.compare", f"/compare?{pair}"),
        ("public.compare_csv", f"/compare.csv?{pair}"),
        ("api_v1.compare", f"/api/v1/compare?{pair}"),
    ]


def test_non_get_requests_and_errors_are_not_stored(app, client):
    build_world(app)
    assert _class(client.get("/leaderboards/nope")) == NO_STORE  # 404
    assert _class(client.get("/leaderboards/nlvr2/dev?page=x")) == NO_STORE  # 400
    assert _class(client.post("/api/v1/submissions")) == NO_STORE  # 401
    answer = post_form(client, "/login", {"email": "nobody@example.org", "password": "wrong password"})
    assert _class(answer) == NO_STORE
    assert _class(client.head("/leaderboards/nlvr2/dev")) == PUBLIC


# URL, then the module and name of the service the view calls to make the page.
READS = [
    ("/", leaderboards, "summaries"),
    ("/leaderboards/nlvr2/dev", leaderboards, "board"),
    ("/leaderboards/nlvr2/dev?sort=all:accuracy&order=asc", leaderboards, "board"),
    ("/leaderboards/nlvr2/models", models_view, "models_table"),
    ("/leaderboards/nlvr2/dev/export.csv", exports, "export"),
    ("/leaderboards/nlvr2/models/export.json", exports, "export_models"),
    ("/leaderboards/nlvr2/dev/sample.csv", catalog, "sample_file"),
    ("/submissions/{published}", submission_pages, "page_for"),
    ("/teams/lab", team_pages, "team_page"),
    ("/api/v1/benchmarks", listings, "benchmarks"),
    ("/api/v1/leaderboards/nlvr2/dev", listings, "leaderboard"),
    ("/api/v1/leaderboards/nlvr2/models", exports, "models_document"),
]


@pytest.mark.parametrize(("path", "module", "name"), READS, ids=[path for path, _, _ in READS])
def test_a_matching_etag_is_answered_304_without_rendering_until_the_board_changes(
    app, monkeypatch, path, module, name
):
    world = build_world(app)
    url = path.format(published=stored_submission(app, world, publish=True))
    client = app.test_client(use_cookies=False)
    identity = {"Accept-Encoding": "identity"}
    first = client.get(url, headers=identity)
    assert first.status_code == 200, first.get_data(as_text=True)
    tag = first.headers["ETag"]
    assert first.headers["Cache-Control"] == PUBLIC_CONTROL

    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    again = client.get(url, headers={**identity, "If-None-Match": tag})
    assert again.status_code == 304 and again.get_data() == b""
    assert calls == [], f"{name} rendered a page the client already had"
    assert again.headers["ETag"] == tag and again.headers["Cache-Control"] == PUBLIC_CONTROL
    assert client.get(url, headers={**identity, "If-None-Match": f'"other", {tag}'}).status_code == 304
    # Another address (here another query) is another page with its own tag.
    assert client.get(url + ("&" if "?" in url else "?") + "x=1", headers={"If-None-Match": tag}).status_code != 304
    calls.clear()

    stored_submission(app, world, publish=True, seed=8, model_name="newer-model")  # bumps the board_version
    changed = client.get(url, headers={**identity, "If-None-Match": tag})
    assert changed.status_code == 200 and changed.get_data()
    assert changed.headers["ETag"] != tag
    assert calls == [1]


def test_the_gzipped_page_has_its_own_etag(app, monkeypatch):
    build_world(app)
    client = app.test_client(use_cookies=False)
    plain = client.get("/leaderboards/nlvr2/dev", headers={"Accept-Encoding": "identity"})
    zipped = client.get("/leaderboards/nlvr2/dev", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain.headers
    assert zipped.headers["ETag"] == plain.headers["ETag"][:-1] + '-gz"'
    # Each tag stands for its own body: the identity tag does not validate the gzipped one.
    assert (
        client.get(
            "/leaderboards/nlvr2/dev", headers={"Accept-Encoding": "gzip", "If-None-Match": plain.headers["ETag"]}
        ).status_code
        == 200
    )
    answer = client.get(
        "/leaderboards/nlvr2/dev", headers={"Accept-Encoding": "gzip", "If-None-Match": zipped.headers["ETag"]}
    )
    assert answer.status_code == 304


def test_logged_in_and_token_requests_are_never_answered_from_a_public_etag(app):
    world = build_world(app)
    anonymous = app.test_client(use_cookies=False)
    tag = anonymous.get("/api/v1/leaderboards/nlvr2/dev").headers["ETag"]
    with_token = anonymous.get(
        "/api/v1/leaderboards/nlvr2/dev", headers={**world.headers("member"), "If-None-Match": tag}
    )
    assert with_token.status_code == 200 and _class(with_token) == NO_STORE
    member = app.test_client()
    assert login(member, "member@example.org", "not-used-here").status_code == 302
    page = member.get("/leaderboards/nlvr2/dev", headers={"If-None-Match": tag})
    assert page.status_code == 200 and _class(page) == PRIVATE and "ETag" not in page.headers


def test_within_the_page_ttl_a_304_asks_the_database_nothing(app):
    """With LEADERBOARD_PAGE_TTL the tag is reused like the page itself; a change made here shows at once."""
    from sqlalchemy import event

    from app.db import db

    world = build_world(app)
    app.config["LEADERBOARD_PAGE_TTL"] = 30
    client = app.test_client(use_cookies=False)
    first = client.get("/leaderboards/nlvr2/dev")
    assert first.headers["Cache-Control"] == "public, max-age=30, stale-while-revalidate=60"
    statements = []
    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    assert client.get("/leaderboards/nlvr2/dev", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
    assert statements == []
    stored_submission(app, world, publish=True)
    changed = client.get("/leaderboards/nlvr2/dev", headers={"If-None-Match": first.headers["ETag"]})
    assert changed.status_code == 200 and changed.headers["ETag"] != first.headers["ETag"]
