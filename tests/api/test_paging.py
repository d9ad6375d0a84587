"""Issue 27: every list of /api/v1 takes ?limit=&offset= and says its `total`; boards (and the models view)
and submissions take a search, ?q=, on the API and on the board's page. A paged or searched board keeps the
whole board's ranks, and the search is part of every cached page."""

from __future__ import annotations

import re

from app import synthetic
from app.services import catalog
from app.services.intake import submissions
from app.services.people import teams
from tests.support.api_world import build_world

BOARD = "/api/v1/leaderboards/nlvr2/dev"
ROW = re.compile(r'<tr class="entry"[^>]*><td class="rank">(\d+).*?<a class="name" [^>]*title="([^"]*)"', re.S)
# model name, team, accuracy, anonymous: five entries far enough apart on 160 examples to rank apart.
ENTRIES = [
    ("alpha-big", "Lab", 0.97, False),
    ("beta", "Rivals", 0.85, False),
    ("Alpha rival", "Rivals", 0.7, False),
    ("gamma", "Lab", 0.55, True),
    ("delta", "Lab", 0.3, False),
]


def _publish_entries(app, world) -> None:
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        for seed, (name, team, accuracy, anonymous) in enumerate(ENTRIES, start=1):
            data = synthetic.predictions("nlvr2", world.gold["dev"], accuracy, seed=seed, split="dev")
            submissions.store_scored(
                split, teams.find_team(team), data, model_name=name, description=f"{name}'s run",
                anonymous=anonymous, publish=True,
            )  # fmt: skip


def _table(page) -> str:
    """The board table's rows (the chart below it draws the whole board whatever the search)."""
    text = page if isinstance(page, str) else page.get_data(as_text=True)
    return text.split("<tbody>")[1].split("</tbody>")[0]


def _names(entries: list[dict]) -> list[str]:
    return [entry["model_name"] for entry in entries]


def test_a_board_pages_and_searches_keeping_the_whole_boards_ranks(app, client):
    world = build_world(app)
    _publish_entries(app, world)
    full = client.get(BOARD).json
    assert (full["total"], full["limit"], full["offset"]) == (5, None, 0)  # no parameters: every entry, as before
    assert _names(full["entries"]) == [name for name, *_ in ENTRIES]
    rank = {entry["model_name"]: entry["rank"] for entry in full["entries"]}
    assert sorted(set(rank.values())) == [1, 2, 3, 4, 5], "the world's entries should rank apart"

    window = client.get(f"{BOARD}?limit=2&offset=1").json
    assert window["entries"] == full["entries"][1:3]
    assert (window["total"], window["limit"], window["offset"]) == (5, 2, 1)
    assert client.get(f"{BOARD}?offset=9").json["entries"] == []

    # Case-insensitive, on the model name or the team name; each keeps the whole board's rank.
    found = client.get(f"{BOARD}?q=ALPHA").json
    assert _names(found["entries"]) == ["alpha-big", "Alpha rival"] and found["total"] == 2
    assert [entry["rank"] for entry in found["entries"]] == [1, 3]
    later = client.get(f"{BOARD}?q=alpha&limit=1&offset=1").json
    assert _names(later["entries"]) == ["Alpha rival"] and later["entries"][0]["rank"] == 3 and later["total"] == 2
    # An anonymous entry is found as the board shows it, never by its team's name.
    assert _names(client.get(f"{BOARD}?q=lab").json["entries"]) == ["alpha-big", "delta"]
    assert _names(client.get(f"{BOARD}?q=anonym").json["entries"]) == ["gamma"]
    assert client.get(f"{BOARD}?q=nothing-like-it").json["total"] == 0

    models = client.get("/api/v1/leaderboards/nlvr2/models?q=rival&limit=5").json
    assert [(m["model"], m["team"], m["rank"]) for m in models["models"]] == [
        ("beta", "Rivals", 2),
        ("Alpha rival", "Rivals", 3),
    ]
    assert (models["total"], models["limit"], models["offset"]) == (2, 5, 0)
    benchmarks = client.get("/api/v1/benchmarks?limit=0").json
    assert (benchmarks["benchmarks"], benchmarks["total"], benchmarks["limit"]) == ([], 1, 0)


def test_the_board_page_searches_and_its_cached_pages_tell_searches_apart(app):
    world = build_world(app)
    _publish_entries(app, world)
    visitor = app.test_client(use_cookies=False)  # the shared, cached page of visitors without a session
    whole = visitor.get("/leaderboards/nlvr2/dev")
    assert "beta" in whole.get_data(as_text=True) and 'name="q"' in whole.get_data(as_text=True)
    found = visitor.get("/leaderboards/nlvr2/dev?q=alpha")  # the same board version, sort and page: q alone differs
    assert found.status_code == 200 and found.headers["ETag"] != whole.headers["ETag"]
    assert ROW.findall(_table(found)) == [("1", "alpha-big"), ("3", "Alpha rival")]
    assert "2 of 5 entries match “alpha”" in found.get_data(as_text=True)
    # Sorted ascending: Alpha rival first, with its rank on the whole board.
    page = visitor.get("/leaderboards/nlvr2/dev?q=alpha&sort=all:accuracy&order=asc").get_data(as_text=True)
    assert ROW.findall(_table(page)) == [("3", "Alpha rival"), ("1", "alpha-big")]
    # The search box keeps the other choices, and the table's links keep the search.
    assert 'name="q" value="alpha"' in page and 'name="sort" value="all:accuracy"' in page
    assert "q=alpha" in page.split('class="sort')[1].split(">")[0]
    assert visitor.get("/leaderboards/nlvr2/dev?q=" + "x" * 201).status_code == 400


def test_the_submission_list_pages_and_searches_the_callers_teams(app, client):
    world = build_world(app)
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        for seed, (team, name, description) in enumerate(
            [
                ("Lab", "resnet", "baseline"),
                ("Lab", "vit", "trained on 50% more data"),
                ("Rivals", "vit-rival", "50% more"),  # another team's: never listed to the member
                ("Lab", "vit-large", "a bigger ViT"),
            ]
        ):
            data = synthetic.predictions("nlvr2", world.gold["dev"], 0.8, seed=seed, split="dev")
            submissions.store_scored(split, teams.find_team(team), data, model_name=name, description=description)
    headers = world.headers("member")
    listed = client.get("/api/v1/submissions", headers=headers).json
    assert [s["model_name"] for s in listed["submissions"]] == ["vit-large", "vit", "resnet"]  # newest first
    assert (listed["total"], listed["limit"], listed["offset"]) == (3, None, 0)
    page = client.get("/api/v1/submissions?limit=1&offset=1", headers=headers).json
    assert [s["model_name"] for s in page["submissions"]] == ["vit"] and page["total"] == 3
    # Model name or description, ignoring case; % is a character like any other, not a wildcard.
    assert [s["model_name"] for s in client.get("/api/v1/submissions?q=VIT", headers=headers).json["submissions"]] == [
        "vit-large",
        "vit",
    ]
    percent = client.get("/api/v1/submissions?q=50%25", headers=headers).json
    assert [s["model_name"] for s in percent["submissions"]] == ["vit"] and percent["total"] == 1


BAD = [
    ("limit=-1", "limit"),
    ("limit=ten", "limit"),
    ("limit=1001", "limit"),
    ("limit=%2B5", "limit"),  # +5: whole numbers are written with digits alone
    ("offset=-3", "offset"),
    ("offset=1.5", "offset"),
    ("offset=99999999999999999999", "offset"),  # past what a database's OFFSET takes
    ("q=" + "x" * 201, "q"),
]


def test_a_bad_window_or_search_is_a_400_naming_the_parameter(app, client):
    world = build_world(app, n=40)
    lists = ["/benchmarks", "/leaderboards/nlvr2/dev", "/leaderboards/nlvr2", "/leaderboards/nlvr2/models"]
    for query, named in BAD:
        for path in lists + ["/submissions"]:
            if named == "q" and path == "/benchmarks":
                continue  # no search there (an unknown parameter is ignored)
            response = client.get(f"/api/v1{path}?{query}", headers=world.headers("member"))
            assert response.status_code == 400, (path, query, response.json)
            assert response.json["error"].startswith(f"{named} must be"), (path, response.json)
