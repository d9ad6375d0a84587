"""Teams, invite links and who may open which account page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from werkzeug.security import generate_password_hash

from app.db import db
from app.models import ApiToken, Invite, Membership, User, utcnow
from app.services.errors import InvalidInput, NotFound
from app.services.people import accounts, teams
from app.services.people.accounts import token_digest
from tests.conftest import CHEAP_HASH
from tests.support.browser import login, post_form

pytestmark = pytest.mark.postgres(
    reason=(
        "team name keys are unique VARCHAR columns (case and length differ by dialect); invites use timestamptz expiry"
    )
)

PASSWORD = "correct horse battery"
INVITE_URL = re.compile(r'value="(http://localhost/invites/([A-Za-z0-9_.-]+))"')


def make_user(app, email: str) -> int:
    with app.app_context():
        return accounts.create_user(email, PASSWORD).id


def make_team(app, name: str, *emails: str) -> int:
    with app.app_context():
        return teams.create_team(name, members=[accounts.get_user_by_email(e) for e in emails]).id


def member_ids(app, team_id: int) -> set[int]:
    with app.app_context():
        return {m.user_id for m in db.session.scalars(db.select(Membership).where(Membership.team_id == team_id))}


def client_for(app, email: str):
    client = app.test_client()
    assert login(client, email, PASSWORD).status_code == 302
    return client


def create_invite_link(client, team_id: int) -> tuple[str, str]:
    response = post_form(client, f"/teams/{team_id}/invites", form_page=f"/teams/{team_id}")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    url, token = INVITE_URL.search(response.get_data(as_text=True)).groups()
    return url, token


def test_create_team_from_the_page(app):
    make_user(app, "ada@example.org")
    ada = client_for(app, "ada@example.org")
    assert "not in a team yet" in ada.get("/teams").get_data(as_text=True)
    response = post_form(ada, "/teams", {"name": "  Aurora Lab "})
    assert response.status_code == 302
    team_path = response.headers["Location"]
    page = ada.get(team_path).get_data(as_text=True)
    assert "Aurora Lab" in page and "ada@example.org" in page
    assert "Aurora Lab" in ada.get("/teams").get_data(as_text=True)

    again = post_form(ada, "/teams", {"name": "Aurora Lab"})
    assert again.status_code == 409 and "already exists" in again.get_data(as_text=True)
    assert post_form(ada, "/teams", {"name": ""}).status_code == 400


def test_invite_link_joins_a_second_user_exactly_once(app):
    for email in ("ada@example.org", "bob@example.org", "cy@example.org"):
        make_user(app, email)
    team_id = make_team(app, "Aurora Lab", "ada@example.org")
    ada, bob, cy = (client_for(app, e) for e in ("ada@example.org", "bob@example.org", "cy@example.org"))

    url, token = create_invite_link(ada, team_id)
    with app.app_context():
        invite = db.session.scalar(db.select(Invite))
        assert invite.token_hash == token_digest(token) and token not in invite.token_hash
    # The link is shown once: the team page does not show it again.
    assert token not in ada.get(f"/teams/{team_id}").get_data(as_text=True)

    path = url.removeprefix("http://localhost")
    page = bob.get(path)
    assert page.status_code == 200 and "Join Aurora Lab?" in page.get_data(as_text=True)
    assert page.headers["Referrer-Policy"] == "no-referrer"
    response = post_form(bob, path)
    assert response.status_code == 302 and response.headers["Location"] == f"/teams/{team_id}"
    assert bob.get(f"/teams/{team_id}").status_code == 200

    second = cy.get(path)
    assert second.status_code == 404
    assert "already been used" in second.get_data(as_text=True)
    assert post_form(cy, path, form_page="/teams").status_code == 404
    assert post_form(bob, path, form_page="/teams").status_code == 404
    with app.app_context():
        emails = {u.email for u in teams.members(teams.get_team(team_id))}
    assert emails == {"ada@example.org", "bob@example.org"}


def test_anonymous_invite_goes_through_login_and_back(app):
    make_user(app, "ada@example.org")
    make_user(app, "bob@example.org")
    team_id = make_team(app, "Aurora Lab", "ada@example.org")
    with app.app_context():
        token = teams.create_invite(teams.get_team(team_id), accounts.get_user_by_email("ada@example.org"))
    client = app.test_client()
    response = client.get(f"/invites/{token}")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/login?next=/invites/{token}"
    response = post_form(client, response.headers["Location"], {"email": "bob@example.org", "password": PASSWORD})
    assert response.headers["Location"] == f"/invites/{token}"
    assert post_form(client, f"/invites/{token}").status_code == 302
    assert client.get(f"/teams/{team_id}").status_code == 200


def test_expired_and_unknown_invites_are_404(app):
    ada_id = make_user(app, "ada@example.org")
    make_user(app, "bob@example.org")
    team_id = make_team(app, "Aurora Lab", "ada@example.org")
    with app.app_context():
        token = teams.create_invite(teams.get_team(team_id), accounts.get_user_by_email("ada@example.org"))
        invite = db.session.scalar(db.select(Invite))
        assert abs(
            invite.expires_at.replace(tzinfo=None) - (utcnow() + timedelta(days=7)).replace(tzinfo=None)
        ) < timedelta(minutes=1)
        invite.expires_at = utcnow() - timedelta(seconds=1)
        db.session.commit()
    bob = client_for(app, "bob@example.org")
    assert bob.get(f"/invites/{token}").status_code == 404
    assert post_form(bob, f"/invites/{token}", form_page="/teams").status_code == 404
    assert bob.get("/invites/not-a-real-token").status_code == 404
    assert member_ids(app, team_id) == {ada_id}


def test_accepting_as_a_member_still_uses_the_invite(ctx):
    ada = accounts.create_user("ada@example.org", PASSWORD)
    team = teams.create_team("Aurora Lab", ada)
    token = teams.create_invite(team, ada)
    assert teams.accept_invite(token, ada).id == team.id
    assert [u.email for u in teams.members(team)] == ["ada@example.org"]
    with pytest.raises(NotFound, match="already been used"):
        teams.accept_invite(token, ada)
    invite = db.session.scalar(db.select(Invite))
    assert invite.used_at is not None and invite.used_by_id == ada.id


def test_only_members_create_invites(ctx):
    ada = accounts.create_user("ada@example.org", PASSWORD)
    bob = accounts.create_user("bob@example.org", PASSWORD)
    team = teams.create_team("Aurora Lab", ada)
    with pytest.raises(NotFound):
        teams.create_invite(team, bob)
    with pytest.raises(NotFound):
        teams.leave_team(team, bob)
    with pytest.raises(InvalidInput):
        teams.create_team(" ")


def test_create_team_and_add_member_services(ctx):
    ada = accounts.create_user("ada@example.org", PASSWORD)
    bob = accounts.create_user("bob@example.org", PASSWORD)
    team = teams.create_team("Aurora Lab", ada, members=[ada, bob])
    assert [u.email for u in teams.members(team)] == ["ada@example.org", "bob@example.org"]
    plain = teams.create_team("Solo")  # as the demo does: no members
    teams.add_member(plain, bob)
    teams.add_member(plain, bob)  # a second time changes nothing
    assert [u.email for u in teams.members(plain)] == ["bob@example.org"]
    assert teams.find_team("Solo").id == plain.id and teams.get_team(plain.id).name == "Solo"
    with pytest.raises(NotFound):
        teams.get_team(9999)


def test_leave_team(app):
    make_user(app, "ada@example.org")
    make_user(app, "bob@example.org")
    team_id = make_team(app, "Aurora Lab", "ada@example.org", "bob@example.org")
    bob = client_for(app, "bob@example.org")
    response = post_form(bob, f"/teams/{team_id}/leave", form_page=f"/teams/{team_id}")
    assert response.status_code == 302 and response.headers["Location"] == "/teams"
    assert "You left Aurora Lab." in bob.get("/teams").get_data(as_text=True)
    assert bob.get(f"/teams/{team_id}").status_code == 404
    assert len(member_ids(app, team_id)) == 1


def test_non_member_gets_404(app):
    make_user(app, "ada@example.org")
    make_user(app, "eve@example.org")
    team_id = make_team(app, "Aurora Lab", "ada@example.org")
    eve = client_for(app, "eve@example.org")
    assert eve.get(f"/teams/{team_id}").status_code == 404
    assert eve.get("/teams/9999").status_code == 404
    assert post_form(eve, f"/teams/{team_id}/invites", form_page="/teams").status_code == 404
    assert post_form(eve, f"/teams/{team_id}/leave", form_page="/teams").status_code == 404
    assert "Aurora Lab" not in eve.get("/teams").get_data(as_text=True)


# --- who may open what ---------------------------------------------------------------------------------

# A hash computed once, and a cheap one (as tests/conftest.py makes every test's): the access matrix needs
# many users and logins, and each scrypt hash or check takes a while.
_HASH = generate_password_hash(PASSWORD, method=CHEAP_HASH)

ROLES = ("anonymous", "other", "member")
# (method, path, form data, expected status for anonymous / another user / a team member)
ROUTES = [
    ("GET", "/login", None, (200, 200, 200)),
    ("GET", "/register", None, (200, 200, 200)),
    ("POST", "/logout", {}, (302, 302, 302)),
    ("GET", "/teams", None, (302, 200, 200)),
    ("POST", "/teams", {"name": "Another team"}, (302, 302, 302)),
    ("GET", "/teams/{team}", None, (302, 404, 200)),
    ("POST", "/teams/{team}/invites", {}, (302, 404, 200)),
    ("POST", "/teams/{team}/leave", {}, (302, 404, 302)),
    ("GET", "/invites/{invite}", None, (302, 200, 200)),
    ("POST", "/invites/{invite}", {}, (302, 302, 302)),
    ("GET", "/account", None, (302, 200, 200)),
    ("POST", "/account/tokens", {"name": "laptop"}, (302, 200, 200)),
    ("POST", "/account/tokens/{token}/revoke", {}, (302, 404, 302)),
]


@pytest.mark.one_backend
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "path", "data", "expected"), ROUTES, ids=[f"{m} {p}" for m, p, _, _ in ROUTES])
def test_access(app, role, method, path, data, expected):
    """On SQLite alone: who may do what is decided before any query a dialect could answer differently."""
    with app.app_context():
        member = User(email="member@example.org", password_hash=_HASH, email_verified_at=utcnow())
        other = User(email="other@example.org", password_hash=_HASH, email_verified_at=utcnow())
        db.session.add_all([member, other])
        db.session.commit()
        team = teams.create_team("Aurora Lab", member)
        invite = teams.create_invite(team, member)
        token, _ = accounts.create_token(member, "script")
        ids = {"team": team.id, "invite": invite, "token": token.id, "member": member.id}
    client = app.test_client()
    if role != "anonymous":
        assert login(client, f"{role}@example.org", PASSWORD).status_code == 302
    url = path.format(**ids)
    # /login has a token for everyone
    response = client.get(url) if method == "GET" else post_form(client, url, data, form_page="/login")
    status = expected[ROLES.index(role)]
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    if role == "anonymous" and status == 302:
        assert response.headers["Location"].startswith("/login") or url == "/logout"
    if status == 404:
        # Nothing about the team or the token leaks into the refusal.
        assert "Aurora Lab" not in response.get_data(as_text=True)
    with app.app_context():
        # Only the member's own actions change the member's team or token.
        still_member = db.session.get(Membership, (ids["member"], ids["team"])) is not None
        assert still_member == (not (role == "member" and path.endswith("/leave")))
        revoked = db.session.get(ApiToken, ids["token"]).revoked_at is not None
        assert revoked == (role == "member" and path.endswith("/revoke"))
