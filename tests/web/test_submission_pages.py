"""The browser flow: upload with CSRF on, see the verdict, publish, moderate; and who may see what."""

from __future__ import annotations

import io
import re

import pytest

from app import synthetic
from app.db import db
from app.services import catalog
from app.services.people import accounts, teams
from tests.support.browser import csrf_token, login, post_form


@pytest.fixture
def site(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(240, seed=7)
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        catalog.add_split(
            "nlvr2", "test-u", synthetic.nlvr2_gold(240, split="test", seed=8), hidden=True, name="Test-U"
        )
        catalog.set_policy("nlvr2", "test-u", feedback="none")
        lab_user = accounts.create_user("member@example.org", "password123")
        other = accounts.create_user("other@example.org", "password123")
        accounts.create_user("admin@example.org", "password123", admin=True)
        lab = teams.create_team("Lab", creator=lab_user)
        teams.create_team("Rivals", creator=other)
        team_id = lab.id
    return {"gold": gold, "team_id": team_id}


def _upload(client, site, *, data: bytes | None = None, split="nlvr2/dev", model="Model A", headers=None, **extra):
    token = csrf_token(client, "/submit")
    form = {
        "csrf_token": token,
        "team": str(site["team_id"]),
        "split": split,
        "model_name": model,
        "file": (
            io.BytesIO(data if data is not None else synthetic.predictions("nlvr2", site["gold"], 0.8)),
            "predictions.csv",
        ),
        **extra,
    }
    return client.post("/submit", data=form, content_type="multipart/form-data", headers=headers or {})


def test_upload_shows_scores_file_facts_and_quota(client, site):
    login(client, "member@example.org", "password123")
    with client.application.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=5, per_month=20)
    response = _upload(client, site)
    assert response.status_code == 303
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Model A" in page and "scored" in page
    assert "balanced" in page and "Accuracy" in page
    assert re.search(r"<code>[0-9a-f]{64}</code>", page)
    assert re.search(r"Left today: <strong>4</strong>", page)
    assert "this month: <strong>19</strong>" in page and "in total: <strong>unlimited</strong>" in page


def test_invalid_file_lists_problems_by_line(client, site):
    login(client, "member@example.org", "password123")
    response = _upload(client, site, data=b"dev-1-0-0-0,true\nnonsense,false\n")
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert "line 2" in page and "nonsense" in page


def test_script_upload_gets_json_verdicts(client, site):
    login(client, "member@example.org", "password123")
    ok = _upload(client, site, headers={"X-Requested-With": "fetch"})
    assert ok.status_code == 201 and ok.json["redirect"].startswith("/submissions/")
    bad = _upload(client, site, data=b"x,y,z\n", headers={"X-Requested-With": "fetch"})
    assert bad.status_code == 422
    assert bad.json["details"] and bad.json["details"][0]["line"] == 1


def test_missing_model_name_is_refused(client, site):
    login(client, "member@example.org", "password123")
    response = _upload(client, site, model="")
    assert response.status_code == 422
    assert "This field is required" in response.get_data(as_text=True)


def test_upload_without_csrf_token_is_refused(client, site):
    login(client, "member@example.org", "password123")
    response = client.post(
        "/submit",
        data={
            "team": str(site["team_id"]),
            "split": "nlvr2/dev",
            "model_name": "M",
            "file": (io.BytesIO(synthetic.predictions("nlvr2", site["gold"], 0.8)), "p.csv"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 400


def test_over_quota_upload_is_429_with_next_slot(client, site):
    login(client, "member@example.org", "password123")
    with client.application.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=1)
    assert _upload(client, site).status_code == 303
    response = _upload(client, site, model="Again")
    assert response.status_code == 429
    assert "next slot opens" in response.get_data(as_text=True)


def test_script_upload_over_quota_gets_the_apis_answer(client, site):
    """The upload page's script gets the one error answer the API gives (app/http/errors.py): when to retry,
    in the body and in Retry-After; the page itself carries Retry-After too."""
    login(client, "member@example.org", "password123")
    with client.application.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=1)
    fetch = {"X-Requested-With": "fetch"}
    assert _upload(client, site, headers=fetch).status_code == 201
    response = _upload(client, site, model="Again", headers=fetch)
    assert response.status_code == 429
    assert set(response.json) == {"error", "details", "retry_at", "field"}
    assert response.json["retry_at"].endswith("+00:00") and int(response.headers["Retry-After"]) >= 1
    page = _upload(client, site, model="Again")
    assert page.status_code == 429 and int(page.headers["Retry-After"]) >= 1


def test_hidden_split_under_none_holds_scores(client, site):
    login(client, "member@example.org", "password123")
    gold = synthetic.nlvr2_gold(240, split="test", seed=8)
    response = _upload(client, site, data=synthetic.predictions("nlvr2", gold, 0.8), split="nlvr2/test-u")
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "held until the maintainers reveal" in page
    assert "Accuracy" not in page


def test_publish_then_leaderboard_then_unpublish(client, site):
    login(client, "member@example.org", "password123")
    location = _upload(client, site, model="Visible Model").headers["Location"]
    refused = post_form(client, f"{location}/publish", {"description": ""}, form_page=location)
    assert refused.status_code == 422
    assert "description or a paper URL" in refused.get_data(as_text=True)
    post_form(
        client,
        f"{location}/publish",
        {"description": "A fine model", "code_url": "https://example.org/c"},
        form_page=location,
    )
    board = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert "Visible Model" in board and "Lab" in board
    post_form(client, f"{location}/unpublish", form_page=location)
    assert "Visible Model" not in client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)


def test_admin_hides_with_reason(client, site, app):
    login(client, "member@example.org", "password123")
    location = _upload(client, site, model="Dubious", description="d").headers["Location"]
    post_form(client, f"{location}/publish", {"description": "d"}, form_page=location)
    client.delete_cookie("session")
    login(client, "admin@example.org", "password123")
    response = post_form(client, f"{location}/hide", {"reason": "duplicate entry"}, form_page=location)
    assert response.status_code == 303
    assert "Dubious" not in client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert "duplicate entry" in client.get(location).get_data(as_text=True)


def _submission_id(app, site) -> int:
    with app.app_context():
        from app.models import User
        from app.services.intake import submissions

        user = db.session.scalar(db.select(User).where(User.email == "member@example.org"))
        result = submissions.submit(
            user,
            None,
            "nlvr2",
            "dev",
            submissions.Upload(data=synthetic.predictions("nlvr2", site["gold"], 0.8), model_name="M", description="d"),
        )
        return result.submission.id


ROLES = {"anonymous": None, "other": "other@example.org", "member": "member@example.org", "admin": "admin@example.org"}


@pytest.mark.parametrize(
    "role, method, path, expected",
    [
        ("anonymous", "GET", "/submit", 302),
        ("other", "GET", "/submit", 200),
        ("member", "GET", "/submit", 200),
        ("admin", "GET", "/submit", 200),
        ("anonymous", "GET", "/submissions", 302),
        ("other", "GET", "/submissions", 200),
        ("member", "GET", "/submissions", 200),
        ("admin", "GET", "/submissions", 200),
        ("anonymous", "GET", "/submissions/{id}", 302),
        ("other", "GET", "/submissions/{id}", 404),
        ("member", "GET", "/submissions/{id}", 200),
        ("admin", "GET", "/submissions/{id}", 200),
        ("anonymous", "POST", "/submissions/{id}/publish", 302),
        ("other", "POST", "/submissions/{id}/publish", 404),
        ("member", "POST", "/submissions/{id}/publish", 303),
        ("admin", "POST", "/submissions/{id}/publish", 403),
        ("anonymous", "POST", "/submissions/{id}/unpublish", 302),
        ("other", "POST", "/submissions/{id}/unpublish", 404),
        ("member", "POST", "/submissions/{id}/unpublish", 303),
        ("admin", "POST", "/submissions/{id}/unpublish", 403),
        ("anonymous", "POST", "/submissions/{id}/hide", 302),
        ("other", "POST", "/submissions/{id}/hide", 403),
        ("member", "POST", "/submissions/{id}/hide", 403),
        ("admin", "POST", "/submissions/{id}/hide", 303),
        ("anonymous", "POST", "/submissions/{id}/unhide", 302),
        ("other", "POST", "/submissions/{id}/unhide", 403),
        ("member", "POST", "/submissions/{id}/unhide", 403),
        ("admin", "POST", "/submissions/{id}/unhide", 303),
    ],
)
def test_access_matrix(app, client, site, role, method, path, expected):
    submission_id = _submission_id(app, site)
    if ROLES[role]:
        login(client, ROLES[role], "password123")
    path = path.format(id=submission_id)
    if method == "GET":
        response = client.get(path)
    else:
        response = post_form(client, path, {"description": "d", "reason": "r"}, form_page="/login")
    assert response.status_code == expected, response.get_data(as_text=True)[:500]
    if expected == 302:
        assert "/login" in response.headers["Location"]
