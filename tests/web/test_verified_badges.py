"""A verified entry's badge (issue 38) where the entry is shown: the board row (the note on hover and tap), the
submission page, the API (board entries and the submission) and every export; and the verified-only board's
page, ranked among its own entries."""

from __future__ import annotations

import csv
import io
import json

import pytest

from app import synthetic
from app.services.intake import submissions
from tests.support.submission_world import build_submission_world
from tests.support.users import make_token

NOTE = "Reran the released code & weights"
URL = "https://example.org/check"


@pytest.fixture
def board(app):
    """NLVR2 dev with three published entries, the second verified."""
    with app.app_context():
        world = build_submission_world()
        ids = []
        for seed, (accuracy, name) in enumerate(((0.95, "Top"), (0.85, "Checked"), (0.6, "Plain"))):
            data = synthetic.predictions("nlvr2", world["gold"], accuracy, seed=seed)
            sub = submissions.submit(
                world["member"], None, "nlvr2", "dev", submissions.Upload(data=data, model_name=name)
            ).submission
            submissions.publish(world["member"], sub.id, description=f"{name} model")
            ids.append(sub.id)
        submissions.verify(world["admin"], ids[1], NOTE, URL)
        return {"ids": ids, "token": make_token(world["member"])}


def test_the_badge_on_the_board_and_the_submission_page(client, board):
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    row = page.split(f'data-submission-id="{board["ids"][1]}"')[1].split("</tr>")[0]
    assert (
        '<details class="verified"><summary title="Verified by the maintainers: Reran the released code &amp; ' in row
    )
    assert f'{NOTE.replace("&", "&amp;")} <a href="{URL}"' in row
    other = page.split(f'data-submission-id="{board["ids"][2]}"')[1].split("</tr>")[0]
    assert "verified" not in other
    assert "?track=verified" in page  # the verified-only board is one link away

    shown = client.get(f"/submissions/{board['ids'][1]}").get_data(as_text=True)
    assert 'id="verified"' in shown and NOTE.replace("&", "&amp;") in shown and f'href="{URL}"' in shown
    assert 'class="badge-verified"' not in client.get(f"/submissions/{board['ids'][2]}").get_data(as_text=True)


def test_the_verified_only_page_says_how_it_is_ranked(client, board):
    page = client.get("/leaderboards/nlvr2/dev?verified=1").get_data(as_text=True)
    assert "only verified entries: 1 entry, ranked among themselves" in page
    assert f'data-submission-id="{board["ids"][1]}"' in page and f'data-submission-id="{board["ids"][0]}"' not in page
    assert "track=verified" in page.split('class="exports"')[1].split("</p>")[0]  # the downloads are of this board
    bad = client.get("/leaderboards/nlvr2/dev?verified=yes")
    assert bad.status_code == 400 and "verified" in bad.get_data(as_text=True)
    with client.application.app_context():
        submissions.unverify(None, board["ids"][1], via="cli")
    none = client.get("/leaderboards/nlvr2/dev?verified=1").get_data(as_text=True)
    assert "No entry on dev is verified yet" in none and "data-submission-id" not in none
    assert 'aria-label="Tracks"' in none and 'aria-current="page">Verified<' in none  # the tabs stay, to leave by


def test_the_api_gives_the_mark_or_null(client, board):
    answer = client.get("/api/v1/leaderboards/nlvr2/dev").get_json()
    marks = {e["submission_id"]: e["verified"] for e in answer["entries"]}
    checked = marks.pop(board["ids"][1])
    assert (checked["note"], checked["url"]) == (NOTE, URL) and checked["at"]
    assert set(marks.values()) == {None} and answer["verified_only"] is False
    only = client.get("/api/v1/leaderboards/nlvr2/dev?verified=1").get_json()
    assert [(e["submission_id"], e["rank"]) for e in only["entries"]] == [(board["ids"][1], 1)]
    assert only["verified_only"] is True
    mine = client.get(f"/api/v1/submissions/{board['ids'][1]}", headers={"Authorization": f"Bearer {board['token']}"})
    assert mine.get_json()["verified"]["note"] == NOTE


def test_every_export_has_the_mark(client, board):
    def body(fmt: str, query: str = "") -> str:
        response = client.get(f"/leaderboards/nlvr2/dev/export.{fmt}{query}")
        assert response.status_code == 200
        return response.get_data(as_text=True)

    rows = {row["model"]: row for row in csv.DictReader(io.StringIO(body("csv")))}
    assert (rows["Checked"]["verified"], rows["Checked"]["verified_note"], rows["Checked"]["verified_url"]) == (
        "yes",
        NOTE,
        URL,
    )
    assert rows["Top"]["verified"] == "no" and rows["Top"]["verified_note"] == ""
    document = json.loads(body("json"))
    assert {e["model"]: (e["verified"] or {}).get("note") for e in document["entries"]} == {
        "Top": None,
        "Checked": NOTE,
        "Plain": None,
    }
    markdown = body("md")
    assert "| Verified |" in markdown and f"| yes: {NOTE} ([link](<{URL}>)) |" in markdown
    latex = body("tex")
    assert r"\mbox{Lab,} \mbox{verified}" in latex and "code and weights checked by the maintainers" in latex
    only = list(csv.DictReader(io.StringIO(body("csv", "?verified=1"))))
    assert [(row["model"], row["rank"]) for row in only] == [("Checked", "1")]
    disposition = client.get("/leaderboards/nlvr2/dev/export.csv?verified=1").headers["Content-Disposition"]
    assert "nlvr2-dev-verified.csv" in disposition
