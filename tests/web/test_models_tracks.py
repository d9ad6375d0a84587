"""The models view of a track (issue 38): ?track=, ?where= and ?verified=1 read each split's board of the entries
kept, so the models are ranked among themselves (1..N'), with the tabs as on a board; its exports and the API
take the same parameters (a 400 naming an unknown track or field); the entry fields that are columns and the
verified badge in its rows and on the team page."""

from __future__ import annotations

import csv
import html
import io

import pytest

from app import synthetic
from app.services import catalog
from app.services.catalog import entry_fields, tracks
from app.services.catalog.entry_fields import FieldSpec
from app.services.intake import submissions
from tests.support.submission_world import build_submission_world

NOTE = "Reran the released weights"
# (model, accuracy, zero-shot, parameters): the best model overall is not zero-shot.
MODELS = (("Big", 0.95, False, 7_000_000_000), ("Shot-A", 0.8, True, 350_000_000), ("Shot-B", 0.6, True, 90_000_000))


@pytest.fixture
def world(app):
    """NLVR2 dev with three models of team Lab, their fields filled in, Shot-B verified; the zero-shot track."""
    with app.app_context():
        world = build_submission_world()
        entry_fields.add_field("nlvr2", FieldSpec("zero_shot", "Zero-shot", "yesno", filterable=True))
        entry_fields.add_field(
            "nlvr2", FieldSpec("parameters", "Parameters", "integer", unit="parameters", column=True, filterable=True)
        )
        ids = {}
        for seed, (name, accuracy, shot, parameters) in enumerate(MODELS):
            data = synthetic.predictions("nlvr2", world["gold"], accuracy, seed=seed)
            fields = {"zero_shot": shot, "parameters": parameters}
            stored = submissions.store_scored(
                catalog.get_split("nlvr2", "dev"), world["lab"], data, model_name=name, publish=True, fields=fields
            )
            ids[name] = stored.id
        submissions.verify(world["admin"], ids["Shot-B"], NOTE, "https://example.org/check")
        tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
        return ids


def _ranks(page: str) -> dict[str, str]:
    """Model name -> the rank its row shows."""
    rows = page.split("<tbody>")[1].split("</tbody>")[0].split('<tr class="entry">')[1:]
    return {
        row.split('class="name" title="')[1].split('"')[0]: row.split('<td class="rank">')[1].split("<")[0]
        for row in rows
    }


def test_the_models_view_of_a_track_ranks_its_models_among_themselves(client, world):
    everyone = client.get("/leaderboards/nlvr2/models").get_data(as_text=True)
    assert _ranks(everyone) == {"Big": "1", "Shot-A": "2", "Shot-B": "3"}
    page = client.get("/leaderboards/nlvr2/models?track=zero-shot").get_data(as_text=True)
    assert _ranks(page) == {"Shot-A": "1", "Shot-B": "2"}  # their own ranks, not 2 and 3 with Big hidden
    assert '<strong aria-current="page">Zero-shot</strong>' in page and "?track=verified" in page
    assert "only the models of entries with Zero-shot: yes: 2 models, ranked among themselves" in page
    downloads = page.split('class="exports"')[1].split("</p>")[0]
    assert "export.csv?track=zero-shot" in downloads
    ad_hoc = client.get("/leaderboards/nlvr2/models?where=parameters<=1e9&verified=1").get_data(as_text=True)
    assert _ranks(ad_hoc) == {"Shot-B": "1"}
    assert "where=parameters%3C%3D1000000000&amp;verified=1" in ad_hoc.split('class="exports"')[1].split("</p>")[0]


def test_an_unknown_track_or_field_is_a_400_naming_it(client, world):
    for url in (
        "/leaderboards/nlvr2/models?track=tiny",
        "/leaderboards/nlvr2/models/export.csv?track=tiny",
        "/api/v1/leaderboards/nlvr2/models?track=tiny",
    ):
        answer = client.get(url)
        assert answer.status_code == 400 and "unknown track 'tiny'" in html.unescape(answer.get_data(as_text=True))
    bad = client.get("/api/v1/leaderboards/nlvr2/models?where=size:1")
    assert bad.status_code == 400 and "unknown field 'size'" in bad.get_json()["error"]
    assert client.get("/leaderboards/nlvr2/models?verified=yes").status_code == 400


def test_fields_and_the_badge_in_the_models_view_its_exports_and_the_api(client, world):
    page = client.get("/leaderboards/nlvr2/models").get_data(as_text=True)
    assert '<th scope="col" class="entry-field num"' in page and ">Parameters</th>" in page
    rows = {row.split('class="name" title="')[1].split('"')[0]: row for row in page.split('<tr class="entry">')[1:]}
    assert '<td class="entry-field num" title="7,000,000,000 parameters">7B</td>' in rows["Big"]
    assert '<details class="verified">' in rows["Shot-B"] and NOTE in rows["Shot-B"]
    assert '<details class="verified">' not in rows["Big"]

    table = list(csv.DictReader(io.StringIO(client.get("/leaderboards/nlvr2/models/export.csv?track=zero-shot").text)))
    assert [(r["rank"], r["model"], r["verified"], r["field:zero_shot"]) for r in table] == [
        ("1", "Shot-A", "no", "true"),
        ("2", "Shot-B", "yes", "true"),
    ]
    assert table[1]["verified_note"] == NOTE
    document = client.get("/leaderboards/nlvr2/models/export.json?track=zero-shot").get_json()
    assert document["track"] == "zero-shot" and document["where"] == ["zero_shot:yes"]
    assert [f["key"] for f in document["fields"]] == ["zero_shot", "parameters"]
    assert "Zero-shot" in client.get("/leaderboards/nlvr2/models/export.md?track=zero-shot").text
    api = client.get("/api/v1/leaderboards/nlvr2/models?track=zero-shot").get_json()
    assert [(m["rank"], m["model"], m["fields"]["parameters"]) for m in api["models"]] == [
        (1, "Shot-A", 350_000_000),
        (2, "Shot-B", 90_000_000),
    ]
    assert api["models"][1]["verified"]["note"] == NOTE and api["models"][0]["verified"] is None
    assert api["track"] == "zero-shot" and [t["name"] for t in api["tracks"]] == ["zero-shot"]


def test_the_team_page_shows_the_fields_and_the_badge(client, world):
    page = client.get("/teams/lab").get_data(as_text=True)
    rows = {row.split("</a>")[0].rsplit(">", 1)[1]: row for row in page.split('<tr class="entry"')[1:]}
    # Beneath the model's name: a team page's tables have no room for more columns.
    assert '<span title="350,000,000 parameters">Parameters: 350M</span>' in rows["Shot-A"]
    assert '<details class="verified">' in rows["Shot-B"] and NOTE in rows["Shot-B"]
    assert "verified" not in rows["Big"]
