"""Leaderboard and public submission pages: order, ties, reference rows, sorting, pagination, the board
cache, escaping of everything a team writes, and who sees which breakdowns."""

from __future__ import annotations

import gzip
import html
import re

import pytest
from sqlalchemy import select

from app import lru, synthetic
from app.db import db
from app.models import LeaderboardCache, Submission
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.catalog import references
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.support.browser import login, logout

ROW = re.compile(
    r'<tr class="(entry|reference)"(?: data-submission-id="(\d+)")?>\s*<td class="rank"[^>]*>([^<]*)'
    r'(?:<span class="ci"[^>]*>[^<]*</span>)?</td>'
)
CELL = re.compile(r'<td class="num[^"]*"[^>]*>([0-9.]+) ?<span class="ci">([0-9.]+)–([0-9.]+)</span></td>')


def rows(page: str) -> list[tuple[str, int | None, str]]:
    """(kind, submission id, rank text) of every table row, in order."""
    return [(kind, int(sid) if sid else None, rank) for kind, sid, rank in ROW.findall(page)]


def entry_ids(page: str) -> list[int]:
    return [sid for kind, sid, _ in rows(page) if kind == "entry"]


@pytest.fixture
def site(app):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2", "Synthetic.")
        gold = synthetic.nlvr2_gold(400, seed=3)
        catalog.add_split("nlvr2", "dev", gold, name="Dev", annotations=synthetic.nlvr2_annotations(gold, 60))
        hidden_gold = synthetic.nlvr2_gold(400, split="test", seed=4)
        catalog.add_split(
            "nlvr2",
            "test-u",
            hidden_gold,
            hidden=True,
            name="Test-U",
            annotations=synthetic.nlvr2_annotations(hidden_gold, 60, seed=1),
        )
        catalog.set_policy("nlvr2", "test-u", feedback="full")  # scores public while hidden (not the default)
        member = accounts.create_user("member@example.org", "password123")
        accounts.create_user("other@example.org", "password123")
        accounts.create_user("admin@example.org", "password123", admin=True)
        teams.create_team("Lab", creator=member)
    return {"gold": {"dev": gold, "test-u": hidden_gold}}


def publish(
    app, site, accuracy: float, seed: int, *, split: str = "dev", team: str = "Lab", publish: bool = True, **fields
) -> int:
    with app.app_context():
        found = teams.find_team(team) or teams.create_team(team)
        data = synthetic.predictions("nlvr2", site["gold"][split], accuracy, seed=seed, split=split)
        return submissions.store_scored(
            catalog.get_split("nlvr2", split),
            found,
            data,
            model_name=fields.pop("model_name", f"model-{seed}"),
            description=fields.pop("description", "A model."),
            publish=publish,
            **fields,
        ).id


# --- order, ties, references -----------------------------------------------------------------------------


def test_entries_are_ranked_by_accuracy_with_intervals(app, client, site):
    low, high, middle = publish(app, site, 0.6, 1), publish(app, site, 0.95, 2), publish(app, site, 0.8, 3)
    publish(app, site, 0.99, 4, publish=False)
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert entry_ids(page) == [high, middle, low]
    assert [rank for _, _, rank in rows(page)] == ["1", "2", "3"]  # 35 and 20 points apart on 400 examples
    for value, ci_low, ci_high in CELL.findall(page):
        assert float(ci_low) <= float(value) <= float(ci_high)
    assert '<span class="ci">' in page
    assert "resamples whole sentences" in page and "McNemar" in page and "Holm" in page
    assert "model-4" not in page


def test_identical_scores_share_a_rank_and_close_ones_do_too(app, client, site):
    first = publish(app, site, 0.8, 5, model_name="first")
    same = publish(app, site, 0.8, 5, model_name="same predictions")  # identical file, later
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert rows(page) == [("entry", first, "1"), ("entry", same, "1")]  # a tie: submission time orders it


def test_reference_rows_are_styled_apart_and_never_ranked(app, client, site):
    top, bottom = publish(app, site, 0.9, 1), publish(app, site, 0.6, 2)
    with app.app_context():
        references.add_reference(
            "nlvr2", "dev", "Human", '{"all": {"accuracy": 96.1, "consistency": 90}}', "https://example.org/human"
        )
        references.add_reference("nlvr2", "dev", "Baseline", '{"all": {"accuracy": 75.0}}')
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert rows(page) == [
        ("reference", None, "–"),
        ("entry", top, "1"),
        ("reference", None, "–"),
        ("entry", bottom, "2"),
    ]
    assert page.count('<tr class="reference">') == 2 and "Human" in page and "Baseline" in page
    assert '<span class="tag">reference</span>' in page
    assert 'href="https://example.org/human"' in page
    # Sorting places them by the column too, still unranked.
    page = client.get("/leaderboards/nlvr2/dev?sort=all:accuracy&order=asc").get_data(as_text=True)
    assert rows(page) == [
        ("entry", bottom, "2"),
        ("reference", None, "–"),
        ("entry", top, "1"),
        ("reference", None, "–"),
    ]
    # ... and they are in the chart as dashed lines.
    assert "Human 96.1" in page and "stroke-dasharray" in page


# --- sorting and pagination ------------------------------------------------------------------------------


def test_every_column_header_sorts_server_side(app, client, site):
    ids = [publish(app, site, accuracy, seed) for seed, accuracy in enumerate((0.55, 0.9, 0.75, 0.65), start=1)]
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    links = re.findall(r'<a class="sort[^"]*" href="([^"]+)">', page)
    assert [html.unescape(link) for link in links] == [
        "?sort=all:accuracy&order=desc",
        "?sort=all:consistency&order=desc",
        "?sort=balanced:accuracy&order=desc",
        "?sort=unbalanced:accuracy&order=desc",
    ]
    with app.app_context():
        values = {sid: {(s.subset, s.metric): s.value for s in db.session.get(Submission, sid).scores} for sid in ids}
    for key in [("all", "consistency"), ("unbalanced", "accuracy"), ("all", "accuracy")]:
        for order in ("asc", "desc"):
            page = client.get(f"/leaderboards/nlvr2/dev?sort={key[0]}:{key[1]}&order={order}").get_data(as_text=True)
            shown = [values[sid][key] for sid in entry_ids(page)]
            assert shown == sorted(shown, reverse=order == "desc"), (key, order)
            assert f'aria-sort="{"descending" if order == "desc" else "ascending"}"' in page
    # The sorted column's link flips the order.
    page = client.get("/leaderboards/nlvr2/dev?sort=all:consistency&order=desc").get_data(as_text=True)
    assert 'href="?sort=all:consistency&amp;order=asc"' in page


@pytest.mark.parametrize(
    "query, field",
    [
        ("sort=all:nope", "sort"),
        ("sort=category:x:accuracy", "sort"),
        ("order=up", "order"),
        ("page=abc", "page"),
        ("page=0", "page"),
        ("page=9", "page"),
    ],
)
def test_bad_sort_order_or_page_is_a_400_naming_it(app, client, site, query, field):
    publish(app, site, 0.7, 1)
    response = client.get(f"/leaderboards/nlvr2/dev?{query}")
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert field in text and "Traceback" not in text


def test_pages_of_one_hundred_entries(app, client, site):
    first_id = publish(app, site, 0.7, 1)
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        team = teams.find_team("Lab")
        task_rows = []
        blob = db.session.scalar(select(Submission.predictions).where(Submission.id == first_id))
        for i in range(204):
            task_rows.append(
                Submission(
                    split=split,
                    team=team,
                    status="scored",
                    model_name=f"bulk-{i}",
                    description="d",
                    file_sha256="0" * 64,
                    file_size=1,
                    predictions=blob,
                    published_at=split.created_at,
                )
            )
        db.session.add_all(task_rows)
        split.board_version += 1
        db.session.commit()
    first = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    third = client.get("/leaderboards/nlvr2/dev?page=3").get_data(as_text=True)
    assert len(entry_ids(first)) == 100 and len(entry_ids(third)) == 5
    assert set(entry_ids(first)).isdisjoint(entry_ids(third))
    assert 'href="?page=2"' in first and 'href="?page=3"' in first
    assert '<span aria-current="page" class="current">1' in first
    assert {rank for _, _, rank in rows(first)} == {"1"}  # identical predictions: one tier
    sorted_second = client.get("/leaderboards/nlvr2/dev?sort=all:consistency&order=asc&page=2").get_data(as_text=True)
    assert len(entry_ids(sorted_second)) == 100
    assert 'href="?sort=all:consistency&amp;order=asc&amp;page=3"' in sorted_second
    assert client.get("/leaderboards/nlvr2/dev?page=4").status_code == 400


# --- the cache -------------------------------------------------------------------------------------------


def test_board_is_computed_once_per_change(app, client, site, monkeypatch):
    calls = []
    compute = board_snapshots._compute
    monkeypatch.setattr(
        board_snapshots, "_compute", lambda split, version: calls.append(version) or compute(split, version)
    )
    first = publish(app, site, 0.7, 1)
    assert first in entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True))
    assert len(calls) == 1
    client.get("/leaderboards/nlvr2/dev")
    client.get("/leaderboards/nlvr2/dev?sort=all:consistency&order=asc")
    client.get("/api/v1/leaderboards/nlvr2/dev")
    assert len(calls) == 1
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        cached = db.session.get(LeaderboardCache, split.id)
        assert cached is not None and cached.version == split.board_version
    # Another process (an empty memory) reads the stored payload instead of computing.
    board_snapshots._memo.clear()
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [first]
    assert len(calls) == 1
    # Publishing changes the board: the next reader computes it once, and sees the new entry.
    second = publish(app, site, 0.9, 2)
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [second, first]
    client.get("/leaderboards/nlvr2/dev")
    assert len(calls) == 2
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        assert db.session.get(LeaderboardCache, split.id).version == split.board_version
        admin = accounts.get_user_by_email("admin@example.org")
        submissions.hide(admin, second, "duplicate")
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [first]
    assert len(calls) == 3


def test_anonymous_pages_are_reused_for_the_configured_moment(app, client, site, monkeypatch):
    """LEADERBOARD_PAGE_TTL: a visitor without a session may get a page up to that old, served without a
    query; a change made in this process shows at once, one made elsewhere once the moment is over; a
    logged-in visitor always gets the board as it is. Tests run with it off unless they ask (as here)."""
    from sqlalchemy import event, update

    from app.models import Split

    assert app.config["LEADERBOARD_PAGE_TTL"] == 0  # the test default
    app.config["LEADERBOARD_PAGE_TTL"] = 30
    clock = [1000.0]
    monkeypatch.setattr(lru.time, "monotonic", lambda: clock[0])
    first = publish(app, site, 0.7, 1)
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [first]

    statements = []
    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    page = client.get("/leaderboards/nlvr2/dev")
    assert entry_ids(page.get_data(as_text=True)) == [first] and statements == []  # no query at all
    zipped = client.get("/leaderboards/nlvr2/dev", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert entry_ids(gzip.decompress(zipped.data).decode()) == [first]

    # A change through this process's services: seen at once.
    second = publish(app, site, 0.9, 2)
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [second, first]

    # A change made by another server (here: plain SQL, which this process's models never see).
    with app.app_context():
        db.session.execute(update(Submission).where(Submission.id == second).values(published_at=None))
        db.session.execute(update(Split).where(Split.slug == "dev").values(board_version=Split.board_version + 1))
        db.session.commit()
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [second, first]  # not yet
    login(client, "member@example.org", "password123")
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [first]  # a session: now
    logout(client)
    client.delete_cookie("session")
    clock[0] += 31
    assert entry_ids(client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)) == [first]  # the moment is over


# --- escaping --------------------------------------------------------------------------------------------

EVIL_MODEL = '<script>alert("m")</script>'
EVIL_TEAM = '<b onmouseover="t()">Team & "Co"</b>'
EVIL_DESCRIPTION = "<img src=x onerror=alert('d')>"
EVIL_URL = 'https://example.org/p?a=1&b="><script>u()</script>'


def test_everything_a_team_writes_is_escaped(app, client, site):
    sid = publish(
        app,
        site,
        0.8,
        1,
        team=EVIL_TEAM,
        model_name=EVIL_MODEL,
        description=EVIL_DESCRIPTION,
        paper_url=EVIL_URL,
        code_url="javascript:alert('c')",
    )
    with app.app_context():
        references.add_reference("nlvr2", "dev", "<i>Human</i>", '{"all": {"accuracy": 96}}')
    for path in ("/leaderboards/nlvr2/dev", f"/submissions/{sid}"):
        page = client.get(path).get_data(as_text=True)
        assert "<script>" not in page and "<img src=x" not in page and "<b onmouseover" not in page, path
        assert "<i>Human</i>" not in page
        assert "&lt;script&gt;alert(" in page and EVIL_MODEL in html.unescape(page), path
        hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]
        assert not [h for h in hrefs if h.startswith("javascript:")], path
        assert EVIL_URL in hrefs, path  # an http(s) link stays a link, its quotes escaped
    board = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert "&lt;b onmouseover=" in board and "Team &amp; " in board and EVIL_TEAM in html.unescape(board)
    assert "&lt;i&gt;Human&lt;/i&gt;" in board
    # Also inside the SVG chart's tooltips.
    chart = board[board.index("<svg") : board.index("</svg>")]
    assert "<script>" not in chart and "&lt;script&gt;" in chart


# --- hidden splits and breakdowns ------------------------------------------------------------------------


def _categories(page: str) -> set[str]:
    # Rows carry their subset's name (the cell shows its label: "Coreference").
    return set(re.findall(r'<tr data-subset="(category:[^"]+)">', page))


def test_breakdowns_of_a_hidden_split_are_for_maintainers_only(app, client, site):
    sid = publish(app, site, 0.8, 1, split="test-u")  # hidden split, feedback 'full': scores are public
    with app.app_context():
        hidden_categories = {
            s.name for s in catalog.get_split("nlvr2", "test-u").subsets if s.name.startswith("category:")
        }
    assert hidden_categories
    anonymous = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert _categories(anonymous) == set() and "balanced" in anonymous
    assert "shown to the maintainers only" in anonymous
    login(client, "member@example.org", "password123")
    member = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert _categories(member) == set() and "balanced" in member  # not even to the team
    logout(client)
    login(client, "admin@example.org", "password123")
    admin = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert _categories(admin) == hidden_categories
    # Nor does the leaderboard or its API carry them.
    api = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    assert set(api["entries"][0]["scores"]) == {"all", "balanced", "unbalanced"}
    csv_text = client.get("/leaderboards/nlvr2/test-u/export.csv").get_data(as_text=True)
    assert "category:" not in csv_text


def test_breakdowns_of_a_public_split_are_public(app, client, site):
    sid = publish(app, site, 0.8, 1)
    with app.app_context():
        categories = {s.name for s in catalog.get_split("nlvr2", "dev").subsets if s.name.startswith("category:")}
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert _categories(page) == categories
    assert len(CELL.findall(page)) >= len(categories) + 3  # every subset with its interval


# --- the submission page for the public ------------------------------------------------------------------


def test_a_published_entry_has_a_public_page(app, client, site):
    sid = publish(app, site, 0.8, 1, paper_url="https://example.org/paper", anonymous=True)
    response = client.get(f"/submissions/{sid}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert "model-1" in page and "Anonymous" in page and "Lab" not in page  # anonymity holds
    assert re.search(r"<code>[0-9a-f]{64}</code>", page)
    assert "Rank</dt><dd>1 on the" in page
    assert 'href="https://example.org/paper"' in page
    assert len(CELL.findall(page)) >= 3
    # Nothing a reader could post (the one form is the comparison's, a GET), no moderation.
    forms = re.findall(r"<form[^>]*>", page)
    assert "csrf_token" not in page and all('method="get"' in form for form in forms) and "Moderation" not in page
    assert "quota" not in page.lower()
    assert "Set-Cookie" not in response.headers  # no session for a reader


@pytest.mark.parametrize("state", ["unpublished", "hidden", "held"])
def test_entries_not_on_a_public_board_have_no_public_page(app, client, site, state):
    split = "test-u" if state == "held" else "dev"
    sid = publish(app, site, 0.8, 1, split=split, publish=state != "unpublished")
    with app.app_context():
        if state == "hidden":
            submissions.hide(accounts.get_user_by_email("admin@example.org"), sid, "spam")
        if state == "held":
            catalog.set_policy("nlvr2", "test-u", feedback="none")
    response = client.get(f"/submissions/{sid}")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    login(client, "other@example.org", "password123")
    assert client.get(f"/submissions/{sid}").status_code == 404
    logout(client)
    login(client, "member@example.org", "password123")
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert "quota" in page.lower()  # the team still sees its own page


def test_the_team_and_maintainers_still_see_their_controls(app, client, site):
    sid = publish(app, site, 0.8, 1)
    login(client, "member@example.org", "password123")
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert "Unpublish" in page and "Left today" in page and "Moderation" not in page
    logout(client)
    login(client, "admin@example.org", "password123")
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert "Moderation" in page and "Left today" not in page


def test_vcr_is_ranked_by_q_ar(app, client):
    with app.app_context():
        catalog.add_benchmark("vcr", "vcr", "VCR")
        gold = synthetic.vcr_gold(600, seed=2)
        split = catalog.add_split("vcr", "val", gold, name="Val")
        team = teams.create_team("Lab")
        answers_well = submissions.store_scored(
            split,
            team,
            synthetic.predictions("vcr", gold, 0.9, seed=1, rationale_accuracy=0.3),
            model_name="answers well",
            description="d",
            publish=True,
        ).id
        both_well = submissions.store_scored(
            split,
            team,
            synthetic.predictions("vcr", gold, 0.7, seed=2, rationale_accuracy=0.9),
            model_name="both well",
            description="d",
            publish=True,
        ).id
        references.add_reference("vcr", "val", "Human", '{"all": {"q_a": 91.0, "qa_r": 93.0, "q_ar": 40.0}}')
    page = client.get("/leaderboards/vcr/val").get_data(as_text=True)
    assert rows(page) == [("entry", both_well, "1"), ("reference", None, "–"), ("entry", answers_well, "2")]
    assert "Ranked by Q→AR" in page and "McNemar test on Q→AR" in page


def test_an_entry_has_the_same_interval_on_its_page_as_on_the_board(app, client, site):
    publish(app, site, 0.6, 1)
    sid = publish(app, site, 0.8, 2)
    board = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    row = board[board.index(f'data-submission-id="{sid}"') :]
    accuracy_on_board = CELL.findall(row)[0]
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    whole_split = page[page.index("whole split") :]
    assert CELL.findall(whole_split)[0] == accuracy_on_board


def test_visitors_without_a_session_share_one_cached_page_gzipped_when_asked(app, client, site):
    publish(app, site, 0.8, 1)
    plain = client.get("/leaderboards/nlvr2/dev")
    zipped = client.get("/leaderboards/nlvr2/dev", headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped.headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain.headers
    assert gzip.decompress(zipped.get_data()) == plain.get_data()
    assert {"Cookie", "Accept-Encoding"} <= set(zipped.headers["Vary"].replace(" ", "").split(","))
    # A logged-in visitor gets the layout with their account, and the same table.
    login(client, "member@example.org", "password123")
    mine = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert "member@example.org" in mine and rows(mine) == rows(plain.get_data(as_text=True))
