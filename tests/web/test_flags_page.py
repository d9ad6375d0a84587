"""The console's probe-flag page: what it lists, its filter, and who may open it."""

from __future__ import annotations

import re

import pytest

from app import synthetic
from app.services import catalog
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.people import accounts, teams
from tests.support.browser import login

PASSWORD = "password123"


@pytest.fixture
def site(app):
    gold = {
        "test-u": synthetic.nlvr2_gold(200, split="test", seed=3),
        "test-2": synthetic.nlvr2_gold(200, split="test", seed=4),
    }
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-u", gold["test-u"], hidden=True, name="Test-U")
        catalog.add_split("nlvr2", "test-2", gold["test-2"], hidden=True, name="Test-2")
        accounts.create_user("admin@example.org", PASSWORD, admin=True)
        ids = {}
        # Each team its own predictions: only flags within a team here (across teams: test_cross_team_flags).
        for seed, (team_name, email) in enumerate((("Lab <b>", "member@example.org"), ("Rivals", "rival@example.org"))):
            user = accounts.create_user(email, PASSWORD)
            team = teams.create_team(team_name, creator=user)
            ids[team_name] = team.id
            for split in ("test-u", "test-2"):
                data = synthetic.predictions("nlvr2", gold[split], 0.7, seed=1 + seed, split="test")
                first = submissions.submit(user, None, "nlvr2", split, Upload(data=data, model_name="A"))
                again = submissions.submit(user, None, "nlvr2", split, Upload(data=data, model_name="A again"))
                ids[(team_name, split)] = (first.submission.id, again.submission.id)
    return ids


def _rows(page: str) -> list[str]:
    return re.findall(r"<tr>\s*<td class=\"small nowrap\">.*?</tr>", page, re.S)


def test_admin_sees_every_flag_with_links_and_distance(app, client, site):
    login(client, "admin@example.org", PASSWORD)
    response = client.get("/console/flags")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert len(_rows(page)) == 4
    first, again = site[("Lab <b>", "test-u")]
    assert f'href="/submissions/{again}">#{again}</a>' in page
    assert f'href="/submissions/{first}">#{first}</a>' in page
    assert "0.00%" in page  # an identical resubmission
    assert "Lab &lt;b&gt;" in page and "Lab <b>" not in page  # team names are escaped
    assert "4 flags" in page


def test_filter_by_split_and_team(app, client, site):
    login(client, "admin@example.org", PASSWORD)
    page = client.get("/console/flags?split=nlvr2/test-2").get_data(as_text=True)
    assert len(_rows(page)) == 2 and "Test-U</a>" not in page.split("<tbody>")[1]
    team_id = site["Rivals"]
    page = client.get(f"/console/flags?split=nlvr2/test-u&team={team_id}").get_data(as_text=True)
    rows = _rows(page)
    assert len(rows) == 1 and "Rivals" in rows[0] and "Test-U" in rows[0]
    assert f'<option value="{team_id}" selected>' in page
    assert '<option value="nlvr2/test-u" selected>' in page


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("split=nlvr2", 422),
        ("split=nlvr2/unknown", 404),
        ("split=%27%20OR%201%3D1--/x", 404),
        ("team=abc", 422),
        ("team=1%20OR%201%3D1", 422),
        ("team=999999", 404),
        ("team=9999999999", 404),
        ("team=99999999999999999999", 422),
        ("team=%C2%B2", 422),
        ("split=nlvr2/%00", 422),
        ("team=%00", 422),
    ],
)
def test_bad_filters_are_named_not_500(app, client, site, query, status):
    login(client, "admin@example.org", PASSWORD)
    response = client.get(f"/console/flags?{query}")
    assert response.status_code == status
    assert ("split" in response.get_data(as_text=True)) or ("team" in response.get_data(as_text=True))


@pytest.mark.parametrize(("email", "expected"), [(None, 302), ("member@example.org", 403)])
def test_only_maintainers_see_flags(app, client, site, email, expected):
    if email:
        login(client, email, PASSWORD)
    response = client.get("/console/flags")
    assert response.status_code == expected
    if expected == 302:
        assert "/login" in response.headers["Location"]
