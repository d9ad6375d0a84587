"""Names and shown text a reader cannot check (issue 23, item 5): invisible characters and text-direction
controls are refused, naming the character, wherever a team writes something others read (the team page,
the upload page, the API, the command line); look-alike team names from other scripts are refused too."""

from __future__ import annotations

import io
import re

import pytest

from app import synthetic
from app.db import db
from app.models import User
from app.services import catalog
from app.services.catalog import references
from app.services.errors import InvalidInput
from app.services.intake import submissions
from app.services.maintenance import label_audits
from app.services.people import accounts
from tests.support.api_world import PASSWORD, build_world, post_file, stored_submission
from tests.support.browser import csrf_token, login, post_form

# On SQLite alone: the refusals come before the database, so both dialects answer alike.

HUMAN = '{"all": {"accuracy": 96.1}}'
RLO = "U+202E RIGHT-TO-LEFT OVERRIDE, an invisible control character; remove it"


@pytest.fixture
def world(app):
    return build_world(app)


def _member(app):
    client = app.test_client()
    assert login(client, "member@example.org", PASSWORD).status_code == 302
    return client


# --- the API -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("model_name", "gpt\u202e4-mini", "The model name (model_name) contains " + RLO),
        ("model_name", "model\u17b4", "model_name) contains U+17B4 KHMER VOWEL INHERENT AQ"),
        ("model_name", "model\u180b", "model_name) contains U+180B MONGOLIAN FREE VARIATION SELECTOR ONE"),
        ("description", "trained \u200bon dev", "description) contains U+200B ZERO WIDTH SPACE"),
        ("description", "a \u2066isolate\u2069", "description) contains U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("paper_url", "https://example.org/\u202egpj.exe", "paper_url) contains " + RLO),
        ("code_url", "https://example.org/a\u00adb", "code_url) contains U+00AD SOFT HYPHEN"),
    ],
)
def test_an_upload_naming_an_invisible_character_is_a_422(client, world, field, value, named):
    response = post_file(client, world, "member", world.predictions(), **{field: value})
    assert response.status_code == 422, response.json
    assert named in response.json["error"]


def test_multi_line_descriptions_and_other_scripts_are_accepted(client, world):
    response = post_file(
        client,
        world,
        "member",
        world.predictions(),
        model_name="Модель-東京 αβ",
        description="Line one.\n\tIndented line two, in Ελληνικά and 日本語.\r\n",
    )
    assert response.status_code == 201, response.json


def test_publishing_with_an_invisible_character_is_a_422(app, client, world):
    sid = stored_submission(app, world)
    for body, named in (
        ({"description": "fine\u2067text"}, "description) contains U+2067 RIGHT-TO-LEFT ISOLATE"),
        ({"description": "x", "code_url": "https://example.org/\u200f"}, "code_url) contains U+200F RIGHT-TO-LEFT"),
    ):
        response = client.post(f"/api/v1/submissions/{sid}/publish", json=body, headers=world.headers("member"))
        assert response.status_code == 422, response.json
        assert named in response.json["error"]


# --- the pages ---------------------------------------------------------------------------------------------


def test_the_team_page_refuses_invisible_characters_and_look_alikes(app, world):
    client = _member(app)
    for name, status, said in (
        ("Team\u202eA", 422, "team name contains " + RLO),
        ("Lab\u17b5", 422, "U+17B5 KHMER VOWEL INHERENT AA"),
        ("Lab\u180b", 422, "U+180B MONGOLIAN FREE VARIATION SELECTOR ONE"),
        ("\u13aanonymous", 422, "is reserved"),  # Cherokee Ꭺ
        ("\ua4eenonymous", 422, "is reserved"),  # Lisu ꓮ
        ("\u2c81nonymous", 422, "mixes Coptic and Latin letters"),  # Coptic ⲁ: no entry in the table
        ("L\ua4eeB", 409, "looks like the existing team 'Lab'"),
        ("Ｌａｂ", 409, "looks like the existing team 'Lab'"),
        ("Rivais", 409, "looks like the existing team 'Rivals'"),  # i/l, as the table draws them
    ):
        response = post_form(client, "/teams", {"name": name}, form_page="/teams")
        page = response.get_data(as_text=True)
        assert response.status_code == status, (name, response.status_code)
        assert said.replace("'", "&#39;") in page, (name, said)


def test_the_upload_page_refuses_an_invisible_character_in_the_model_name(app, world):
    client = _member(app)
    with app.app_context():
        from app.services.people import teams

        team_id = teams.find_team("Lab").id
    form = {
        "csrf_token": csrf_token(client, "/submit"),
        "team": str(team_id),
        "split": "nlvr2/dev",
        "model_name": "Model\u202eA",
        "description": "ok",
        "file": (io.BytesIO(synthetic.predictions("nlvr2", world.gold["dev"], 0.8)), "predictions.csv"),
    }
    response = client.post("/submit", data=form, content_type="multipart/form-data")
    assert response.status_code == 422
    assert "model_name) contains " + RLO in response.get_data(as_text=True)


# --- what maintainers and accounts write ---------------------------------------------------------------------


def test_maintainers_titles_reasons_and_account_names_are_checked_too(app, world):
    sid = stored_submission(app, world, publish=True)
    with app.app_context():
        admin = db.session.scalar(db.select(User).where(User.email == "admin@example.org"))
        gold = world.gold["dev"]
        for attempt, said in (
            (lambda: accounts.create_user("ada\u200b@example.org", "password123"), "the email address contains U+200B"),
            (lambda: accounts.create_token(admin, "laptop\u202e"), "the token name contains U+202E"),
            (lambda: catalog.add_benchmark("b2", "nlvr2", "Bench\u2067"), "benchmark name contains U+2067"),
            (lambda: catalog.add_benchmark("b2", "nlvr2", "B", "About\u2060"), "benchmark description contains U+2060"),
            (lambda: catalog.add_split("nlvr2", "x", gold, name="X\u200d"), "split name contains U+200D ZERO WIDTH"),
            (lambda: references.add_reference("nlvr2", "dev", "Human\u00ad", HUMAN), "the name contains U+00AD"),
            (lambda: submissions.hide(admin, sid, "spam\u200e"), "the reason contains U+200E LEFT-TO-RIGHT MARK"),
            (lambda: label_audits.correct_labels(admin, "nlvr2", "dev", gold, "fix\u061c"), "the note contains U+061C"),
        ):
            with pytest.raises(InvalidInput) as refused:
                attempt()
            assert said in refused.value.message, refused.value.message
            db.session.rollback()
        catalog.add_benchmark("vcr", "vcr", "VCR")
        with pytest.raises(InvalidInput, match=re.escape("subset name contains U+200B ZERO WIDTH SPACE")):
            catalog.add_split(
                "vcr", "val", synthetic.vcr_gold(20, regions=("west\u200b", "east")), subset_field="region"
            )


# --- the command line --------------------------------------------------------------------------------------


def test_the_command_line_refuses_them_with_exit_code_2(app, world, runner):
    result = runner.invoke(args=["teams", "create", "Team\u2060B"])
    assert result.exit_code == 2, result.output
    assert "team name contains U+2060 WORD JOINER, an invisible control character" in result.output
    result = runner.invoke(args=["teams", "create", "\u0391nonymous"])  # Greek Alpha
    assert result.exit_code == 2 and "reserved" in result.output
