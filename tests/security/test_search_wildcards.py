"""Searches (issue 27) take wildcards, backslashes and quotes as characters everywhere.

A test whose docstring says FAILS demonstrated a problem found in a hostile review of issue 27 (each is fixed,
and the test now guards the fix); every other one pins behaviour that held under attack."""

from __future__ import annotations

from app import synthetic
from app.services import catalog
from app.services.intake import submissions
from app.services.people import teams
from tests.support.api_world import PASSWORD as WORLD_PASSWORD
from tests.support.api_world import build_world
from tests.support.browser import login


def test_searches_take_wildcards_backslashes_and_quotes_as_characters_everywhere(app, client):
    """`_`, `%`, `/` (SQLAlchemy's autoescape character), a backslash and quotes are plain characters in the
    API's and the page's submission search and in the board search; every total is the number found, and
    a searched board keeps the whole board's ranks."""
    world = build_world(app)
    names = ["a_b", "axb", "c\\d", "e'f\"g", "x/%y", "xz%y", "zzplain"]
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        for seed, name in enumerate(names, start=1):
            data = synthetic.predictions("nlvr2", world.gold["dev"], 0.3 + seed / 12, seed=seed, split="dev")
            submissions.store_scored(
                split, teams.find_team("Lab"), data, model_name=name, description="run", publish=True
            )
    cases = {"_": ["a_b"], "\\": ["c\\d"], "'": ["e'f\"g"], '"': ["e'f\"g"], "/%": ["x/%y"], "%y": ["x/%y", "xz%y"]}
    headers = world.headers("member")
    whole = {e["model_name"]: e["rank"] for e in client.get("/api/v1/leaderboards/nlvr2/dev").get_json()["entries"]}
    browser = app.test_client()
    assert login(browser, "member@example.org", WORLD_PASSWORD).status_code == 302
    for needle, expected in cases.items():
        api = client.get("/api/v1/submissions", query_string={"q": needle}, headers=headers).get_json()
        assert sorted(s["model_name"] for s in api["submissions"]) == sorted(expected), needle
        assert api["total"] == len(expected), needle
        board = client.get("/api/v1/leaderboards/nlvr2/dev", query_string={"q": needle}).get_json()
        assert sorted(e["model_name"] for e in board["entries"]) == sorted(expected), needle
        assert board["total"] == len(expected)
        assert all(e["rank"] == whole[e["model_name"]] for e in board["entries"])
        page = browser.get("/submissions", query_string={"q": needle})
        assert page.status_code == 200, needle
        shown = page.get_data(as_text=True)
        for name in names:
            escaped = name.replace("&", "&amp;").replace("'", "&#39;").replace('"', "&#34;")
            assert (escaped in shown) == (name in expected), (needle, name)
