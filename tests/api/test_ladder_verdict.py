"""A Ladder verdict names the figure it shows: `improved` and `released` in the API's answers (documented), and on
the page a browser upload leads to: "did not beat your best (79.9)" or a new best. Other policies: no Ladder
verdict. Nothing more than the policy releases is ever shown."""

from __future__ import annotations

import io

import pytest

from app.db import db
from app.evaluation.display import score_text
from app.models import Submission, User
from app.services import catalog
from app.services.blind_test import visibility
from app.services.people import teams
from tests.support.api_world import build_world, post_file
from tests.support.browser import csrf_token, login

pytestmark = pytest.mark.postgres(
    reason="the Ladder's state is written under the quota's row lock, which differs between SQLite and PostgreSQL"
)

SUMMARY_KEYS = {"id", "benchmark", "split", "team", "model_name", "status", "submitted_at", "published"}


@pytest.fixture
def world(app):
    world = build_world(app)
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="ladder", per_day=20)
    return world


def _upload(client, world, accuracy: float, seed: int, split: str = "test-u") -> dict:
    response = post_file(
        client, world, "member", world.predictions(split, accuracy=accuracy, seed=seed), split=split, description="d"
    )
    assert response.status_code == 201, response.json
    return response.json


def _detail(client, world, submission_id: int) -> dict:
    response = client.get(f"/api/v1/submissions/{submission_id}", headers=world.headers("member"))
    assert response.status_code == 200, response.json
    return response.json


def _own_accuracy(app, submission_id: int) -> float:
    with app.app_context():
        return visibility.scores_of(db.session.get(Submission, submission_id))["all"]["accuracy"]


def test_a_new_best_then_a_worse_file_then_a_better_one(app, client, world):
    first = _upload(client, world, 0.8, seed=1)
    assert first["improved"] is True and first["released"] == "this"
    best = first["scores"]["all"]["accuracy"]

    worse = _upload(client, world, 0.55, seed=2)
    # The worse file's answer: not a new best, and the figure shown is the team's best, not its own.
    assert worse["improved"] is False and worse["released"] == "best"
    assert worse["scores"] == {"all": {"accuracy": best}}
    assert _own_accuracy(app, worse["id"]) < best
    detail = _detail(client, world, worse["id"])
    assert (detail["improved"], detail["released"], detail["scores"]) == (False, "best", {"all": {"accuracy": best}})
    assert detail["refusal"] is None and detail["errors"] == []

    better = _upload(client, world, 0.97, seed=3)
    assert better["improved"] is True and better["released"] == "this"
    assert better["scores"]["all"]["accuracy"] > best
    # An earlier answer keeps its verdict: it did not beat the best there was when it came.
    again = _detail(client, world, worse["id"])
    assert (again["improved"], again["released"], again["scores"]) == (False, "best", {"all": {"accuracy": best}})


def test_after_the_reveal_every_file_shows_its_own_scores_and_keeps_its_verdict(app, client, world):
    _upload(client, world, 0.8, seed=1)
    worse = _upload(client, world, 0.55, seed=2)
    with app.app_context():
        catalog.reveal_split("nlvr2", "test-u")
    detail = _detail(client, world, worse["id"])
    assert detail["improved"] is False and detail["released"] == "this"
    assert detail["scores"]["all"]["accuracy"] == pytest.approx(_own_accuracy(app, worse["id"]))


@pytest.mark.one_backend
@pytest.mark.parametrize(
    ("split", "feedback", "released"),
    [("dev", None, "this"), ("test-u", "full", "this"), ("test-u", "none", "none")],
)
def test_other_policies_give_no_ladder_verdict(app, client, world, split, feedback, released):
    """On SQLite alone: these policies keep no Ladder state, so nothing is written under the lock."""
    if feedback:
        with app.app_context():
            catalog.set_policy("nlvr2", split, feedback=feedback)
    answers = [_upload(client, world, accuracy, seed=seed, split=split) for seed, accuracy in ((1, 0.8), (2, 0.55))]
    for answer in answers + [_detail(client, world, answer["id"]) for answer in answers]:
        assert answer["improved"] is None and answer["released"] == released
        assert (answer["scores"] is None) == (released == "none")


@pytest.mark.one_backend
def test_a_ladder_answer_holds_nothing_but_the_released_figure(app, client, world):
    """Whatever the verdict, the answer has the documented keys alone: no per-example result, no subset, no
    interval of a hidden split. On SQLite alone: the answer's shape; the state under the lock is proved on both
    by the tests above."""
    _upload(client, world, 0.8, seed=1)
    worse = _upload(client, world, 0.55, seed=2)
    assert set(worse) == SUMMARY_KEYS | {"scores", "scores_text", "improved", "released", "quota"}
    detail = _detail(client, world, worse["id"])
    for answer in (worse, detail):  # the figure's text beside it, and nothing more
        assert {s: set(m) for s, m in answer["scores_text"].items()} == {s: set(m) for s, m in answer["scores"].items()}
    assert set(detail) == SUMMARY_KEYS | {
        "sha256",
        "size",
        "scores",
        "scores_text",
        "improved",
        "released",
        "errors",
        "refusal",
        "description",
        "paper_url",
        "code_url",
        "anonymous",
        "published_at",
        "verified",  # a maintainer's mark of a published entry (null here): nothing per example
        "fields",
    }
    assert list(detail["scores"]) == ["all"] and list(detail["scores"]["all"]) == ["accuracy"]


@pytest.mark.one_backend
def test_the_verdict_fields_are_documented(client, world):
    """On SQLite alone: the API document is the same whatever the database."""
    schemas = client.get("/api/v1/openapi.json").json["components"]["schemas"]
    for name in ("SubmissionCreated", "Submission"):
        schema = schemas[name]
        assert {"improved", "released"} <= set(schema["required"])
        assert schema["properties"]["released"]["enum"] == ["this", "best", "none"]
        assert schema["properties"]["improved"]["anyOf"] == [{"type": "boolean"}, {"type": "null"}]
        assert "ladder" in schema["properties"]["improved"]["description"]


def test_a_replayed_upload_gives_the_same_verdict(client, world):
    _upload(client, world, 0.8, seed=1)
    data = world.predictions("test-u", accuracy=0.55, seed=2)
    headers = world.headers("member") | {"Idempotency-Key": "one-upload"}
    answers = [
        client.post(
            "/api/v1/submissions",
            data={"benchmark": "nlvr2", "split": "test-u", "model_name": "m", "file": (io.BytesIO(data), "p.csv")},
            headers=headers,
            content_type="multipart/form-data",
        ).json
        for _ in range(2)
    ]
    assert [(a["improved"], a["released"], a["scores"]) for a in answers] == [(False, "best", answers[0]["scores"])] * 2


# --- the page a browser upload leads to -------------------------------------------------------------------


def _browser_upload(client, app, world, accuracy: float, seed: int) -> str:
    with app.app_context():
        team_id = teams.find_team("Lab").id
    form = {
        "csrf_token": csrf_token(client, "/submit"),
        "team": str(team_id),
        "split": "nlvr2/test-u",
        "model_name": f"model {seed}",
        "file": (io.BytesIO(world.predictions("test-u", accuracy=accuracy, seed=seed)), "predictions.csv"),
    }
    response = client.post("/submit", data=form, content_type="multipart/form-data")
    assert response.status_code == 303, response.get_data(as_text=True)
    return client.get(response.headers["Location"]).get_data(as_text=True)


@pytest.mark.one_backend
def test_the_page_after_an_upload_says_whether_it_beat_the_best(app, client, world):
    """On SQLite alone: the page's words; the verdict's writing under the lock is proved on both above."""
    login(client, "member@example.org", "not-used-here")
    first = _browser_upload(client, app, world, 0.8, seed=1)
    assert "New best" in first and "Did not beat" not in first
    with app.app_context():
        best = visibility.released_scores(db.session.scalar(db.select(Submission)))["all"]["accuracy"]
    worse = _browser_upload(client, app, world, 0.55, seed=2)
    assert f"Did not beat your best ({score_text(best)})" in worse
    assert "New best" not in worse and "<h2>The Ladder's answer</h2>" in worse


def test_an_account_with_no_figure_yet_is_told_why(app, client, world):
    """A team's first file that does not beat what its sender already had through another team: no figure,
    improved false, released none; the page explains."""
    _upload(client, world, 0.9, seed=1)  # through Lab: the account's best
    with app.app_context():
        member = db.session.scalar(db.select(User).where(User.email == "member@example.org"))
        teams.create_team("Side", member)
    response = post_file(
        client, world, "member", world.predictions("test-u", accuracy=0.55, seed=2), split="test-u", team="Side"
    )
    assert response.status_code == 201, response.json
    answer = response.json
    assert (answer["improved"], answer["released"], answer["scores"]) == (False, "none", None)
    login(client, "member@example.org", "not-used-here")
    page = client.get(f"/submissions/{answer['id']}").get_data(as_text=True)
    assert "released no figure" in page


@pytest.mark.one_backend
def test_a_maintainers_page_shows_the_verdict_the_team_got(app, client, world):
    """On SQLite alone: the page's words; the verdict's writing under the lock is proved on both above."""
    _upload(client, world, 0.8, seed=1)
    worse = _upload(client, world, 0.55, seed=2)
    login(client, "admin@example.org", "not-used-here")
    page = client.get(f"/submissions/{worse['id']}").get_data(as_text=True)
    assert "Did not beat the team&#39;s best" in page
