"""Tracks (issue 38) through every view: ?track= and ?where= on the board page, the API and the CSV, JSON,
Markdown and LaTeX exports, with view=teams and view=final; a 400 naming the field (or the track) for every
condition a board cannot be filtered by; the ways a number is written; hostile queries; ETags per track; and a
held board that a track tells nothing more of."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from sqlalchemy import update

from app import synthetic
from app.db import db
from app.lru import LRU
from app.models import Split, Team, utcnow
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.catalog import entry_fields, tracks
from app.services.intake import submissions

pytestmark = pytest.mark.postgres(
    reason="a selection reads the entries' JSON fields, and its 400s must not abort a PostgreSQL transaction"
)

# (model, team, accuracy, fields): the entries of nlvr2 dev, in upload order.
ENTRIES = (
    ("Alpha", 0, 0.90, {"zero_shot": "yes", "parameters": 7_000_000_000, "approach": "zero-shot", "size": "1B-10B"}),
    ("Bravo", 1, 0.85, {"zero_shot": "no", "parameters": 350_000_000, "approach": "fine-tuned", "size": "<1B"}),
    ("Charlie", 0, 0.80, {"zero_shot": "yes", "parameters": 1_000_000_000, "notes": "tiny"}),
    ("Delta", 1, 0.75, {"zero_shot": "yes"}),  # no parameters: never in a condition on them
    ("Echo", 2, 0.70, {"zero_shot": "no", "parameters": 120_000_000}),
    ("Foxtrot", 2, 0.66, {"zero_shot": "yes", "parameters": 2_000_000_000, "approach": "zero-shot"}),
    ("Golf", 1, 0.62, {"parameters": 500_000_000}),  # no zero_shot
    ("Hotel", 0, 0.58, {"zero_shot": "yes", "parameters": 800_000_000, "size": "<1B"}),
)
ZERO_SHOT = ["Alpha", "Charlie", "Delta", "Foxtrot", "Hotel"]
SMALL = ["Bravo", "Charlie", "Echo", "Golf", "Hotel"]  # parameters <= 1e9
HIDDEN_MODEL = "SecretModel"
BOARD = "/leaderboards/nlvr2/dev"
API = "/api/v1/leaderboards/nlvr2/dev"
EXPORTS = ("csv", "json", "md", "tex")


def _fields() -> None:
    for spec in (
        entry_fields.checked_spec("zero_shot", "Zero-shot", "yesno", filterable=True),
        entry_fields.checked_spec(
            "parameters", "Parameters", "integer", unit="parameters", column=True, filterable=True
        ),
        entry_fields.checked_spec("approach", "Approach", "choice", ("fine-tuned", "zero-shot"), filterable=True),
        entry_fields.checked_spec("notes", "Notes", "text"),
        # Choices that start as a comparison does: `size:<1B` is the choice, not "less than".
        entry_fields.checked_spec("size", "Size", "choice", ("<1B", "1B-10B", ">=10B"), filterable=True),
    ):
        entry_fields.add_field("nlvr2", spec)


def _build() -> dict[str, int]:
    """NLVR2 with a public dev split (closed: it has a final board) and a hidden test-u, four fields and the
    tracks zero-shot and small. -> {model name: submission id}."""
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    gold = synthetic.nlvr2_gold(200, seed=4)
    hidden_gold = synthetic.nlvr2_gold(200, split="test", seed=5)
    catalog.add_split("nlvr2", "dev", gold, name="Dev")
    catalog.add_split("nlvr2", "test-u", hidden_gold, name="Test-U", hidden=True)
    _fields()
    tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
    tracks.add_track("nlvr2", "small", "Small models", ["parameters<=1e9"])
    teams = [Team(name=f"Team {i}") for i in range(3)]
    db.session.add_all(teams)
    db.session.commit()
    dev, hidden = catalog.get_split("nlvr2", "dev"), catalog.get_split("nlvr2", "test-u")
    ids = {}
    for n, (model, team, accuracy, fields) in enumerate(ENTRIES):
        data = synthetic.predictions("nlvr2", gold, accuracy, seed=30 + n)
        ids[model] = submissions.store_scored(
            dev, teams[team], data, model_name=model, description="d", publish=True, fields=fields
        ).id
    secret = synthetic.predictions("nlvr2", hidden_gold, 0.8, seed=99, split="test")
    submissions.store_scored(
        hidden, teams[0], secret, model_name=HIDDEN_MODEL, publish=True, fields={"zero_shot": "yes"}
    )
    db.session.execute(
        update(Split).where(Split.id == dev.id).values(closes_at=utcnow(), board_version=Split.board_version + 1)
    )
    db.session.commit()
    return ids


@pytest.fixture(scope="module")
def world(module_app):
    with module_app.app_context():
        return _build()


@pytest.fixture
def client(module_app):
    return module_app.test_client()


def _api(client, query: str) -> dict:
    response = client.get(f"{API}?limit=1000&{query}")
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def _models(client, query: str) -> list[str]:
    return [e["model_name"] for e in _api(client, query)["entries"]]


def _in_order(client, names) -> list[str]:
    """The names in the whole board's order (scores, not upload order, decide it)."""
    return [name for name in _models(client, "") if name in set(names)]


def _page_ids(text: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr class="entry" data-submission-id="(\d+)"', text)]


def _rank_rows(rows: list[dict]) -> list[tuple[int, int, int]]:
    return [(int(r["rank"]), int(r["rank_low"]), int(r["rank_high"])) for r in rows]


def _agrees(rows: list[dict]) -> None:
    k = len(rows)
    lows = [r["rank_low"] for r in rows]
    highs = [r["rank_high"] for r in rows]
    assert all(1 <= low <= high <= k for low, high in zip(lows, highs, strict=True))
    assert sum(low - 1 for low in lows) == sum(k - high for high in highs)


@pytest.mark.parametrize("view", ["", "view=teams", "view=final"])
def test_a_track_is_a_board_of_its_own_on_every_view(client, world, view):
    """The API, the page and every export of ?track=zero-shot show the zero-shot entries alone, ranked among
    themselves (1..N', the row-agreement sum holds), and agree row for row."""
    whole = _api(client, view)
    answer = _api(client, f"{view}&track=zero-shot")
    rows = answer["entries"]
    shown = [r["model_name"] for r in rows]
    if view == "view=teams":  # each team's best zero-shot entry
        assert sorted(shown) == ["Alpha", "Delta", "Foxtrot"]
    else:
        assert shown == _in_order(client, ZERO_SHOT)
    assert answer["track"] == "zero-shot" and answer["where"] == ["zero_shot:yes"]
    assert answer["selection"] == "entries with Zero-shot: yes"
    assert [t["name"] for t in answer["tracks"]] == ["zero-shot", "small"]
    assert whole["track"] is None and whole["where"] == [] and whole["selection"] is None
    assert len(whole["entries"]) == (3 if view == "view=teams" else len(ENTRIES))
    _agrees(rows)

    page = client.get(f"{BOARD}?{view}&track=zero-shot")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert _page_ids(text) == [r["submission_id"] for r in rows]
    assert "ranked among themselves" in text and "Zero-shot: yes" in text
    assert '<strong aria-current="page">Zero-shot</strong>' in text

    suffix = ("-" + view.split("=")[1] if view else "") + "-zero-shot"
    exported = client.get(f"{BOARD}/export.json?{view}&track=zero-shot")
    assert exported.status_code == 200
    assert f"nlvr2-dev{suffix}.json" in exported.headers["Content-Disposition"]
    document = json.loads(exported.get_data(as_text=True))
    assert document["track"] == "zero-shot" and document["where"] == ["zero_shot:yes"]
    assert _rank_rows(document["entries"]) == _rank_rows(rows)
    table = client.get(f"{BOARD}/export.csv?{view}&track=zero-shot").get_data(as_text=True)
    lines = [line for line in table.splitlines() if not line.startswith("#")]
    csv_rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    assert [r["model"] for r in csv_rows] == shown
    assert _rank_rows(csv_rows) == _rank_rows(rows)
    for fmt in ("md", "tex"):
        written = client.get(f"{BOARD}/export.{fmt}?{view}&track=zero-shot").get_data(as_text=True)
        assert "ranked among themselves" in written, fmt
        if fmt == "md":  # the selection is a sentence of its own, and the next one starts with a capital
            assert "Only entries with Zero-shot: yes, ranked among themselves. Scores in %" in written, written[:300]
        assert all(name in written for name in shown), fmt
        assert not any(name in written for name in {"Bravo", "Echo", "Golf"}), fmt


def test_numbers_written_every_way_keep_the_same_entries_and_a_missing_value_is_never_in(client, world):
    small = _in_order(client, SMALL)
    assert _models(client, "track=small") == small
    for where in ("parameters<=1e9", "parameters:<=1e9", "parameters<=1_000_000_000", "parameters<=1,000,000,000"):
        answer = _api(client, f"where={where}")
        assert [e["model_name"] for e in answer["entries"]] == small, where
        assert answer["where"] == ["parameters<=1000000000"] and answer["track"] is None
    assert _models(client, "where=parameters<1e9") == _in_order(client, ["Bravo", "Echo", "Golf", "Hotel"])
    said_parameters = [model for model, _, _, fields in ENTRIES if "parameters" in fields]
    assert _models(client, "where=parameters>=0") == _in_order(client, said_parameters)
    assert _models(client, "where=zero_shot:no") == _in_order(client, ["Bravo", "Echo"])  # Golf said nothing
    assert _models(client, "where=approach:zero-shot") == _in_order(client, ["Alpha", "Foxtrot"])
    # A track narrowed further is a selection of its own, its entries meeting every condition.
    both = _api(client, "track=zero-shot&where=parameters<=1e9")
    assert [e["model_name"] for e in both["entries"]] == _in_order(client, ["Charlie", "Hotel"])
    assert both["track"] is None and both["where"] == ["zero_shot:yes", "parameters<=1000000000"]
    assert _models(client, "where=parameters>1e18") == []
    for where in ("parameters:1e9", "parameters=1_000_000_000", "parameters:%201000000000%20"):
        assert _models(client, f"where={where}") == ["Charlie"], where
    assert _models(client, "where=zero_shot=yes") == _in_order(client, ZERO_SHOT)
    # A choice that starts with a comparison's sign is that choice, asked for and written back as it is.
    small = _api(client, "where=size:<1B")
    assert [e["model_name"] for e in small["entries"]] == _in_order(client, ["Bravo", "Hotel"])
    assert small["where"] == ["size:<1B"]
    assert _models(client, "where=size:>=10B") == []
    page = client.get(f"{BOARD}?where=size%3A%3C1B").get_data(as_text=True)
    link = re.search(r'href="(/leaderboards/nlvr2/dev/export\.json\?where=[^"]+)"', page)
    assert link is not None  # the links that keep the selection ask for it again
    exported = json.loads(client.get(html.unescape(link.group(1))).get_data(as_text=True))
    assert [e["model"] for e in exported["entries"]] == [e["model_name"] for e in small["entries"]]
    assert _models(client, "where=") == _models(client, "")  # an empty condition is no condition


def test_the_same_conditions_in_another_order_are_one_board_computed_once(module_app, client, world, monkeypatch):
    calls = []
    real = board_snapshots._compute

    def counted(*args, **kwargs):
        if kwargs.get("selection") is not None:  # not the whole board, which _in_order reads
            calls.append(kwargs["selection"])
        return real(*args, **kwargs)

    monkeypatch.setattr(board_snapshots, "_compute", counted)
    board_snapshots._selected_memo.clear()  # whatever the module's other tests asked for before
    first = _api(client, "where=zero_shot:yes&where=parameters>=5e8")
    again = _api(client, "where=parameters>=500000000&where=zero_shot:yes")
    assert [e["model_name"] for e in first["entries"]] == _in_order(client, ["Alpha", "Charlie", "Foxtrot", "Hotel"])
    assert first["entries"] == again["entries"] and first["resolution"] == again["resolution"]
    assert len(calls) == 1
    # Conditions written apart that keep the same entries are one board too: a visitor trying value after value
    # makes no more boards computed than there are sets of entries to keep.
    boards = [_api(client, f"where=parameters<={value}")["entries"] for value in (900_000_000, 900_000_001, "95e7")]
    boards += [_api(client, f"where=parameters<{value}")["entries"] for value in range(800_000_001, 800_000_041)]
    assert len(calls) == 2
    assert all(board == boards[0] for board in boards)
    assert [e["model_name"] for e in boards[0]] == _in_order(client, ["Bravo", "Echo", "Golf", "Hotel"])


def test_past_its_budget_a_server_asks_for_a_retry_rather_than_compute_one_more_filtered_board(
    client, world, monkeypatch
):
    """Each set of entries a `where` keeps is a board computed inside a request; conditions cost nothing to vary, so
    a server computes at most READER_BUILDS_PER_MINUTE of them a minute (here 2) and then answers 429 with
    Retry-After. Boards already computed and named tracks are served as ever."""
    monkeypatch.setattr(board_snapshots, "READER_BUILDS_PER_MINUTE", 2)
    monkeypatch.setattr(board_snapshots, "_budgets", LRU(4))
    board_snapshots._selected_memo.clear()
    assert client.get(f"{API}?where=parameters<=1e9").status_code == 200
    assert client.get(f"{BOARD}?where=parameters<=5e8").status_code == 200
    for url in (f"{API}?where=parameters<=2e8", f"{BOARD}?where=parameters<=2e8", f"{BOARD}/export.csv?where=size:<1B"):
        refused = client.get(url)
        assert refused.status_code == 429, (url, refused.status_code)
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert "named tracks" in refused.get_data(as_text=True)
    assert client.get(f"{API}?where=parameters<=1000000000").status_code == 200  # computed already
    assert client.get(f"{BOARD}?track=small").status_code == 200  # a named track: built by the board's job


REFUSED = (
    ("where=sizes:1", "sizes", "unknown field 'sizes'"),
    ("where=size<1B", "size", "compared only with field:value"),
    ("where=size:<2B", "size", "compared only with field:value"),
    ("where=notes:tiny", "notes", "not one a board filters by"),
    ("where=zero_shot:maybe", "zero_shot", "zero_shot"),
    ("where=parameters:many", "parameters", "whole number"),
    ("where=zero_shot<=1", "zero_shot", "compared only with field:value"),
    ("where=approach:distilled", "approach", "approach"),
    ("where=parameters<=1e400", "parameters", "whole number"),
    ("where=parameters<=-5", "parameters", "whole number"),
    ("where=zero_shot", "where", "is not a condition"),
    ("track=large", "track", "unknown track 'large'"),
    ("track=zero-shot/../small", "track", "unknown track"),
    ("track=a%2Fb", "track", "unknown track 'a/b'"),
    ("&".join("where=zero_shot:yes" for _ in range(9)), "where", "at most 8 conditions"),
    ("where=parameters<=" + "9" * 10_000, "where", "at most 200 characters"),
    ("&".join("where=zero_shot:yes" for _ in range(1000)), "where", "at most 8 conditions"),
    # Look-alikes: a Cyrillic о in the key, a Cyrillic е in the value, full-width digits.
    ("where=zero_sh\u043et:yes", "where", "is not a condition"),
    ("where=zero_shot:y\u0435s", "zero_shot", "zero_shot"),
    ("where=parameters<=\uff11\uff10", "parameters", "whole number"),
    ("track=zero%E2%80%90shot", "track", "unknown track"),  # a Unicode hyphen
    ("track=zero-shot%E2%80%AE", "track", "\\u202e"),  # an invisible override, written out, never echoed as is
)


@pytest.mark.parametrize(("query", "field", "words"), REFUSED, ids=[q[:40] for q, _, _ in REFUSED])
def test_a_board_that_cannot_be_filtered_so_is_a_400_naming_the_field_on_every_view(client, world, query, field, words):
    api = client.get(f"{API}?{query}")
    assert api.status_code == 400, api.get_data(as_text=True)[:300]
    said = api.get_json()["error"]
    assert words in said and len(said) < 600
    assert field in said  # the message names the field (or the track) at fault
    for url in (f"{BOARD}?{query}", f"{BOARD}?view=teams&{query}", f"{BOARD}?view=final&{query}"):
        page = client.get(url)
        assert page.status_code == 400, url[:80]
        assert words.replace("'", "&#39;") in page.get_data(as_text=True), url[:80]
    for fmt in EXPORTS:
        assert client.get(f"{BOARD}/export.{fmt}?{query}").status_code == 400, fmt


def test_a_held_board_tells_nothing_more_with_a_track_or_a_condition(client, world):
    """An anonymous visitor on a hidden split before its reveal: the same held page and answer with or without
    ?track= or ?where= (no entry, no count beyond what the policy releases)."""
    base_page = client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    base_api = client.get("/api/v1/leaderboards/nlvr2/test-u").get_json()
    assert HIDDEN_MODEL not in base_page
    for query in ("track=zero-shot", "where=zero_shot:yes", "where=zero_shot:no", "track=verified"):
        page = client.get(f"/leaderboards/nlvr2/test-u?{query}")
        assert page.status_code == 200
        assert HIDDEN_MODEL not in page.get_data(as_text=True)
        answer = client.get(f"/api/v1/leaderboards/nlvr2/test-u?{query}").get_json()
        assert answer["entries"] == base_api["entries"] == []
        for key in set(base_api) - {"track", "where", "selection", "verified_only"}:
            assert answer[key] == base_api[key], (query, key)
        for fmt in EXPORTS:
            exported = client.get(f"/leaderboards/nlvr2/test-u/export.{fmt}?{query}")
            assert exported.status_code in (200, 404), (query, fmt)
            assert HIDDEN_MODEL not in exported.get_data(as_text=True)


def test_each_track_has_its_own_etag(client, world):
    tags = {}
    for query in ("", "?track=zero-shot", "?track=small", "?where=zero_shot:yes"):
        response = client.get(f"{BOARD}{query}", headers={"Accept-Encoding": "identity"})
        assert response.status_code == 200
        tags[query] = response.headers["ETag"]
    assert len(set(tags.values())) == len(tags)


def test_a_tracks_definition_change_gives_its_board_a_new_etag(app):
    """tracks.store bumps every board version of the benchmark: the page of the changed track is new."""
    with app.app_context():
        _build()
    client = app.test_client(use_cookies=False)
    url = f"{BOARD}?track=small"
    first = client.get(url, headers={"Accept-Encoding": "identity"})
    tag = first.headers["ETag"]
    assert client.get(url, headers={"Accept-Encoding": "identity", "If-None-Match": tag}).status_code == 304
    with app.app_context():
        benchmark = catalog.get_benchmark("nlvr2")
        spec = tracks.checked_track(benchmark, "small", "Small models", ["parameters<=5e8"])
        tracks.store(benchmark, spec, actor=None, via="test")
        db.session.commit()
    changed = client.get(url, headers={"Accept-Encoding": "identity", "If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["ETag"] != tag
    answer = client.get(f"{API}?track=small").get_json()
    assert sorted(e["model_name"] for e in answer["entries"]) == ["Bravo", "Echo", "Golf"]
    assert answer["where"] == ["parameters<=500000000"]


@pytest.mark.parametrize("query", ["where=%3Cscript%3Ex%3C/script%3E:yes", "track=%3Cscript%3Ex%3C/script%3E"])
def test_a_refused_selection_is_echoed_as_text_never_as_markup(client, world, query):
    page = client.get(f"{BOARD}?{query}")
    assert page.status_code == 400
    text = page.get_data(as_text=True)
    assert "<script>x" not in text and "&lt;script&gt;x" in text
