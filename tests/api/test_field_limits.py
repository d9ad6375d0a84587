"""Form fields of an upload: limits per field, invalid UTF-8 and the number of parts are 422s naming the
field; a field past the parser's own limit (128 KB, which no field needs) is a 413 saying so, never a 500 or
a message about the file; unknown slugs list the valid ones."""

from __future__ import annotations

import io

import pytest

from app.services.errors import InvalidInput
from tests.support.api_world import build_world, post_file

pytestmark = pytest.mark.postgres(
    reason=(
        "PostgreSQL enforces VARCHAR lengths and refuses NUL characters that SQLite stores: the limits must "
        "be checked before the database"
    )
)


@pytest.fixture
def world(app):
    return build_world(app)


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("model_name", "m" * 201, "model name (model_name)"),
        ("description", "d" * 6000, "description (description)"),
        ("paper_url", "https://example.org/" + "p" * 2000, "paper URL (paper_url)"),
        ("code_url", "javascript:alert(1)", "code URL (code_url)"),
    ],
)
def test_each_field_over_its_limit_is_a_422_naming_it(client, world, field, value, named):
    response = post_file(client, world, "member", world.predictions(), **{field: value})
    assert response.status_code == 422, response.json
    assert named in response.json["error"]


def test_limits_are_inclusive(client, world):
    response = post_file(
        client,
        world,
        "member",
        world.predictions(),
        model_name="m" * 200,
        description="d" * 5000,
        paper_url="https://example.org/" + "p" * 1980,
    )
    assert response.status_code == 201, response.json


def test_a_field_past_the_parsers_limit_is_a_413_naming_the_field_limit(client, world):
    response = post_file(client, world, "member", world.predictions(), description="d" * 2**20)
    assert response.status_code == 413, response.json
    assert "text field of this form is over 128 KB" in response.json["error"]


@pytest.mark.parametrize("extra_parts, status", [(17, 422), (1200, 413)])  # 21 parts; past werkzeug's limit
def test_a_form_of_too_many_parts_is_refused_saying_so(client, world, extra_parts, status):
    form = {"benchmark": "nlvr2", "split": "dev", "model_name": "m", "file": (io.BytesIO(world.predictions()), "p.csv")}
    form.update({f"x{i}": "1" for i in range(extra_parts)})
    response = client.post(
        "/api/v1/submissions", data=form, headers=world.headers("member"), content_type="multipart/form-data"
    )
    assert response.status_code == status, response.get_data(as_text=True)
    assert "parts" in response.json["error"] and "at most 20" in response.json["error"]


def test_invalid_utf8_in_a_field_is_a_422_naming_it(client, world):
    boundary = "b0und"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="benchmark"\r\n\r\nnlvr2\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="split"\r\n\r\ndev\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="model_name"\r\n\r\n'
    ).encode()
    body += "Modèle".encode("latin-1")
    body += (
        (
            f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.csv"\r\n'
            "Content-Type: text/csv\r\n\r\n"
        ).encode()
        + world.predictions()
        + f"\r\n--{boundary}--\r\n".encode()
    )
    response = client.post(
        "/api/v1/submissions",
        data=body,
        headers=world.headers("member"),
        content_type=f"multipart/form-data; boundary={boundary}",
    )
    assert response.status_code == 422
    assert "'model_name' is not valid UTF-8" in response.json["error"]


def test_unknown_benchmark_or_split_lists_the_valid_slugs(client, world):
    response = post_file(client, world, "member", world.predictions(), benchmark="nlvr")
    assert response.status_code == 404 and "the benchmarks are: nlvr2" in response.json["error"]
    response = client.get("/api/v1/leaderboards/nlvr2/test")
    assert response.status_code == 404
    assert "the splits of 'nlvr2' are: dev, test-u" in response.json["error"]


@pytest.mark.parametrize(
    "text, named",
    [
        ("\ud800", "U+D800, a lone surrogate"),  # a 500 (UnicodeEncodeError) on both databases before issue 35
        ("red\x1b[31m alert", "U+001B, a control character"),
        ("bell\x07", "U+0007, a control character"),
        ("del\x7f", "U+007F, a control character"),
        ("csi\x9b", "U+009B, a control character"),
    ],
)
def test_text_that_cannot_be_shown_is_a_422_naming_the_character_and_field(client, world, text, named):
    """Issue 35, findings 6 and 8: a lone surrogate or a C0/C1 control in a publish's JSON, an upload's model name
    or a team's name is refused, naming the character and the field, and nothing is stored; a description keeps
    its line breaks and tabs."""
    created = post_file(client, world, "member", world.predictions(), model_name="plain")
    assert created.status_code == 201, created.json
    published = client.post(
        f"/api/v1/submissions/{created.json['id']}/publish", json={"description": text}, headers=world.headers("member")
    )
    assert published.status_code == 422, published.get_data(as_text=True)
    assert named in published.json["error"] and "description" in published.json["error"]
    if "\ud800" not in text:  # a form's field is UTF-8, which cannot carry a lone surrogate (that is a 422 of its own)
        refused = post_file(client, world, "member", world.predictions(), model_name=f"model {text}")
        assert refused.status_code == 422 and named in refused.json["error"] and "model_name" in refused.json["error"]
    with client.application.app_context():
        from app.services.people import teams

        with pytest.raises(InvalidInput, match=named.split(",")[0].replace("+", r"\+")):
            teams.create_team(f"Team {text}")
    kept = client.post(
        f"/api/v1/submissions/{created.json['id']}/publish",
        json={"description": "two lines\nand\ta tab"},
        headers=world.headers("member"),
    )
    assert kept.status_code == 200, kept.get_data(as_text=True)
