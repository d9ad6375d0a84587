"""API v1: submitting, following and publishing submissions, and every error the interface promises."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app import create_app
from app.db import db
from app.models import Submission
from app.services import catalog
from app.services.people import accounts
from tests.conftest import make_config
from tests.support.api_world import build_world, post_file, stored_submission

pytestmark = pytest.mark.postgres(
    reason=(
        "quotas serialise on SQLite's BEGIN IMMEDIATE vs PostgreSQL's SELECT ... FOR UPDATE "
        "(services/intake/quotas.py); probe summaries use per-dialect upserts (services/blind_test/integrity.py)"
    )
)


@pytest.fixture
def world(app):
    return build_world(app)


def _invalid_file(world) -> bytes:
    """A valid file whose third line names an identifier the split does not have."""
    lines = world.predictions().decode().splitlines()
    lines[2] = "dev-99999-0-0,True"
    return ("\n".join(lines) + "\n").encode()


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.json
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["details"], list)
    return body


# --- the happy path ------------------------------------------------------------------------------------


def test_submit_list_get_publish_leaderboard_unpublish(app, client, world):
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=5)
    response = post_file(
        client,
        world,
        "member",
        world.predictions(accuracy=0.8),
        model_name="BigNet",
        paper_url="https://example.org/paper",
    )
    assert response.status_code == 201, response.json
    created = response.json
    assert created["benchmark"] == "nlvr2" and created["split"] == "dev" and created["team"] == "Lab"
    assert created["status"] == "scored" and created["published"] is False
    assert 65 < created["scores"]["all"]["accuracy"] < 95
    assert set(created["scores"]) >= {"all", "balanced", "unbalanced"}
    assert created["quota"] == {
        "limits": {"per_day": 5, "per_month": None, "total": None},
        "used": {"today": 1, "month": 1, "total": 1},
        "left": {"today": 4, "month": None, "total": None},
    }
    assert response.headers["Location"] == f"/api/v1/submissions/{created['id']}"

    listed = client.get("/api/v1/submissions", headers=world.headers("member")).json["submissions"]
    assert [s["id"] for s in listed] == [created["id"]]
    assert listed[0]["model_name"] == "BigNet"
    assert datetime.fromisoformat(listed[0]["submitted_at"]).utcoffset() == timedelta(0)

    detail = client.get(f"/api/v1/submissions/{created['id']}", headers=world.headers("member")).json
    assert detail["scores"] == created["scores"]
    assert len(detail["sha256"]) == 64 and detail["size"] == len(world.predictions(accuracy=0.8))
    assert detail["errors"] == [] and detail["published_at"] is None and detail["anonymous"] is False
    assert detail["paper_url"] == "https://example.org/paper"

    published = client.post(
        f"/api/v1/submissions/{created['id']}/publish",
        headers=world.headers("member"),
        json={"description": "A big network.", "code_url": "https://example.org/code"},
    )
    assert published.status_code == 200, published.json
    assert published.json["published"] is True and published.json["published_at"]
    assert published.json["description"] == "A big network."

    board = client.get("/api/v1/leaderboards/nlvr2/dev").json
    assert board["benchmark"] == "nlvr2" and board["split"] == "dev" and board["scores_public"] is True
    [entry] = board["entries"]
    assert entry["rank"] == 1 and entry["model_name"] == "BigNet" and entry["team"] == "Lab"
    assert entry["code_url"] == "https://example.org/code"
    accuracy = entry["scores"]["all"]["accuracy"]
    assert accuracy["value"] == created["scores"]["all"]["accuracy"]
    assert accuracy["ci_low"] < accuracy["value"] < accuracy["ci_high"]  # intervals: tests/api/test_leaderboard_api.py

    unpublished = client.post(f"/api/v1/submissions/{created['id']}/unpublish", headers=world.headers("member"))
    assert unpublished.status_code == 200 and unpublished.json["published"] is False
    assert client.get("/api/v1/leaderboards/nlvr2/dev").json["entries"] == []


def test_anonymous_entry_hides_the_team(client, world):
    created = post_file(client, world, "member", world.predictions(), anonymous="on", description="described").json
    client.post(f"/api/v1/submissions/{created['id']}/publish", headers=world.headers("member"))
    [entry] = client.get("/api/v1/leaderboards/nlvr2/dev").json["entries"]
    assert entry["team"] is None and entry["model_name"] == "my-model"


@pytest.mark.one_backend
def test_benchmarks_are_public(client, world):
    """A read of the catalogue: no quota, lock or upsert, so SQLite alone."""
    response = client.get("/api/v1/benchmarks")
    assert response.status_code == 200
    [benchmark] = response.json["benchmarks"]
    assert benchmark["slug"] == "nlvr2" and benchmark["task_type"] == "nlvr2"
    assert benchmark["paper_url"] == "https://example.org/nlvr2"
    assert benchmark["splits"] == [
        {"slug": "dev", "name": "Dev", "hidden": False, "examples": 160, "open": True, "feedback": "full"},
        {
            "slug": "test-u",
            "name": "Test-U",
            "hidden": True,
            "examples": 160,
            "open": True,
            "feedback": "ladder",
        },  # a hidden split's default
    ]


def test_team_can_be_named_by_id_or_name(app, client, world):
    with app.app_context():
        from app.services.people import teams

        lab_id = teams.find_team("Lab").id
    assert post_file(client, world, "member", world.predictions(seed=1), team=str(lab_id)).status_code == 201
    assert post_file(client, world, "member", world.predictions(seed=2), team="Lab").status_code == 201


def test_hidden_split_with_feedback_none_returns_no_scores(app, client, world):
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="none")
    response = post_file(client, world, "member", world.predictions("test-u"), split="test-u", description="d")
    assert response.status_code == 201, response.json
    assert response.json["scores"] is None and response.json["status"] == "scored"
    submission_id = response.json["id"]
    assert client.get(f"/api/v1/submissions/{submission_id}", headers=world.headers("member")).json["scores"] is None
    client.post(f"/api/v1/submissions/{submission_id}/publish", headers=world.headers("member"))
    board = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    assert board["scores_public"] is False and board["entries"] == []


def test_rejected_file_is_stored_with_its_problems_and_costs_no_quota(app, client, world):
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=1)
    rejected = _error(post_file(client, world, "member", _invalid_file(world)), 422)
    assert "line 3" in rejected["error"]
    [listed] = client.get("/api/v1/submissions", headers=world.headers("member")).json["submissions"]
    assert listed["status"] == "rejected"
    detail = client.get(f"/api/v1/submissions/{listed['id']}", headers=world.headers("member")).json
    assert detail["scores"] is None
    assert any(p["line"] == 3 and "dev-99999-0-0" in p["message"] for p in detail["errors"])

    accepted = post_file(client, world, "member", world.predictions())
    assert accepted.status_code == 201, accepted.json
    assert accepted.json["quota"]["used"]["today"] == 1 and accepted.json["quota"]["left"]["today"] == 0
    with app.app_context():
        statuses = sorted(s.status for s in db.session.scalars(db.select(Submission)))
    assert statuses == ["rejected", "scored"]


def test_publishing_a_rejected_submission_conflicts(client, world):
    post_file(client, world, "member", _invalid_file(world))
    [listed] = client.get("/api/v1/submissions", headers=world.headers("member")).json["submissions"]
    body = _error(
        client.post(
            f"/api/v1/submissions/{listed['id']}/publish", headers=world.headers("member"), json={"description": "x"}
        ),
        409,
    )
    assert "scored" in body["error"]


# --- errors --------------------------------------------------------------------------------------------


def test_422_names_the_line_and_identifier(client, world):
    body = _error(post_file(client, world, "member", _invalid_file(world)), 422)
    line3 = [p for p in body["details"] if p["line"] == 3]
    assert line3 and "line 3" in line3[0]["message"] and "dev-99999-0-0" in line3[0]["message"]


@pytest.mark.one_backend
@pytest.mark.parametrize("missing", ["model_name", "benchmark", "split"])
def test_422_missing_field(client, world, missing):
    """Refused while reading the form, before any quota or row: SQLite alone."""
    body = _error(post_file(client, world, "member", world.predictions(), **{missing: None}), 422)
    assert missing in body["error"]
    assert {"line": None, "message": f"{missing} is required"} in body["details"]


@pytest.mark.one_backend
def test_422_missing_file(client, world):
    """Refused while reading the form, before any quota or row: SQLite alone."""
    body = _error(post_file(client, world, "member", None), 422)
    assert "file" in body["error"]


@pytest.mark.one_backend
def test_422_blank_model_name_and_bad_urls_and_flags(client, world):
    """Refused while reading the form, before any quota or row: SQLite alone."""
    assert (
        "model_name" in _error(post_file(client, world, "member", world.predictions(), model_name="  "), 422)["error"]
    )
    assert (
        "paper_url"
        in _error(post_file(client, world, "member", world.predictions(), paper_url="ftp://x"), 422)["error"]
    )
    assert (
        "anonymous" in _error(post_file(client, world, "member", world.predictions(), anonymous="maybe"), 422)["error"]
    )


@pytest.mark.one_backend
def test_422_publish_needs_description_or_paper(app, client, world):
    """Refused while reading the body, before the publish writes anything: SQLite alone."""
    submission_id = stored_submission(app, world)
    body = _error(
        client.post(f"/api/v1/submissions/{submission_id}/publish", headers=world.headers("member"), json={}), 422
    )
    assert "description" in body["error"] and "paper_url" in body["error"]
    body = _error(
        client.post(
            f"/api/v1/submissions/{submission_id}/publish",
            headers=world.headers("member"),
            data="[1, 2]",
            content_type="application/json",
        ),
        422,
    )
    assert "JSON object" in body["error"]
    body = _error(
        client.post(
            f"/api/v1/submissions/{submission_id}/publish", headers=world.headers("member"), json={"description": 5}
        ),
        422,
    )
    assert "description" in body["error"]


def test_429_says_when_the_next_slot_opens(app, client, world):
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=1)
    assert post_file(client, world, "member", world.predictions(seed=1)).status_code == 201
    response = post_file(client, world, "member", world.predictions(seed=2))
    body = _error(response, 429)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert datetime.fromisoformat(body["retry_at"]) == tomorrow
    assert "next slot opens" in body["error"] and tomorrow.strftime("%Y-%m-%d") in body["error"]
    seconds = int(response.headers["Retry-After"])
    assert 0 < seconds <= 86400 + 1
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(Submission.id))) == 1


def test_429_total_used_up_has_no_retry_time(app, client, world):
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", total=0)
    response = post_file(client, world, "member", world.predictions())
    body = _error(response, 429)
    assert body["retry_at"] is None and "Retry-After" not in response.headers
    assert "all 0 submissions" in body["error"]


def test_409_closed_split(app, client, world):
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", is_open=False)
    body = _error(post_file(client, world, "member", world.predictions()), 409)
    assert "closed" in body["error"]


@pytest.mark.one_backend
@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"benchmark": "nope"}, "unknown benchmark 'nope'"),
        ({"split": "nope"}, "unknown split 'nope'"),
    ],
)
def test_404_unknown_benchmark_or_split(client, world, fields, named):
    """Refused on looking up the slug, before any quota or row: SQLite alone."""
    body = _error(post_file(client, world, "member", world.predictions(), **fields), 404)
    assert named in body["error"]


@pytest.mark.one_backend
@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/api/v1/leaderboards/nope/dev", "unknown benchmark 'nope'"),
        ("/api/v1/leaderboards/nlvr2/nope", "unknown split 'nope'"),
    ],
)
def test_404_leaderboard(client, world, path, named):
    """Refused on looking up the slug: SQLite alone."""
    assert named in _error(client.get(path), 404)["error"]


def test_404_submission_out_of_range(client, world):
    _error(client.get("/api/v1/submissions/99999999999999999999999", headers=world.headers("member")), 404)
    _error(client.get("/api/v1/submissions/12345", headers=world.headers("member")), 404)


@pytest.mark.one_backend
def test_403_other_team(client, world):
    """Refused on membership, before any quota or row: SQLite alone."""
    body = _error(post_file(client, world, "other", world.predictions(), team="Lab"), 403)
    assert "'Lab'" in body["error"]


@pytest.mark.one_backend
def test_403_user_without_team(client, world):
    """Refused on membership, before any quota or row: SQLite alone."""
    body = _error(post_file(client, world, "admin", world.predictions()), 403)
    assert "not a member of any team" in body["error"]


@pytest.mark.one_backend
def test_422_several_teams_must_name_one(app, client, world):
    """Refused on membership, before any quota or row: SQLite alone."""
    with app.app_context():
        from app.services.people import teams

        member = accounts.get_user_by_email("member@example.org")
        teams.create_team("Second", member)
    body = _error(post_file(client, world, "member", world.predictions()), 422)
    assert "team" in body["error"]


@pytest.mark.one_backend
@pytest.mark.parametrize(
    ("header", "says"),
    [
        (None, "authentication required"),
        ("Token abc", "malformed"),
        ("Bearer", "malformed"),
        ("Bearer    ", "malformed"),
        ("Bearer hd_not-a-real-token", "invalid or has been revoked"),
    ],
)
def test_401(client, world, header, says):
    """Refused on the header, before any quota or row: SQLite alone."""
    headers = {"Authorization": header} if header is not None else {}
    response = client.get("/api/v1/submissions", headers=headers)
    body = _error(response, 401)
    assert says in body["error"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.one_backend
def test_401_revoked_token(app, client, world):
    """Token checks are plain reads and one update: SQLite alone."""
    assert client.get("/api/v1/submissions", headers=world.headers("member")).status_code == 200
    with app.app_context():
        member = accounts.get_user_by_email("member@example.org")
        accounts.revoke_token(member, member.tokens[0].id)
    body = _error(client.get("/api/v1/submissions", headers=world.headers("member")), 401)
    assert "revoked" in body["error"]
    assert _error(post_file(client, world, "member", world.predictions()), 401)


@pytest.mark.one_backend
def test_scheme_name_is_case_insensitive(client, world):
    """A header's parsing: SQLite alone."""
    token = world.tokens["member"]
    assert client.get("/api/v1/submissions", headers={"Authorization": f"bearer {token}"}).status_code == 200


@pytest.mark.one_backend
def test_session_cookie_does_not_authenticate(app, client, world):
    """Which credentials the API reads: SQLite alone."""
    with app.app_context():
        member_id = accounts.get_user_by_email("member@example.org").id
    with client.session_transaction() as session:
        session["_user_id"] = str(member_id)
        session["_fresh"] = True
    assert client.get("/api/v1/submissions").status_code == 401


@pytest.fixture
def small_app(tmp_path, database_url):
    """An app that accepts prediction files of at most 1 MB (the request body is still allowed more)."""
    app = create_app(make_config(tmp_path, database_url) | {"MAX_UPLOAD_MB": 1})
    yield app
    with app.app_context():
        db.engine.dispose()


def _big_file(world, megabytes: float) -> bytes:
    data = world.predictions()
    return data + b"# padding\n" * int(megabytes * 1048576 / 10)


@pytest.mark.one_backend
def test_413_file_over_the_upload_limit(small_app):
    """Refused while reading the body, before any quota or row: SQLite alone."""
    world = build_world(small_app)
    client = small_app.test_client()
    body = _error(post_file(client, world, "member", _big_file(world, 1.2)), 413)
    assert "1 MB" in body["error"]
    with small_app.app_context():
        assert db.session.scalar(db.select(db.func.count(Submission.id))) == 0


@pytest.mark.one_backend
def test_413_body_over_the_request_limit(small_app):
    """Refused while reading the body, before any quota or row: SQLite alone."""
    small_app.config["MAX_CONTENT_LENGTH"] = 1048576 + 65536
    world = build_world(small_app)
    client = small_app.test_client()
    body = _error(post_file(client, world, "member", _big_file(world, 1.5)), 413)
    assert "1 MB" in body["error"]
