"""A newcomer's path: the board's "How to submit" (format, example, sample file, policy, Submit button), the
Submit page's policy and remaining quota, JSON errors for the page's script, a publish form that keeps
what was typed, 404s that list the valid slugs, and hidden splits that start safe or say why not."""

from __future__ import annotations

import io
import re

import pytest

from app import synthetic
from app.evaluation import get_task
from app.services import catalog
from app.services.people import accounts, teams
from tests.support.browser import csrf_token, login, post_form


@pytest.fixture
def site(app):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "dev", synthetic.nlvr2_gold(240, seed=7), name="Dev")
        catalog.add_split(
            "nlvr2", "test-u", synthetic.nlvr2_gold(240, split="test", seed=8), hidden=True, name="Test-U"
        )
        catalog.add_benchmark("vcr", "vcr", "VCR")
        catalog.add_split("vcr", "val", synthetic.vcr_gold(50), name="Val")
        member = accounts.create_user("member@example.org", "password123")
        accounts.create_user("admin@example.org", "password123", admin=True)
        lab = teams.create_team("Lab", creator=member)
        return {"team_id": lab.id}


def _text(response) -> str:
    return response.get_data(as_text=True)


@pytest.mark.parametrize("benchmark, split, task", [("nlvr2", "test-u", "nlvr2"), ("vcr", "val", "vcr")])
def test_every_board_says_how_to_submit(client, site, benchmark, split, task):
    page = _text(client.get(f"/leaderboards/{benchmark}/{split}"))
    assert "How to submit" in page
    assert get_task(task).file_format.split(",")[0] in page
    for line in get_task(task).example:
        assert line in page
    assert f'href="/leaderboards/{benchmark}/{split}/sample.csv"' in page
    assert f'href="/submit?split={benchmark}/{split}"' in page  # the Submit button preselects the split
    if benchmark == "nlvr2":
        assert "5 a day (UTC),\n20 a month" in page and "the Ladder" in page and "Open for submissions." in page


@pytest.mark.parametrize("benchmark, split, task", [("nlvr2", "test-u", "nlvr2"), ("vcr", "val", "vcr")])
def test_the_sample_file_is_every_identifier_with_a_constant_prediction_and_is_accepted(
    app, client, site, benchmark, split, task
):
    response = client.get(f"/leaderboards/{benchmark}/{split}/sample.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert f'filename="{benchmark}-{split}-sample.csv"' in response.headers["Content-Disposition"]
    data = response.data
    with app.app_context():
        gold = catalog.gold_for(catalog.get_split(benchmark, split))
        assert get_task(task).parse(data, gold).shape[0] == gold.n  # valid as it is
    rows = data.decode().splitlines()[1 if task == "vcr" else 0 :]
    assert len(rows) == gold.n and len({row.split(",", 1)[1] for row in rows}) == 1  # one constant prediction
    assert {row.split(",", 1)[0] for row in rows} == set(gold.ids.tolist())


def test_the_submit_page_shows_the_chosen_splits_policy_and_the_quota_left(client, site):
    login(client, "member@example.org", "password123")
    page = _text(client.get("/submit?split=nlvr2/test-u"))
    assert '<option selected value="nlvr2/test-u">' in page
    box = re.search(r'<div class="policy-box" data-split="nlvr2/test-u" >(.*?)</div>', page, re.S)
    assert box, page
    assert "5 a day" in box.group(1) and 'today <strong class="left-today">5</strong>' in box.group(1)
    assert "this month <strong>20</strong>" in box.group(1)
    assert re.search(r'data-split="nlvr2/dev" hidden', page)  # the others wait for the script


def _upload(client, site, data: bytes, headers=None, **fields):
    form = {
        "csrf_token": csrf_token(client, "/submit"),
        "team": str(site["team_id"]),
        "split": "nlvr2/dev",
        "model_name": "M",
        "file": (io.BytesIO(data), "p.csv"),
        **fields,
    }
    return client.post("/submit", data=form, content_type="multipart/form-data", headers=headers or {})


def test_the_upload_script_gets_json_naming_the_field_for_every_error(app, client, site):
    login(client, "member@example.org", "password123")
    fetch = {"X-Requested-With": "fetch", "Accept": "application/json"}
    valid = client.get("/leaderboards/nlvr2/dev/sample.csv").data
    response = _upload(client, site, valid, fetch, paper_url="javascript:alert(1)")
    assert response.status_code == 422 and response.json["field"] == "paper_url"
    assert "The paper URL" in response.json["error"]
    response = _upload(client, site, valid, fetch, description="d" * 6000)
    assert response.status_code == 422 and response.json["details"][0]["field"] == "description"
    response = _upload(client, site, b"x,y,z\n", fetch)
    assert response.status_code == 422 and response.json["details"][0]["line"] == 1
    app.config["MAX_CONTENT_LENGTH"] = 1000  # a body over the limit: werkzeug's 413, as JSON
    response = _upload(client, site, valid, fetch)
    assert response.status_code == 413 and response.is_json and "MB" in response.json["error"]


def test_a_failed_publish_keeps_the_form_and_names_the_field_in_words(client, site):
    login(client, "member@example.org", "password123")
    valid = client.get("/leaderboards/nlvr2/dev/sample.csv").data
    location = _upload(client, site, valid).headers["Location"]
    response = post_form(
        client,
        f"{location}/publish",
        {"description": "", "paper_url": "javascript:alert(1)", "code_url": "https://c.example"},
        form_page=location,
    )
    assert response.status_code == 422
    page = _text(response)
    assert "The entry was not published." in page and "The paper URL" in page
    assert 'value="javascript:alert(1)"' in page and 'value="https://c.example"' in page
    response = post_form(
        client, f"{location}/publish", {"description": "", "paper_url": "", "code_url": ""}, form_page=location
    )
    assert response.status_code == 422 and "Publishing needs a description or a paper URL" in _text(response)
    assert 'href="javascript' not in page


def test_a_publish_refused_as_a_duplicate_keeps_the_form_and_says_why(client, site):
    """A refusal that is not a field's (the same predictions as a published entry) is said above the form the
    member typed into, with its status, not on a bare error page."""
    login(client, "member@example.org", "password123")
    valid = client.get("/leaderboards/nlvr2/dev/sample.csv").data
    first, second = (_upload(client, site, valid).headers["Location"] for _ in range(2))
    fields = {"description": "Constant predictions", "paper_url": "", "code_url": ""}
    assert post_form(client, f"{first}/publish", fields, form_page=first).status_code == 303
    response = post_form(client, f"{second}/publish", fields | {"code_url": "https://c.example"}, form_page=second)
    assert response.status_code == 409
    page = _text(response)
    assert "The entry was not published." in page and "identical to the team&#39;s published submission" in page
    assert 'value="https://c.example"' in page  # what was typed stays


def test_404_pages_list_the_valid_slugs(client, site):
    page = _text(client.get("/leaderboards/demo-nlvr2"))
    assert "the benchmarks are: nlvr2, vcr" in page
    page = _text(client.get("/leaderboards/nlvr2/test"))
    assert "the splits of &#39;nlvr2&#39; are: dev, test-u" in page


def test_hidden_splits_start_safe_and_an_unsafe_policy_is_marked_at_risk(app, client, site):
    with app.app_context():
        split = catalog.get_split("nlvr2", "test-u")
        assert (split.feedback, split.per_day, split.per_month) == ("ladder", 5, 20)
        assert catalog.risks(split) == []
        catalog.set_policy("nlvr2", "test-u", feedback="full", per_day=None)
    runner = app.test_cli_runner()
    listing = runner.invoke(args=["splits", "list"]).output
    [line] = [row for row in listing.splitlines() if row.startswith("nlvr2\ttest-u")]
    assert "AT RISK: full feedback" in line and "no daily quota" in line
    assert [row for row in listing.splitlines() if row.startswith("nlvr2\tdev")][0].endswith("\t-")
    login(client, "admin@example.org", "password123")
    console = _text(client.get("/console/"))
    assert console.count("at risk:") == 2 and "exact scores let a team read labels" in console
    page = _text(client.get("/console/splits/nlvr2/test-u"))
    assert "This hidden split is at risk" in page and "no daily quota" in page
