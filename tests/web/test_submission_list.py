"""/submissions, a team's list of its submissions: score and status columns (the score as far as the split's
policy releases it, "held" where it releases none), filters by benchmark and split (a bad value is a 400, never a
500), 50 a page with newer/older links, fast with 10,000 submissions. And where a published entry stands, on its
page and in the API's answer to publishing, from the board's last snapshot: "Published: row N of M on the <split>
board", that the board is being updated, or held until the reveal."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from sqlalchemy import event, insert

from app import synthetic
from app.db import db
from app.evaluation.display import score_text
from app.models import Score, Submission, utcnow
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots
from app.services.boards.listings import SUBMISSIONS_PER_PAGE
from app.services.intake import submissions as intake
from app.services.people import accounts, teams
from tests.support.browser import login, post_form
from tests.support.users import bearer

pytestmark = pytest.mark.postgres(
    reason="the page's query runs on the (team_id, id) index on both databases, and the Ladder writes under a lock"
)

PASSWORD = "password123"


@pytest.fixture
def site(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_benchmark("other", "nlvr2", "Other bench")
        gold = {
            "dev": synthetic.nlvr2_gold(160, seed=7),
            "test-u": synthetic.nlvr2_gold(160, split="test", seed=8),
        }
        catalog.add_split("nlvr2", "dev", gold["dev"], name="Dev")
        catalog.add_split("nlvr2", "test-u", gold["test-u"], hidden=True, name="Test-U")
        catalog.add_split("other", "dev", gold["dev"], name="Other dev")
        catalog.set_policy("nlvr2", "test-u", feedback="ladder", per_day=50)
        member = accounts.create_user("member@example.org", PASSWORD)
        other = accounts.create_user("other@example.org", PASSWORD)
        lab = teams.create_team("Lab", creator=member)
        teams.create_team("Rivals", creator=other)
        token = accounts.create_token(member, "tests")[1]
        return {"gold": gold, "team_id": lab.id, "token": token}


def _api_upload(client, site, split: str, accuracy: float, seed: int, benchmark: str = "nlvr2", **fields):
    data = synthetic.predictions("nlvr2", site["gold"][split], accuracy, seed=seed, split=split)
    form = {"benchmark": benchmark, "split": split, "model_name": f"m{seed}", "file": (io.BytesIO(data), "p.csv")}
    response = client.post(
        "/api/v1/submissions",
        data=form | fields,
        headers=bearer(site["token"]),
        content_type="multipart/form-data",
    )
    assert response.status_code in (201, 422), response.json
    return response.json


def _rows(page: str) -> dict[int, str]:
    """Submission id -> the words of its row's score cell, in page order."""
    found = re.findall(r'<tr data-submission-id="(\d+)">.*?<td class="num score">(.*?)</td>', page, re.S)
    return {int(i): " ".join(re.sub(r"<[^>]+>", " ", cell).split()) for i, cell in found}


def test_scores_and_statuses_as_each_policy_releases_them(app, client, site):
    public = _api_upload(client, site, "dev", 0.8, seed=1)
    best = _api_upload(client, site, "test-u", 0.85, seed=2)
    worse = _api_upload(client, site, "test-u", 0.55, seed=3)
    rejected = client.post(
        "/api/v1/submissions",
        data={"benchmark": "nlvr2", "split": "dev", "model_name": "bad", "file": (io.BytesIO(b"x,maybe\n"), "p.csv")},
        headers=bearer(site["token"]),
        content_type="multipart/form-data",
    )
    assert rejected.status_code == 422
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", feedback="full")
    login(client, "member@example.org", PASSWORD)
    page = client.get("/submissions")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert '<th scope="col" class="num">Score</th>' in html and '<th scope="col">Status</th>' in html
    cells = _rows(html)
    assert cells[public["id"]] == f"{score_text(public['scores']['all']['accuracy'])} Accuracy"
    best_figure = score_text(best["scores"]["all"]["accuracy"])
    assert cells[best["id"]] == f"{best_figure} Accuracy new best"
    # The worse file shows what its team was told: the best again, said so; never its own score.
    assert cells[worse["id"]] == f"{best_figure} Accuracy your best again: not beaten"
    assert cells[max(cells)] == "–"  # the rejected file, the newest
    assert 'status-rejected">rejected' in html and 'status-scored">scored' in html

    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="none")
    cells = _rows(client.get("/submissions").get_data(as_text=True))
    assert cells[best["id"]] == cells[worse["id"]] == "held"


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        ("", {"nlvr2/dev", "nlvr2/test-u", "other/dev"}),
        ("?benchmark=nlvr2", {"nlvr2/dev", "nlvr2/test-u"}),
        ("?benchmark=nlvr2&split=dev", {"nlvr2/dev"}),
        ("?split=dev", {"nlvr2/dev", "other/dev"}),
        ("?benchmark=other&split=", {"other/dev"}),
    ],
)
def test_filters_by_benchmark_and_split(app, client, site, query, kept):
    ids = {
        "nlvr2/dev": _api_upload(client, site, "dev", 0.8, seed=1)["id"],
        "nlvr2/test-u": _api_upload(client, site, "test-u", 0.8, seed=2)["id"],
        "other/dev": _api_upload(client, site, "dev", 0.7, seed=3, benchmark="other")["id"],
    }
    login(client, "member@example.org", PASSWORD)
    response = client.get("/submissions" + query)
    assert response.status_code == 200
    assert set(_rows(response.get_data(as_text=True))) == {ids[key] for key in kept}


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("?benchmark=nope", "there is no benchmark 'nope'"),
        ("?benchmark=nlvr2&split=test-p", "there is no split 'test-p' of benchmark 'nlvr2'"),
        ("?split=%F0%9F%98%80", "there is no split '\U0001f600'"),
        ("?page=abc", "page must be a whole number"),
        ("?page=0", "page must be a whole number"),
        ("?page=-3", "page must be a whole number"),
        ("?page=99999999999999999999999", "past the last page"),
        ("?page=2", "page 2 is past the last page (1)"),
    ],
)
@pytest.mark.one_backend
def test_bad_filter_values_are_a_400_naming_them(client, site, query, says):
    """On SQLite alone: a bad value is refused before any query runs."""
    login(client, "member@example.org", PASSWORD)
    response = client.get("/submissions" + query)
    assert response.status_code == 400
    assert says in response.get_data(as_text=True).replace("&#39;", "'")


@pytest.mark.one_backend
def test_a_nul_byte_in_a_filter_is_refused_before_the_list(client, site):
    """On SQLite alone: the app's guard refuses it before any query runs."""
    login(client, "member@example.org", PASSWORD)
    assert client.get("/submissions?split=%00").status_code == 422  # the app's guard on every query string


def test_an_empty_filter_says_nothing_matches(client, site):
    _api_upload(client, site, "dev", 0.8, seed=1)
    login(client, "member@example.org", PASSWORD)
    assert "No submissions match this filter." in client.get("/submissions?benchmark=other").get_data(as_text=True)


def test_the_search_keeps_the_model_names_and_descriptions_that_hold_it_on_every_page(app, client, site):
    """?q= as in the API: model name or description, ignoring case; with the benchmark filter; kept by the pager;
    a LIKE wildcard is a plain character; another team's matching submission is never listed."""
    kept = {
        _api_upload(client, site, "dev", 0.8, seed=1, model_name="ResNet-50 baseline")["id"],
        _api_upload(client, site, "test-u", 0.8, seed=2, model_name="vit", description="a RESNET backbone")["id"],
        _api_upload(client, site, "dev", 0.7, seed=3, benchmark="other", model_name="resnet small")["id"],
    }
    dropped = _api_upload(client, site, "dev", 0.7, seed=4, model_name="bert 100%")["id"]
    with app.app_context():
        rival = accounts.get_user_by_email("other@example.org")
        intake.store_scored(  # the rivals' file, through the service
            catalog.get_split("nlvr2", "dev"),
            teams.find_team("Rivals"),
            synthetic.predictions("nlvr2", site["gold"]["dev"], 0.9, seed=5),
            model_name="resnet of the rivals",
            user=rival,
        )
    login(client, "member@example.org", PASSWORD)
    page = client.get("/submissions?q=resnet").get_data(as_text=True)
    assert set(_rows(page)) == kept
    assert 'value="resnet"' in page and "3 submissions" in page
    assert set(_rows(client.get("/submissions?q=resnet&benchmark=nlvr2").get_data(as_text=True))) == kept - {max(kept)}
    assert set(_rows(client.get("/submissions?q=%25").get_data(as_text=True))) == {dropped}
    assert "No submissions match this filter." in client.get("/submissions?q=nothing-like-it").get_data(as_text=True)
    long = client.get("/submissions?q=" + "x" * 201)
    assert long.status_code == 400 and "q must be at most 200 characters" in long.get_data(as_text=True)


def test_the_pager_keeps_the_search(app, client, site):
    _many(app, site, SUBMISSIONS_PER_PAGE + 20)  # "model 0" ... : every name holds "model"
    login(client, "member@example.org", PASSWORD)
    first = client.get("/submissions?q=model").get_data(as_text=True)
    assert 'rel="next" href="/submissions?q=model&amp;page=2"' in first
    assert len(_rows(client.get("/submissions?q=model&page=2").get_data(as_text=True))) == 20


# --- 10,000 submissions -----------------------------------------------------------------------------------


def _many(app, site, count: int) -> None:
    """`count` scored submissions of team Lab on nlvr2/dev, each with its accuracy, inserted in bulk."""
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        start = utcnow() - timedelta(days=1)
        db.session.execute(
            insert(Submission),
            [
                {
                    "split_id": split.id,
                    "team_id": site["team_id"],
                    "status": "scored",
                    "model_name": f"model {i}",
                    "description": "",
                    "anonymous": False,
                    "file_sha256": f"{i:064x}",
                    "file_size": 100,
                    "created_at": start + timedelta(seconds=i),
                }
                for i in range(count)
            ],
        )
        ids = db.session.scalars(db.select(Submission.id).order_by(Submission.id)).all()
        db.session.execute(
            insert(Score),
            [{"submission_id": i, "subset": "all", "metric": "accuracy", "value": 50 + i % 40} for i in ids],
        )
        db.session.commit()


def test_ten_thousand_submissions_page_by_page(app, client, site, database_backend):
    _many(app, site, 10_000)
    login(client, "member@example.org", PASSWORD)
    first = client.get("/submissions").get_data(as_text=True)
    rows = list(_rows(first))
    assert rows == list(range(10_000, 10_000 - SUBMISSIONS_PER_PAGE, -1))
    assert "10,000 submissions; page 1 of 200" in first
    assert 'rel="next" href="/submissions?page=2"' in first and 'rel="prev"' not in first

    statements: list[tuple[str, object]] = []
    with app.app_context():
        engine = db.engine
    listener = lambda conn, cursor, statement, parameters, context, many: statements.append((statement, parameters))  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        page = client.get("/submissions?page=137").get_data(as_text=True)
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert list(_rows(page)) == list(range(10_000 - 136 * 50, 10_000 - 137 * 50, -1))
    assert 'rel="prev" href="/submissions?page=136"' in page and 'rel="next" href="/submissions?page=138"' in page
    listing = [(sql, params) for sql, params in statements if "FROM submissions" in sql and "LIMIT" in sql.upper()]
    assert len(listing) == 1, statements
    # A fixed number of queries, whatever the page: the bounded work a deep page costs (no timed assertion).
    assert len(statements) <= 12, [sql for sql, _ in statements]
    if database_backend.name == "sqlite":
        sql, params = listing[0]
        with app.app_context(), db.engine.connect() as connection:
            plan = " ".join(str(row[-1]) for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
        # By a team index in id order, never sorted: ix_submissions_team_id_id, or ix_submissions_team_id, whose
        # entries are in rowid (= id) order too; which SQLite picks depends on the statistics it has.
        assert "USING INDEX ix_submissions_team_id" in plan and "TEMP B-TREE" not in plan, plan

    last = client.get("/submissions?page=200").get_data(as_text=True)
    assert list(_rows(last)) == list(range(50, 0, -1)) and 'rel="next"' not in last


# --- publishing ---------------------------------------------------------------------------------------------


def _count_builds(monkeypatch) -> list[int]:
    """The board versions computed from here on (board_snapshots._compute: every build, by a job or a reader)."""
    built: list[int] = []
    real = board_snapshots._compute

    def counted(split, version, until=None):
        built.append(version)
        return real(split, version, until)

    monkeypatch.setattr(board_snapshots, "_compute", counted)
    return built


def test_publishing_on_a_page_builds_no_board_and_the_page_then_says_the_row(app, client, site, monkeypatch):
    """The publish request only publishes; the page it leads to says where the entry is, from the board's last
    snapshot (in-process, that page is the board's first reader since the change: it builds the board)."""
    low = _api_upload(client, site, "dev", 0.6, seed=1, description="low")
    high = _api_upload(client, site, "dev", 0.9, seed=2, description="high")
    login(client, "member@example.org", PASSWORD)
    built = _count_builds(monkeypatch)
    post_form(client, f"/submissions/{high['id']}/publish", {}, form_page=f"/submissions/{high['id']}")
    answer = post_form(client, f"/submissions/{low['id']}/publish", {}, form_page=f"/submissions/{low['id']}")
    assert answer.status_code == 303 and built == []
    page = client.get(answer.headers["Location"]).get_data(as_text=True)
    assert '<p class="alert alert-info">Published.</p>' in page and len(built) == 1
    assert re.search(
        r'id="placement">Published: row 2 of 2 on the Dev board\. <a href="/leaderboards/nlvr2/dev">', page
    )


def test_publishing_on_a_hidden_split_says_it_is_held_until_the_reveal(app, client, site):
    entry = _api_upload(client, site, "test-u", 0.8, seed=1, description="d")
    response = client.post(f"/api/v1/submissions/{entry['id']}/publish", headers=bearer(site["token"]))
    assert response.status_code == 200, response.json
    placement = response.json["placement"]
    assert placement["held_until_reveal"] is True and placement["row"] is None
    assert placement["message"].startswith("Published: held until the reveal")
    login(client, "member@example.org", PASSWORD)
    page = client.get(f"/submissions/{entry['id']}").get_data(as_text=True)
    assert "Published: held until the reveal" in page
    with app.app_context():
        catalog.reveal_split("nlvr2", "test-u")
    again = client.get(f"/submissions/{entry['id']}").get_data(as_text=True)
    assert "Published: row 1 of 1 on the Test-U board." in again


def test_the_api_says_where_a_published_entry_is_from_the_last_snapshot(app, client, site, monkeypatch):
    """Publishing builds no board: the answer is the board's last snapshot, which holds a new entry only once the
    board is rebuilt (in-process, by its first reader after the rebuild window); publishing again then says the row."""
    app.config["BOARD_REBUILD_SECONDS"] = 60
    first = _api_upload(client, site, "dev", 0.9, seed=1, description="d")
    second = _api_upload(client, site, "dev", 0.6, seed=2, description="d")
    headers = bearer(site["token"])
    built = _count_builds(monkeypatch)
    client.post(f"/api/v1/submissions/{first['id']}/publish", headers=headers)
    body = client.post(f"/api/v1/submissions/{second['id']}/publish", headers=headers).json
    assert body["published"] is True and built == []
    assert (body["placement"]["row"], body["placement"]["message"]) == (
        None,
        "Published; the Dev board is being updated and shows the entry once it is rebuilt "
        "(at most once every 60 seconds).",
    )
    assert len(client.get("/api/v1/leaderboards/nlvr2/dev").json["entries"]) == 2 and len(built) == 1
    again = client.post(f"/api/v1/submissions/{second['id']}/publish", headers=headers).json
    assert again["placement"] == {
        "message": "Published: row 2 of 2 on the Dev board.",
        "row": 2,
        "rows": 2,
        "held_until_reveal": False,
        "hidden": False,
        "board_url": "/leaderboards/nlvr2/dev",
        "api_url": "/api/v1/leaderboards/nlvr2/dev",
    }
    assert len(built) == 1
    with app.app_context():
        assert visibility.on_public_board(db.session.get(Submission, second["id"]))
    # Within the window the board lists its last snapshot less what left it since: the row as it lists it.
    assert client.post(f"/api/v1/submissions/{first['id']}/unpublish", headers=headers).status_code == 200
    last = client.post(f"/api/v1/submissions/{second['id']}/publish", headers=headers).json["placement"]
    assert (last["message"], last["row"], last["rows"], len(built)) == (
        "Published: row 1 of 1 on the Dev board.",
        1,
        1,
        1,
    )


@pytest.mark.one_backend
def test_the_placement_is_documented(client, site):
    """On SQLite alone: the OpenAPI document does not depend on the database."""
    spec = client.get("/api/v1/openapi.json").json
    publish = spec["paths"]["/api/v1/submissions/{submission_id}/publish"]["post"]["responses"]["200"]
    assert publish["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/PublishedSubmission"}
    assert "row" in spec["components"]["schemas"]["Placement"]["required"]
