"""Reference rows with their date and in their place (issue 24): `references add --date` and the console's
form store the day the figures were published (a bad date is refused naming the date); the row stands where
its primary score falls, unranked and dated, on the board, its teams view, the models view, every export and
the API."""

from __future__ import annotations

import csv
import io
import json
import re
import zlib
from datetime import date, timedelta

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import AuditEvent, Reference, utcnow
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.catalog import references
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.support.browser import login, post_form
from tests.support.splits import nlvr2_split

HUMAN = '{"all": {"accuracy": 75.0, "consistency": 40.0}}'
ROW = re.compile(r'<tr class="(entry|reference)"[^>]*>\s*<td class="rank"[^>]*>([^<]*)')


def _add(runner, *args):
    return runner.invoke(args=["references", "add", "nlvr2", "dev", "--name", "Human", "--scores", HUMAN, *args])


def test_the_date_is_stored_and_listed(app, runner, tmp_path):
    nlvr2_split(runner, tmp_path)
    result = _add(runner, "--date", "2019-07-28")
    assert result.exit_code == 0, result.output
    assert "dated 2019-07-28" in result.output
    with app.app_context():
        [row] = db.session.scalars(select(Reference)).all()
        assert row.published_on == date(2019, 7, 28)
        event = db.session.scalars(select(AuditEvent).where(AuditEvent.action == "reference.add")).one()
        assert json.loads(event.details)["date"] == "2019-07-28"
    listed = runner.invoke(args=["references", "list", "nlvr2", "dev"])
    assert listed.exit_code == 0 and listed.output.rstrip().endswith("2019-07-28")
    # Without --date the row has none (not the day it was added).
    assert _add(runner).exit_code == 0
    with app.app_context():
        assert [r.published_on for r in references.list_references("nlvr2", "dev")] == [date(2019, 7, 28), None]


@pytest.mark.parametrize(
    "value, message",
    [
        ("2019-13-01", "YYYY-MM-DD"),
        ("2019-02-30", "YYYY-MM-DD"),
        ("28/07/2019", "YYYY-MM-DD"),
        ("20190728", "YYYY-MM-DD"),
        ("2019-7-28", "YYYY-MM-DD"),
        ("1899-12-31", "between 1900-01-01 and today"),
        ("tomorrow", "YYYY-MM-DD"),
    ],
)
def test_a_bad_date_exits_2_naming_the_option(app, runner, tmp_path, value, message):
    nlvr2_split(runner, tmp_path)
    result = _add(runner, "--date", value)
    assert result.exit_code == 2, result.output
    assert "'--date'" in result.output and message in result.output and "Traceback" not in result.output
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


def test_a_future_date_is_refused(app, runner, tmp_path):
    nlvr2_split(runner, tmp_path)
    result = _add(runner, "--date", (utcnow().date() + timedelta(days=2)).isoformat())
    assert result.exit_code == 2 and "'--date'" in result.output and "and today" in result.output


@pytest.fixture
def board(app):
    """Dev and Test-P, six entries of two teams around a reference row at 75% (dated) on both splits, and a
    second, undated one at 50% on Dev."""
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        golds = {}
        for slug, seed in (("dev", 1), ("test-p", 2)):
            golds[slug] = synthetic.nlvr2_gold(800, split="dev" if slug == "dev" else "test", seed=seed)
            catalog.add_split("nlvr2", slug, golds[slug], name=slug.title())
        lab, other = teams.create_team("Lab"), teams.create_team("Other")
        for index, (team, accuracy) in enumerate(
            [(lab, 0.92), (other, 0.87), (lab, 0.82), (other, 0.68), (lab, 0.63), (other, 0.58)]
        ):
            for slug in ("dev", "test-p"):
                submissions.store_scored(
                    catalog.get_split("nlvr2", slug),
                    team,
                    synthetic.predictions("nlvr2", golds[slug], accuracy, seed=10 + index, split=slug),
                    model_name=f"model {index}",
                    description="d",
                    publish=True,
                )
        references.add_reference("nlvr2", "dev", "Chance", '{"all": {"accuracy": 50.0}}')
        for slug in ("dev", "test-p"):
            references.add_reference(
                "nlvr2", slug, "Human", HUMAN, "https://example.org/human", published_on="2019-07-28"
            )


def test_a_reference_stands_at_its_place_everywhere(client, board):
    """Three entries score above 75 (and two teams' best); the reference row is fourth (third per team),
    unranked, dated; Chance (50, undated) is last."""
    expected = ["entry"] * 3 + ["Human"] + ["entry"] * 3 + ["Chance"]
    per_team = ["entry"] * 2 + ["Human"] + ["Chance"]
    # The board, its teams view and the models view: the row in place, a dash for a rank, its date.
    for path, order in (
        ("/leaderboards/nlvr2/dev", expected),
        ("/leaderboards/nlvr2/dev?view=teams", per_team),
    ):
        page = client.get(path).get_data(as_text=True)
        found = ROW.findall(page)
        assert [kind for kind, _ in found] == ["reference" if o in ("Human", "Chance") else "entry" for o in order]
        assert [rank for kind, rank in found if kind == "reference"] == ["–", "–"]
        assert '<time datetime="2019-07-28" title="Published">2019-07-28</time>' in page
    models = client.get("/leaderboards/nlvr2/models").get_data(as_text=True)
    assert [kind for kind, _ in ROW.findall(models)] == ["entry"] * 3 + ["reference"] + ["entry"] * 3 + ["reference"]
    assert '<span class="name" title="Human">Human</span> <span class="tag">reference</span>' in models
    assert "2019-07-28" in models
    # CSV: blank rank, the date, the type.
    rows = list(csv.DictReader(io.StringIO(client.get("/leaderboards/nlvr2/dev/export.csv").get_data(as_text=True))))
    assert [r["model"] if r["type"] == "reference" else "entry" for r in rows] == expected
    human = rows[3]
    assert human["rank"] == "" and human["date"] == "2019-07-28" and human["all:accuracy"] == "75.0"
    assert rows[-1]["date"] == ""  # Chance was given no date
    # JSON and the API: place, date, no rank.
    for body in (
        client.get("/leaderboards/nlvr2/dev/export.json").get_json(),
        client.get("/api/v1/leaderboards/nlvr2/dev").get_json(),
    ):
        [first, second] = body["references"]
        assert (first["name"], first["place"], first["rank"], first["date"]) == ("Human", 4, None, "2019-07-28")
        assert (second["name"], second["place"], second["date"]) == ("Chance", 8, None)
    teams_api = client.get("/api/v1/leaderboards/nlvr2/dev?view=teams").get_json()
    assert [r["place"] for r in teams_api["references"]] == [3, 4]
    models_api = client.get("/api/v1/leaderboards/nlvr2/models").get_json()
    [human_model, chance_model] = models_api["references"]
    assert human_model["place"] == 4 and human_model["date"] == "2019-07-28" and human_model["rank"] is None
    assert human_model["cells"]["dev/all:accuracy"] == {"value": 75.0, "text": "75.0"}
    assert human_model["cells"]["test-p/all:accuracy"] == {"value": 75.0, "text": "75.0"}  # one row for its two splits
    assert chance_model["place"] == 8 and "test-p/all:accuracy" not in chance_model["cells"]
    # Markdown and LaTeX, by line order.
    markdown = client.get("/leaderboards/nlvr2/dev/export.md").get_data(as_text=True).splitlines()
    table = [line for line in markdown if line.startswith("| ") and not line.startswith("| Rank")]
    assert [("Human" if "*Human*" in r else "Chance" if "*Chance*" in r else "entry") for r in table] == expected
    assert any(line.startswith("| – | *Human* (reference) |  | 2019-07-28 | 75.0 | 40.0 |") for line in table)
    latex = client.get("/leaderboards/nlvr2/dev/export.tex").get_data(as_text=True).splitlines()
    firsts = [line for line in latex if re.match(r"^(\d+( \(\d+(--\d+)?\))?)? & (\\textit\{)?\\mbox", line)]
    assert [("Human" if "Human" in r else "Chance" if "Chance" in r else "entry") for r in firsts] == expected
    human_line = latex.index(next(line for line in latex if "Human" in line))
    assert latex[human_line].startswith(" & ") and "reference, \\mbox{2019-07-28}" in latex[human_line + 1]
    models_csv = client.get("/leaderboards/nlvr2/models/export.csv").get_data(as_text=True)
    assert [r["type"] for r in csv.DictReader(io.StringIO(models_csv))] == (
        ["entry"] * 3 + ["reference"] + ["entry"] * 3 + ["reference"]
    )


def test_a_snapshot_stored_before_references_had_dates_still_reads(app, board):
    """A board payload stored by the previous version (reference rows of five fields) is read as it is."""
    with app.app_context():
        split = catalog.get_split("nlvr2", "dev")
        snapshot = board_snapshots.snapshot(split)
        payload = board_snapshots._encode(snapshot)
        body = json.loads(zlib.decompress(payload))
        body["references"] = [values[:5] for values in body["references"]]
        old = board_snapshots._decode(snapshot.version, zlib.compress(json.dumps(body).encode()))
        assert old is not None
        assert [r.name for r in old.references] == ["Chance", "Human"]
        assert [r.published_on for r in old.references] == [None, None]
        again = board_snapshots._decode(snapshot.version, payload)
        assert again is not None and [r.published_on for r in again.references] == [None, date(2019, 7, 28)]


def test_the_console_form_adds_a_dated_reference_and_names_a_bad_date(app, client, board):
    with app.app_context():
        accounts.create_user("admin@example.org", "password123", admin=True)
    assert login(client, "admin@example.org", "password123").status_code == 302
    path = "/console/splits/nlvr2/test-p/references"
    fields = {"name": "Majority class", "scores": '{"all": {"accuracy": 51.1}}', "source": ""}
    refused = post_form(client, path, {**fields, "date": "2019-02-30"}, form_page="/console/splits/nlvr2/test-p")
    assert refused.status_code == 422
    page = refused.get_data(as_text=True)
    # Beside the field, and the form keeps what was typed.
    assert re.search(r'id="reference-date-error">date must be the day the figures were published', page)
    assert 'value="Majority class"' in page
    with app.app_context():
        assert [r.name for r in references.list_references("nlvr2", "test-p")] == ["Human"]
    done = post_form(client, path, {**fields, "date": "2019-07-28"}, form_page="/console/splits/nlvr2/test-p")
    assert done.status_code == 303, done.get_data(as_text=True)[:2000]
    with app.app_context():
        rows = references.list_references("nlvr2", "test-p")
        assert [(r.name, r.published_on) for r in rows] == [
            ("Human", date(2019, 7, 28)),
            ("Majority class", date(2019, 7, 28)),
        ]
        event = db.session.scalars(select(AuditEvent).where(AuditEvent.action == "reference.add")).all()[-1]
        assert event.actor_id is not None and json.loads(event.details)["via"] == "web"
        majority = rows[1].id
    split_page = client.get("/console/splits/nlvr2/test-p").get_data(as_text=True)
    assert "Majority class" in split_page and 'datetime="2019-07-28"' in split_page
    removed = post_form(client, f"{path}/{majority}/remove", form_page="/console/splits/nlvr2/test-p")
    assert removed.status_code == 303
    with app.app_context():
        assert [r.name for r in references.list_references("nlvr2", "test-p")] == ["Human"]
