"""Reference results given by a maintainer (the CLI and the console): hostile dates and scores are a clear
refusal (exit 2 with a message, a 422 beside the field), never a traceback."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import Reference
from app.services import catalog
from app.services.catalog import references
from app.services.errors import InvalidInput
from app.services.people import accounts
from tests.support.browser import login, post_form
from tests.support.splits import nlvr2_split
from tests.support.users import PASSWORD

BAD_DATES = [
    "0000-01-01",
    "0001-01-01",
    "9999-12-31",
    "2024-02-30",
    "2023-02-29",
    "3000-01-01",
    "2019-07-28T00:00:00",
    "2019-07-28 00:00",
    "2019-07-28Z",
    "\u0662\u0660\u0661\u0669-\u0660\u0667-\u0662\u0668",  # Arabic-Indic digits
    "\uff12\uff10\uff11\uff19-07-28",  # full-width digits
    "\u0968\u0966\u0967\u096f-\u0966\u096d-\u0968\u096e",  # Devanagari digits
    "2019-07-28\x00",
    "+2019-07-28",
    "-2019-07-28",
    "2019-07-28\n2019",
    "99999-01-01",
    "2019-00-10",
    "2019-07-00",
    "2" * 5000,
]


@pytest.mark.parametrize("value", BAD_DATES)
def test_a_bad_cli_date_is_a_clear_refusal(app, runner, tmp_path, value):
    nlvr2_split(runner, tmp_path)
    result = runner.invoke(
        args=["references", "add", "nlvr2", "dev", "--name", "Human", "--scores", '{"all": {"accuracy": 75}}']
        + ["--date", value]
    )
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "'--date'" in result.output and "Traceback" not in result.output
    assert len(result.output) < 2000  # the bad value is cut short in the message
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


def test_the_parser_refuses_what_date_fromisoformat_would_take_or_choke_on():
    for value in BAD_DATES:
        with pytest.raises(InvalidInput) as refused:
            references.parse_date(value)
        assert refused.value.field == "date"


@pytest.fixture
def console(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "dev", synthetic.nlvr2_gold(160, seed=7), name="Dev")
        accounts.create_user("admin@example.org", PASSWORD, admin=True)
    assert login(client, "admin@example.org", PASSWORD).status_code == 302
    return client


@pytest.mark.parametrize("value", BAD_DATES)
def test_a_bad_console_date_is_a_422_beside_the_field(app, console, value):
    path = "/console/splits/nlvr2/dev/references"
    fields = {"name": "Human", "scores": '{"all": {"accuracy": 75}}', "source": "", "date": value}
    response = post_form(console, path, fields, form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 422, response.status_code
    page = response.get_data(as_text=True)
    if "\x00" in value:  # refused for every field before the form is read, naming the field
        assert "form field &#39;date&#39; contains a NUL byte" in page
    else:
        # Beside the field: the service's sentence, or the form's length check for a value over 10 characters.
        error = re.search(r'id="reference-date-error">([^<]*)', page)
        assert error is not None, value[:40]
        assert error.group(1).startswith("date must be") or "longer than 10" in error.group(1), error.group(1)
    assert "Traceback" not in page
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


DEEP = "[" * 3000 + "]" * 3000  # past the JSON decoder's recursion limit, under the form size limit


HOSTILE_SCORES = [
    DEEP,
    '{"all": ' * 3000 + "1" + "}" * 3000,
    '{"all": {"accuracy": ' + "9" * 5000 + "}}",  # past int()'s digit limit
    '{"all": {"accuracy": NaN}}',
    '{"all": {"accuracy": 1e999}}',
    '{"all": {"accuracy": -0.0001}}',
    '{"all": {"accuracy": true}}',
    '{"all": {"accuracy": "75"}}',
    '{"all": {"accuracy": 75}, "all": 3}',
    '{"\\u0000": {"accuracy": 75}}',
    '{"all": {"\\ud800": 75}}',
    "\x00",
    "",
]


@pytest.mark.parametrize("scores", HOSTILE_SCORES, ids=range(len(HOSTILE_SCORES)))
def test_hostile_scores_from_the_cli_are_a_clear_refusal(app, runner, tmp_path, scores):
    nlvr2_split(runner, tmp_path)
    result = runner.invoke(args=["references", "add", "nlvr2", "dev", "--name", "Human", "--scores", scores])
    assert result.exit_code == 2, (result.exit_code, result.output[-500:], repr(result.exception)[:300])
    assert "scores" in result.output and "Traceback" not in result.output
    if scores.count("[") + scores.count("{") > 1000:
        assert "nested too deeply" in result.output
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


@pytest.mark.parametrize("scores", HOSTILE_SCORES, ids=range(len(HOSTILE_SCORES)))
def test_hostile_scores_in_the_console_form_are_a_422(app, console, scores):
    path = "/console/splits/nlvr2/dev/references"
    fields = {"name": "Human", "scores": scores, "source": "", "date": ""}
    response = post_form(console, path, fields, form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 422, response.status_code
    if scores.count("[") + scores.count("{") > 1000:
        assert "nested too deeply" in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []
