"""Entry fields (issue 38): a benchmark's fact sheet, defined by the maintainers (CLI, audited), filled by teams
at upload or at publication (API, web), checked by type with a 422 naming the field, required at publication,
frozen once published, and shown on the submission page, the board, the API and every export."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from sqlalchemy import select

from app.db import db
from app.models import AuditEvent, Submission
from app.services.catalog import entry_fields
from tests.support.api_world import PASSWORD, build_world, post_file, stored_submission
from tests.support.browser import csrf_token, login

pytestmark = pytest.mark.postgres(
    reason="a submission's fields are a JSON text column read back into the board's snapshot on either database"
)

FIELDS = (
    ("zero_shot", "--label", "Zero-shot", "--type", "yesno", "--filter"),
    ("parameters", "--label", "Parameters", "--type", "integer", "--unit", "parameters", "--column", "--required"),
    ("approach", "--label", "Approach", "--type", "choice", "--choices", "fine-tuned,zero-shot"),
    ("code", "--label", "Code", "--type", "url"),
)


@pytest.fixture
def world(app, runner):
    made = build_world(app, n=120)
    for key, *options in FIELDS:
        result = runner.invoke(args=["fields", "add", "nlvr2", key, *options])
        assert result.exit_code == 0, result.output
    return made


def test_the_command_line_defines_lists_and_removes_fields_audited(app, runner, world):
    listed = runner.invoke(args=["fields", "list", "nlvr2"]).output.splitlines()
    assert listed == [
        "zero_shot\tyesno\tZero-shot\tfilter",
        "parameters\tinteger(parameters)\tParameters\trequired column",
        "approach\tchoice(fine-tuned,zero-shot)\tApproach\t",
        "code\turl\tCode\t",
    ]
    bad = runner.invoke(args=["fields", "add", "nlvr2", "Bad Key", "--label", "x", "--type", "text"])
    assert bad.exit_code == 2 and "key must be a lower-case letter" in bad.output
    unit = runner.invoke(args=["fields", "add", "nlvr2", "size", "--label", "x", "--type", "text", "--unit", "GB"])
    assert unit.exit_code == 2 and "only an integer field has a unit" in unit.output
    stored_submission(app, world, fields={"code": "https://example.org/c"})
    held = runner.invoke(args=["fields", "remove", "nlvr2", "code"])
    assert held.exit_code == 2 and "1 submission of nlvr2 hold a value of 'code'" in held.output
    assert runner.invoke(args=["fields", "remove", "nlvr2", "approach"]).exit_code == 0
    with app.app_context():
        assert [spec.key for spec in entry_fields.list_fields("nlvr2")] == ["zero_shot", "parameters", "code"]
        actions = db.session.scalars(select(AuditEvent.action).where(AuditEvent.action.like("entry_field.%"))).all()
    assert actions.count("entry_field.add") == 4 and actions.count("entry_field.remove") == 1


def test_values_are_checked_by_type_and_a_bad_one_is_a_422_naming_the_field(client, world):
    for given, field, words in (
        ({"zero_shot": "maybe"}, "fields.zero_shot", "must be yes or no"),
        ({"parameters": "7B"}, "fields.parameters", "must be a whole number"),
        ({"parameters": -3}, "fields.parameters", "must be a whole number"),
        ({"parameters": "7.25e-1"}, "fields.parameters", "must be a whole number"),
        ({"parameters": "1e19"}, "fields.parameters", "must be a whole number"),
        ({"approach": "few-shot"}, "fields.approach", "must be one of fine-tuned, zero-shot"),
        ({"code": "ftp://x"}, "fields.code", "must be an http:// or https:// address"),
        ({"colour": "red"}, "fields.colour", "unknown field 'colour'"),
    ):
        response = post_file(client, world, "member", world.predictions(), fields=json.dumps(given))
        assert response.status_code == 422, response.json
        assert f"({field})" in response.json["error"] or field.split(".")[1] in response.json["error"]
        assert words in response.json["error"], response.json
    response = post_file(client, world, "member", world.predictions(), fields="[1, 2]")
    assert response.status_code == 422 and "fields must be a JSON object" in response.json["error"]


def test_fields_given_at_upload_and_at_publication_required_then_frozen_until_unpublished(app, client, world):
    given = {"zero_shot": "yes", "parameters": "7,000,000,000", "code": "https://example.org/code"}
    # A number written as on a board's filter (parameters<=1e9) is taken as a value too, exactly.
    assert entry_fields.clean_value(entry_fields.FieldSpec("p", "P", "integer"), "1.25e9") == 1_250_000_000
    created = post_file(client, world, "member", world.predictions(), fields=json.dumps(given))
    assert created.status_code == 201, created.json
    sid, headers = created.json["id"], world.headers("member")
    stated = {"zero_shot": True, "parameters": 7_000_000_000, "code": "https://example.org/code"}
    assert client.get(f"/api/v1/submissions/{sid}", headers=headers).json["fields"] == stated

    other = post_file(client, world, "member", world.predictions(seed=3), fields=json.dumps({"zero_shot": "no"}))
    oid = other.json["id"]
    missing = client.post(f"/api/v1/submissions/{oid}/publish", json={"description": "d"}, headers=headers)
    assert missing.status_code == 422 and "(fields.parameters) is required to publish" in missing.json["error"]
    published = client.post(
        f"/api/v1/submissions/{oid}/publish",
        json={"description": "d", "fields": {"parameters": 350_000_000, "approach": "fine-tuned"}},
        headers=headers,
    )
    assert published.status_code == 200, published.json
    assert published.json["fields"] == {"zero_shot": False, "parameters": 350_000_000, "approach": "fine-tuned"}

    frozen = client.post(f"/api/v1/submissions/{oid}/publish", json={"fields": {"zero_shot": True}}, headers=headers)
    assert frozen.status_code == 409 and "changes only once it is unpublished" in frozen.json["error"]
    same = client.post(f"/api/v1/submissions/{oid}/publish", json={"fields": {"zero_shot": False}}, headers=headers)
    assert same.status_code == 200  # the same value again changes nothing
    assert client.post(f"/api/v1/submissions/{oid}/unpublish", headers=headers).status_code == 200
    cleared = client.post(f"/api/v1/submissions/{oid}/publish", json={"fields": {"parameters": None}}, headers=headers)
    assert cleared.status_code == 422 and "(fields.parameters) is required to publish" in cleared.json["error"]
    again = client.post(
        f"/api/v1/submissions/{oid}/publish", json={"fields": {"zero_shot": True, "approach": ""}}, headers=headers
    )
    assert again.status_code == 200 and again.json["fields"] == {"zero_shot": True, "parameters": 350_000_000}

    board = client.get("/api/v1/leaderboards/nlvr2/dev").json
    assert [entry["fields"] for entry in board["entries"]] == [{"zero_shot": True, "parameters": 350_000_000}]


def test_fields_are_shown_on_the_board_the_submission_page_and_every_export(app, client, world):
    sid = stored_submission(
        app, world, publish=True, description="d", fields={"zero_shot": True, "parameters": 7_000_000_000}
    )
    stored_submission(app, world, publish=True, description="e", seed=9, model_name="bare", fields={})
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    header = re.search(r"<thead>.*?</thead>", page, re.S).group(0)
    assert re.search(r"n = [\d,]+</span></th>\s*<th[^>]*entry-field[^>]*>Parameters</th>", header), header
    assert (
        'title="7,000,000,000 parameters">7B</td>' in page and ">Zero-shot<" not in header
    )  # a column where it says so
    shown = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert re.search(r"<dt class=\"entry-field\">Zero-shot</dt><dd[^>]*>yes</dd>", shown)
    assert "7,000,000,000 parameters" in shown

    rows = list(csv.DictReader(io.StringIO(client.get("/leaderboards/nlvr2/dev/export.csv").get_data(as_text=True))))
    by_model = {row["model"]: row for row in rows if row["type"] == "entry"}
    assert by_model["stored-model"]["field:zero_shot"] == "true"
    assert by_model["stored-model"]["field:parameters"] == "7000000000"
    assert by_model["bare"]["field:zero_shot"] == ""
    document = json.loads(client.get("/leaderboards/nlvr2/dev/export.json").get_data(as_text=True))
    assert [f["key"] for f in document["fields"]] == ["zero_shot", "parameters", "approach", "code"]
    assert {e["model"]: e["fields"] for e in document["entries"]}["stored-model"] == {
        "zero_shot": True,
        "parameters": 7_000_000_000,
    }
    markdown = client.get("/leaderboards/nlvr2/dev/export.md").get_data(as_text=True)
    assert "| Parameters | Paper | Code |" in markdown and "| 7,000,000,000 |" in markdown
    latex = client.get("/leaderboards/nlvr2/dev/export.tex").get_data(as_text=True)
    assert "parameters: 7,000,000,000" in re.sub(r"\\mbox\{([^}]*)\}", r"\1", latex)  # beneath the team


def test_the_web_forms_take_fields_at_upload_and_at_publication(app, client, world):
    login(client, "member@example.org", PASSWORD)
    form = client.get("/submit?split=nlvr2/dev").get_data(as_text=True)
    assert 'name="fields-nlvr2/dev-parameters"' in form and 'type="number"' in form
    token = csrf_token(client, "/submit")
    upload = {
        "csrf_token": token,
        "team": "1",
        "split": "nlvr2/dev",
        "model_name": "WebNet",
        "file": (io.BytesIO(world.predictions()), "p.csv"),
        "fields-nlvr2/dev-zero_shot": "maybe",
    }
    refused = client.post("/submit", data=upload, content_type="multipart/form-data")
    assert refused.status_code == 422 and "(fields.zero_shot) must be yes or no" in refused.get_data(as_text=True)
    upload |= {"file": (io.BytesIO(world.predictions()), "p.csv"), "fields-nlvr2/dev-zero_shot": "yes"}
    done = client.post("/submit", data=upload, content_type="multipart/form-data")
    assert done.status_code == 303, done.get_data(as_text=True)
    sid = int(done.headers["Location"].rsplit("/", 1)[1])
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert '<option value="yes" selected>yes</option>' in page and 'name="fields-parameters"' in page
    token = csrf_token(client, f"/submissions/{sid}")
    publish = {"csrf_token": token, "description": "web", "fields-parameters": ""}
    missing = client.post(f"/submissions/{sid}/publish", data=publish)
    assert missing.status_code == 422 and "is required to publish" in missing.get_data(as_text=True)
    published = client.post(f"/submissions/{sid}/publish", data=publish | {"fields-parameters": "125000000"})
    assert published.status_code == 303
    with app.app_context():
        assert entry_fields.values_of(db.session.get(Submission, sid).fields) == {
            "zero_shot": True,
            "parameters": 125_000_000,
        }
