"""What the command-line client needs from API v1: who a token belongs to (GET /me) and a benchmark's
default board (GET /leaderboards/<benchmark>)."""

from __future__ import annotations

from app.services import catalog
from tests.support.api_world import build_world, stored_submission


def test_me_names_the_user_and_their_teams(app, client):
    world = build_world(app)
    me = client.get("/api/v1/me", headers=world.headers("member")).json
    quotas = me.pop("quotas")  # what is left on each open split (tests/api/test_team_self_service.py)
    assert me == {
        "email": "member@example.org",
        "email_verified": True,
        "maintainer": False,
        "teams": [{"id": 1, "name": "Lab"}],
    }
    assert [(q["split"], q["team"]) for q in quotas] == [("dev", "Lab"), ("test-u", "Lab")]
    admin = client.get("/api/v1/me", headers=world.headers("admin")).json
    assert admin["maintainer"] is True and admin["teams"] == []
    refused = client.get("/api/v1/me")
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/api/v1/me", headers={"Authorization": "Bearer hd_not-a-token"}).status_code == 401


def test_default_board_is_the_landing_split(app, client):
    """The blind test, else the first split (adding a split never moves the landing page)."""
    world = build_world(app)
    stored_submission(app, world, split="test-u", publish=True)
    board = client.get("/api/v1/leaderboards/nlvr2").json
    assert board["split"] == "test-u"
    assert board == client.get("/api/v1/leaderboards/nlvr2/test-u").json

    with app.app_context():
        catalog.add_benchmark("plain", "nlvr2", "Plain")
        catalog.add_split("plain", "dev", world.gold["dev"], name="Dev")
        catalog.add_split("plain", "test-p", world.gold["dev"], name="Test-P")
        catalog.add_benchmark("empty", "nlvr2", "Empty")
    assert client.get("/api/v1/leaderboards/plain").json["split"] == "dev"
    missing = client.get("/api/v1/leaderboards/empty")
    assert missing.status_code == 404 and "no splits" in missing.json["error"]
    assert client.get("/api/v1/leaderboards/nope").status_code == 404
