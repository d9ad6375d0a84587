"""Tracks (issue 38) read by a hostile user and a careful researcher: the sentences a track's board says
together agree with its ranks (a search inside a track), and what a track's answer depends on in its ETag."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import update

from app import synthetic
from app.db import db
from app.models import TrackSnapshot
from app.services import catalog
from app.services.catalog import entry_fields, tracks
from app.services.intake import submissions
from tests.service.test_tracks import _publish, _run_waiting, _workers, _zero_shot_field
from tests.support.blind_test_world import build_blind_test_world, submit
from tests.support.submission_world import build_submission_world
from tests.web.test_track_pages import BOARD, _api, _build

pytestmark = pytest.mark.postgres(reason="a selection reads the entries' JSON fields")


@pytest.fixture(scope="module")
def world(module_app):
    with module_app.app_context():
        return _build()


@pytest.fixture
def client(module_app):
    return module_app.test_client()


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.mark.one_backend
def test_a_search_inside_a_track_says_its_ranks_are_the_tracks(client, world):
    """?track=small&q=...: the rows found keep their ranks on the track's board (1..N' among its N' entries), and the
    search's sentence says so, not "those of the whole board" (which the rows contradict). (SQLite alone: the page's
    words and the cache key are the same code on every dialect.)"""
    track = {e["model_name"]: e["rank"] for e in _api(client, "track=small")["entries"]}
    whole = {e["model_name"]: e["rank"] for e in _api(client, "")["entries"]}
    found = next(name for name in track if track[name] != whole[name])  # a row whose two ranks differ
    page = client.get(f"{BOARD}?track=small&q={found}")
    assert page.status_code == 200
    said = _text(page.get_data(as_text=True))
    assert f"1 of 5 entries match “{found}”" in said
    assert "Ranks are those of the whole board" not in said
    assert "Ranks are those of the 5 entries selected, ranked among themselves" in said
    assert _api(client, f"track=small&q={found}")["entries"][0]["rank"] == track[found]
    # Without a track the sentence is as it was.
    assert "Ranks are those of the whole board" in _text(client.get(f"{BOARD}?q={found}").get_data(as_text=True))
    # The API's documentation of q says the same.
    document = client.get("/api/v1/openapi.json").get_json()
    operation = document["paths"]["/api/v1/leaderboards/{benchmark}/{split}"]["get"]
    said = next(p["description"] for p in operation["parameters"] if p["name"] == "q")
    assert "rank on the board asked for (a track's own" in said


@pytest.mark.one_backend
@pytest.mark.parametrize("cookie", [False, True])
def test_a_named_track_and_its_conditions_written_ad_hoc_are_two_pages(module_app, world, cookie):
    """?track=small and ?where=parameters<=1e9 keep the same entries (one board computed), but each page says what was
    asked for and its links keep it: the second one asked never gets the first one's table. (SQLite alone: the cache key
    is the same code on every dialect.)"""
    client = module_app.test_client()
    if cookie:
        client.set_cookie("seen", "1")  # a visitor with a session: the table is still made once per board
    named = client.get(f"{BOARD}?track=small&sort=all:accuracy&order=asc").get_data(as_text=True)
    adhoc = client.get(f"{BOARD}?where=parameters<%3D1e9&sort=all:accuracy&order=asc").get_data(as_text=True)
    assert "Track <strong>Small models</strong>" in named
    assert "Track <strong>Small models</strong>" not in adhoc
    assert "only entries with Parameters ≤ 1,000,000,000: 5 entries" in _text(adhoc)
    assert "track=small" not in adhoc.replace('href="?track=small"', "")  # its tab alone names the track
    assert "where=parameters&lt;%3D1000000000" in adhoc or "where=parameters%3C%3D1000000000" in adhoc


# --- ETags where workers build the boards -----------------------------------------------------------------------

TRACK_URLS = (
    "/api/v1/leaderboards/nlvr2/dev?track=zero-shot",
    "/api/v1/leaderboards/nlvr2/models?track=zero-shot",
    "/leaderboards/nlvr2/dev?track=zero-shot",
    "/leaderboards/nlvr2/models?track=zero-shot",
    "/leaderboards/nlvr2/models/export.csv?track=zero-shot",
    "/leaderboards/nlvr2/dev/export.csv?track=zero-shot",
)


def test_every_answer_of_a_named_track_changes_its_etag_when_the_job_has_built_its_board(app, monkeypatch):
    """A track's board page, its models view, their exports and their API answers read the track's stored board
    (served as updating while the board's job has not built it yet); each one's ETag changes when the job has
    built it, or a client holding the 'updating' answer would be told 304 and keep it."""
    with app.app_context():
        world = build_submission_world()
        _zero_shot_field("nlvr2")
        tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
        _workers(app, monkeypatch)
        _publish(world, 0.8, 1, zero_shot=True)
        _publish(world, 0.7, 2, zero_shot=False)
        _run_waiting()
    client = app.test_client(use_cookies=False)

    def tags() -> dict[str, str]:
        found = {}
        for url in TRACK_URLS:
            response = client.get(url, headers={"Accept-Encoding": "identity"})
            assert response.status_code == 200, (url, response.get_data(as_text=True)[:300])
            found[url] = response.headers["ETag"]
        return found

    built = tags()
    with app.app_context():  # the same board version, the track's board one behind: as before the job built it
        db.session.execute(update(TrackSnapshot).values(version=TrackSnapshot.version - 1))
        db.session.commit()
    before = tags()
    assert [url for url in TRACK_URLS if before[url] == built[url]] == []


# --- two entries compared on a held blind test --------------------------------------------------------------------


@pytest.mark.one_backend
def test_a_held_comparison_names_neither_entry_nor_team(app):
    """/compare of two entries on a blind test whose scores are held: the page says only that it is held, never the
    entries' models or teams, which nothing public shows before the reveal (their submission pages are 404, the held
    board counts them, the team page leaves them out). (SQLite alone: the page's words, not the dialect, are at
    stake.)"""
    with app.app_context():
        world = build_blind_test_world()
        catalog.set_policy("nlvr2", "test-u", feedback="ladder")
        ids = []
        for n, wrong in enumerate((set(range(0, 40)), set(range(25, 90)))):
            found = submit(world, wrong, split="test-u").submission
            submissions.publish(world["member"], found.id, description="A model.")
            found.model_name = f"Secret-{n}-model"
            db.session.commit()
            ids.append(found.id)
        a, b = ids
    client = app.test_client()
    assert client.get(f"/submissions/{a}").status_code in (302, 404)  # nothing public names it
    for url in (f"/compare?a={a}&b={b}", f"/compare?a={b}&b={a}", f"/api/v1/compare?a={a}&b={b}"):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.get_data(as_text=True)
        assert "Secret-" not in body and "Lab" not in body, url
    # A NUL byte in a query parameter is refused (422) before any service, as the API's document says.
    assert client.get(f"/api/v1/compare?a={a}%00&b={b}").status_code == 422
    operation = client.get("/api/v1/openapi.json").get_json()["paths"]["/api/v1/compare"]["get"]
    assert "422" in operation["responses"]
    page = client.get(f"/compare?a={a}&b={b}").get_data(as_text=True)
    assert "held until the maintainers reveal it" in page and f"#{a}" in page and f"#{b}" in page
    with app.app_context():  # after the reveal the board shows them: so does the comparison
        catalog.reveal_split("nlvr2", "test-u")
    page = client.get(f"/compare?a={a}&b={b}").get_data(as_text=True)
    assert "Secret-0-model" in page and "Secret-1-model" in page and "Lab" in page


# --- a track no entry can ever meet ---------------------------------------------------------------------------


@pytest.mark.one_backend
@pytest.mark.parametrize(
    "where",
    [
        ["zero_shot:yes", "zero_shot:no"],
        ["parameters>=1e9", "parameters<=1e8"],
        ["parameters>1000", "parameters<1001"],
        ["parameters:5000", "parameters<=4999"],
    ],
)
def test_a_track_whose_conditions_no_entry_can_meet_is_refused_naming_them(app, runner, where):
    """`flask tracks add` (and a bundle, through the same check) refuses conditions that contradict each other (the
    track would stay empty for good, its page saying "No entry ... yet"): exit 2 naming both; nothing is stored.
    Conditions that some value meets are taken, and an ad-hoc ?where= may still be empty. (SQLite alone: the check is
    done before anything is stored.)"""
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        entry_fields.add_field("nlvr2", entry_fields.checked_spec("zero_shot", "Zero-shot", "yesno", filterable=True))
        entry_fields.add_field(
            "nlvr2", entry_fields.checked_spec("parameters", "Parameters", "integer", filterable=True)
        )
    refused = runner.invoke(args=["tracks", "add", "nlvr2", "never", "--label", "Never", *_wheres(where)])
    assert refused.exit_code == 2, refused.output
    assert "where: no entry can meet both" in refused.output and "the track would be empty" in refused.output
    with app.app_context():
        assert tracks.list_tracks("nlvr2") == []
    taken = runner.invoke(
        args=["tracks", "add", "nlvr2", "some", "--label", "Some", *_wheres(["parameters>1000", "parameters<1002"])]
    )
    assert taken.exit_code == 0, taken.output


def _wheres(conditions: list[str]) -> list[str]:
    return [part for condition in conditions for part in ("--where", condition)]


# --- exports of a track, side by side with the whole board's ----------------------------------------------------


@pytest.mark.one_backend
def test_each_export_of_a_track_is_named_and_labelled_apart_from_the_whole_boards(client, world):
    """A researcher downloads the whole board and a track's board (LaTeX, for one paper): each file's name and each
    table's \\label differ, and the label is the file's name, so two tables never share a \\ref. (SQLite alone: names
    and labels are made from slugs, whatever the dialect.)"""
    seen: dict[str, str] = {}
    for base in (f"{BOARD}/export.tex", "/leaderboards/nlvr2/models/export.tex"):
        for query in (
            "",
            "?track=small",
            "?where=zero_shot:yes",
            "?verified=1",
            "?view=teams",
            "?view=teams&track=small",
        ):
            if "models" in base and "view" in query:
                continue
            response = client.get(base + query)
            assert response.status_code == 200, (base, query)
            filename = re.search(r'filename="([^"]+)\.tex"', response.headers["Content-Disposition"]).group(1)
            labels = set(re.findall(r"\\label\{tab:([^}]+)\}", response.get_data(as_text=True)))
            assert labels == {filename}, (base, query, labels)
            assert filename not in seen, (query, seen.get(filename))
            seen[filename] = query


# --- the models view of a track: the models it ranks -----------------------------------------------------------


@pytest.mark.one_backend
def test_the_models_view_of_a_track_counts_the_models_it_ranks(app):
    """A model of the track with no entry on the ranking split is listed but unranked: the sentence "N models, ranked
    among themselves" counts the ranked ones (the N its ranks and resolution are of) and says the rest. (SQLite alone:
    the page's count, not the dialect, is at stake.)"""
    with app.app_context():
        world = build_submission_world()
        _zero_shot_field("nlvr2")
        tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
        for n, zero_shot in enumerate((True, True, False)):
            _publish(world, 0.8 - 0.1 * n, n, zero_shot=zero_shot)  # on dev, the ranking split
        gold = synthetic.nlvr2_gold(120, split="test", seed=8)
        catalog.add_split("nlvr2", "test-p", gold, name="Test-P")
        data = synthetic.predictions("nlvr2", gold, 0.7, seed=9, split="test")
        submissions.store_scored(
            catalog.get_split("nlvr2", "test-p"), world["lab"], data, model_name="Elsewhere", description="d",
            publish=True, fields={"zero_shot": "yes"},
        )  # fmt: skip
    client = app.test_client()
    api = client.get("/api/v1/leaderboards/nlvr2/models?track=zero-shot").get_json()
    ranked = [m for m in api["models"] if m["rank"] is not None]
    assert len(api["models"]) == 3 and len(ranked) == 2 and api["ranked_by"] == "dev"
    said = _text(client.get("/leaderboards/nlvr2/models?track=zero-shot").get_data(as_text=True))
    assert "only the models of entries with Zero-shot: yes: 2 models, ranked among themselves" in said
    assert "1 more model, with no entry on dev, is listed unranked" in said
