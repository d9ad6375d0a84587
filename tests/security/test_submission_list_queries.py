"""Hostile queries to the /submissions list's filters and paging: a bad value is a 400 that escapes what was
asked, never a 500; a repeated parameter takes the first."""

from __future__ import annotations

import pytest

from app import synthetic
from app.services import catalog
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.support.browser import login
from tests.support.users import PASSWORD


@pytest.fixture
def lister(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(160, seed=7)
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        member = accounts.create_user("member@example.org", PASSWORD)
        lab = teams.create_team("Lab", creator=member)
        submissions.store_scored(
            catalog.get_split("nlvr2", "dev"),
            lab,
            synthetic.predictions("nlvr2", gold, 0.8, seed=1, split="dev"),
            model_name="m",
            user=member,
            description="d",
            publish=True,
        )
    assert login(client, "member@example.org", PASSWORD).status_code == 302
    return client


@pytest.mark.parametrize(
    "query",
    [
        "page=0",
        "page=-1",
        "page=2",
        "page=99999999999999999999999999999999999999",
        "page=" + "9" * 5000,  # past int()'s digit limit
        "page=1e3",
        "page=1.5",
        "page=%00",
        "page=1%00",
        "page=nan",
        "page=inf",
        "page=%D9%A2",  # Arabic-Indic two: past the last page
        "page=%EF%BC%92",  # full-width two
        "benchmark=%00",
        "benchmark=nlvr2%00",
        "benchmark=%C3%A9%E4%B8%AD",
        "benchmark=" + "x" * 5000,
        "split=%00",
        "split=test%00",
        "split=..%2F..%2Fetc",
        "benchmark=nlvr2&split=nope",
        "benchmark[]=nlvr2",
        "benchmark=nope&benchmark=nlvr2",
        "page=2&page=1",
        "benchmark=%ED%A0%80",  # a lone surrogate's UTF-8 (invalid)
        "split=%FF%FE",
    ],
)
def test_a_hostile_query_is_never_a_500(lister, query):
    response = lister.get(f"/submissions?{query}")
    assert response.status_code == 200 or 400 <= response.status_code < 500, (query[:80], response.status_code)
    if response.status_code == 200:
        # Whatever was kept, the page lists the team's one submission or nothing, and echoes nothing raw.
        body = response.get_data(as_text=True)
        assert "\x00" not in body


@pytest.mark.parametrize("query", ["page=0", "page=-1", "page=2", "page=" + "9" * 5000, "benchmark=nope"])
def test_a_bad_filter_or_page_is_a_400(lister, query):
    assert lister.get(f"/submissions?{query}").status_code == 400


@pytest.mark.parametrize("name", ["benchmark", "split", "page"])
def test_the_refusal_escapes_what_was_asked(lister, name):
    response = lister.get(f"/submissions?{name}=%3Cscript%3Ealert(1)%3C/script%3E")
    assert response.status_code == 400
    body = response.get_data(as_text=True)
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body


def test_a_repeated_parameter_takes_the_first(lister):
    # The first value wins (Flask's MultiDict.get): an unknown first is refused even with a good second.
    assert lister.get("/submissions?benchmark=nope&benchmark=nlvr2").status_code == 400
    assert lister.get("/submissions?benchmark=nlvr2&benchmark=nope").status_code == 200
