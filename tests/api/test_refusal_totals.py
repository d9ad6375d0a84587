"""A file with many bad lines is refused with the true total, the first 50 listed and the split's identifier
form, the same way in the API's 422, the stored submission (API and page), the upload page and the CLI."""

from __future__ import annotations

import io
import re

import pytest

from app.evaluation.errors import MAX_PROBLEMS
from app.services.people import teams
from tests.support.api_world import build_world, post_file
from tests.support.browser import csrf_token, login

pytestmark = pytest.mark.postgres(reason="a rejected file is stored under the quota's lock, which differs by database")


@pytest.fixture
def world(app):
    return build_world(app, n=400)


def _many_unknown(world) -> tuple[bytes, str]:
    """A dev file whose lines 11 to 310 name identifiers the split does not have (300 bad lines)."""
    lines = world.predictions().decode().splitlines()
    lines[10:310] = [f"dev-99999{i}-0-0,True" for i in range(300)]
    first_id = re.search(rb'"identifier": "([^"]+)"', world.gold["dev"]).group(1).decode()
    return ("\n".join(lines) + "\n").encode(), first_id


def _expected(first_id: str) -> str:
    return (
        "invalid prediction file: 300 lines have errors and 1 problem concerns the whole file "
        f"(identifiers look like {first_id}); the first {MAX_PROBLEMS}: line 11: unknown identifier 'dev-999990-0-0' …"
    )


def test_the_api_gives_the_true_total_and_the_first_50(app, client, world):
    data, first_id = _many_unknown(world)
    response = post_file(client, world, "member", data)
    assert response.status_code == 422
    body = response.json
    assert body["error"] == _expected(first_id)
    assert len(body["details"]) == MAX_PROBLEMS + 1
    assert body["details"][0] == {"line": 11, "message": "line 11: unknown identifier 'dev-999990-0-0'"}
    assert body["details"][-1] == {"line": None, "message": f"... and {301 - MAX_PROBLEMS} more problems"}

    [listed] = client.get("/api/v1/submissions", headers=world.headers("member")).json["submissions"]
    detail = client.get(f"/api/v1/submissions/{listed['id']}", headers=world.headers("member")).json
    assert detail["status"] == "rejected" and detail["refusal"] == _expected(first_id)
    assert detail["errors"] == body["details"]
    assert (detail["improved"], detail["released"], detail["scores"]) == (None, "none", None)

    # The same upload sent again with the same key is answered as the first was: the same sentence.
    headers = world.headers("member") | {"Idempotency-Key": "k1"}
    form = {"benchmark": "nlvr2", "split": "dev", "model_name": "m"}
    answers = [
        client.post(
            "/api/v1/submissions",
            data=form | {"file": (io.BytesIO(data), "p.csv")},
            headers=headers,
            content_type="multipart/form-data",
        ).json["error"]
        for _ in range(2)
    ]
    assert answers == [_expected(first_id)] * 2


def test_the_pages_say_it_too(app, client, world):
    data, first_id = _many_unknown(world)
    login(client, "member@example.org", "not-used-here")
    with app.app_context():
        team_id = teams.find_team("Lab").id
    form = {
        "csrf_token": csrf_token(client, "/submit"),
        "team": str(team_id),
        "split": "nlvr2/dev",
        "model_name": "broken",
        "file": (io.BytesIO(data), "predictions.csv"),
    }
    upload = client.post("/submit", data=form, content_type="multipart/form-data")
    assert upload.status_code == 422
    expected = _expected(first_id).replace("'", "&#39;")
    assert expected in upload.get_data(as_text=True)

    [listed] = client.get("/api/v1/submissions", headers=world.headers("member")).json["submissions"]
    page = client.get(f"/submissions/{listed['id']}").get_data(as_text=True)
    assert f'<p id="refusal">{expected}</p>' in page


def test_the_cli_says_it_too(app, world, tmp_path):
    data, first_id = _many_unknown(world)
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    result = app.test_cli_runner().invoke(args=["evaluate", "nlvr2", "dev", str(path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0] == "Error: " + _expected(first_id)
    assert lines[1] == "line 11: unknown identifier 'dev-999990-0-0'" and len(lines) == MAX_PROBLEMS + 2
