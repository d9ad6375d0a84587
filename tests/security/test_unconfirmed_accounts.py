"""Unconfirmed means unconfirmed (issue 35, finding 4): an account that never confirmed its address may look
around and confirm, but not make teams, tokens or invitations, join, unpublish or name itself on a team's page
(nor may a maintainer make it a token); a name it squats is released after 7 days, `flask users
prune-unconfirmed` (daily, from the shipped systemd timer) removes it and the teams it holds alone, and neither a
cookie kept from a pruned account nor a reset link it asked for serves the account given its id next.

Each test reproduces what a red team found in issue 35 (FAILS: what the old code did) and guards the fix."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from app.db import db
from app.models import ApiToken, AuditEvent, Invite, Membership, Submission, Team, User, utcnow
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.people import accounts, teams
from tests.support.blind_test_world import binary_file, public_split
from tests.support.browser import login, post_form, register
from tests.support.users import PASSWORD, bearer, make_token, make_user

REPO = Path(__file__).resolve().parents[2]


def _refusal(email: str) -> str:
    """The sentence uploads are refused with, for an account whose address is not confirmed."""
    return accounts.NOT_VERIFIED.format(email=email)


def _team_of_squatter(name: str, email: str, *, days_ago: float, alone: bool = True) -> None:
    """A team made, before issue 35, by an account that never confirmed its address, registered `days_ago`."""
    squatter = make_user(email, verified=False)
    squatter.created_at = utcnow() - timedelta(days=days_ago)
    team = Team(name=name, slug=teams.team_slug(name), created_by_id=squatter.id)
    db.session.add(team)
    db.session.add(Membership(user=squatter, team=team))
    if not alone:
        db.session.add(Membership(user=make_user(f"mate-of-{email}"), team=team))
    db.session.commit()


def _scored(user: User, team: Team, gold: bytes, *, published: bool = False) -> int:
    result = submissions.submit(user, team.id, "nlvr2", "dev", Upload(data=binary_file(gold, range(5)), model_name="M"))
    if published:
        submissions.publish(user, result.submission.id, description="a model")
    return result.submission.id


def test_an_unconfirmed_account_may_look_around_and_confirm_but_not_make_teams_tokens_or_invitations_join_or_unpublish(
    app,
):
    """FAILS on the old code: an unconfirmed account made a team ("DeepMind 9ce5b", with a public page), an API
    token and invite links, joined a team by invitation and unpublished a teammate's entry (200). Each is now
    the 403 uploads give, with the same sentence, through the pages and the API alike; pages still open."""
    with app.app_context():
        gold = public_split()
        lab = Team(name="Lab", slug="lab")
        other = Team(name="Other", slug="other")
        db.session.add_all([lab, other])
        db.session.commit()
        lead = make_user("lead@example.org", team=lab)
        newbie = make_user("newbie@example.org", team=lab, verified=False)  # joined before issue 35
        make_user("host@example.org", team=other)
        other_id, newbie_id = other.id, newbie.id
        entry = _scored(lead, lab, gold, published=True)
        invite = teams.create_invite(other, accounts.get_user_by_email("host@example.org"))
        token = make_token(newbie)  # made before issue 35: it still signs in, but cannot unpublish
    client = app.test_client()
    assert login(client, "newbie@example.org", PASSWORD).status_code == 302
    sentence = html.escape(_refusal("newbie@example.org"))

    for path in ("/teams", "/teams/1", "/account", "/leaderboards/nlvr2/dev", "/teams/lab", f"/invites/{invite}"):
        assert client.get(path).status_code == 200, path  # looking around

    attempts = {
        "a team": post_form(client, "/teams", {"name": "DeepMind 9ce5b"}),
        "a token": post_form(client, "/account/tokens", {"name": "script"}, form_page="/account"),
        "an invite link": post_form(client, "/teams/1/invites", form_page="/teams/1"),
        "an invitation": post_form(client, "/teams/1/invites", {"email": "x@example.net"}, form_page="/teams/1"),
        "joining": post_form(client, f"/invites/{invite}"),
        "unpublishing": post_form(client, f"/submissions/{entry}/unpublish", form_page=f"/submissions/{entry}"),
    }
    for what, answer in attempts.items():
        assert answer.status_code == 403, (what, answer.status_code)
        assert sentence in answer.get_data(as_text=True), what
    api = client.post(f"/api/v1/submissions/{entry}/unpublish", headers=bearer(token))
    assert api.status_code == 403 and api.get_json()["error"] == _refusal("newbie@example.org")

    with app.app_context():
        assert db.session.scalar(db.select(Team).where(Team.name == "DeepMind 9ce5b")) is None
        assert db.session.scalar(db.select(db.func.count()).select_from(ApiToken)) == 1
        assert db.session.scalar(db.select(db.func.count()).select_from(Invite)) == 1
        assert not accounts.get_user_by_email("newbie@example.org").is_member(other_id)
        assert db.session.get(Submission, entry).published_at is not None

    with app.app_context():  # confirmed (the mailed link, or a reset): all of it opens
        db.session.get(User, newbie_id).email_verified_at = utcnow()
        db.session.commit()
    assert post_form(client, "/teams", {"name": "DeepMind 9ce5b"}).status_code == 302
    assert post_form(client, f"/invites/{invite}").status_code == 302


def test_maintainers_cannot_make_a_token_for_an_unconfirmed_account_either(app, runner):
    with app.app_context():
        make_user("newbie@example.org", verified=False)
    result = runner.invoke(args=["tokens", "create", "newbie@example.org"])
    assert result.exit_code == 2 and _refusal("newbie@example.org") in result.output


@pytest.mark.postgres(reason="an account's age compared in SQL: timezone-aware on PostgreSQL, naive on SQLite")
def test_a_name_squatted_by_an_account_never_confirmed_within_7_days_is_released_to_whoever_wants_it(app):
    """FAILS on the old code: "DeepMind 9ce5b" and every look-alike stayed refused to the real owner for good.
    Now a team made by an account that did not confirm its address within 7 days, with no submission and no
    other member, gives way (audited) when its name is wanted; younger ones, and teams with a submission or
    another member, still hold theirs."""
    with app.app_context():
        gold = public_split()
        _team_of_squatter("DeepMind 9ce5b", "squat1@example.net", days_ago=8)
        _team_of_squatter("OpenAI 9ce5b", "squat2@example.net", days_ago=6)  # not yet 7 days
        _team_of_squatter("Anthropic 9ce5b", "squat3@example.net", days_ago=8, alone=False)
        _team_of_squatter("Mistral 9ce5b", "squat4@example.net", days_ago=8)
        mistral = db.session.scalar(db.select(Team).where(Team.name == "Mistral 9ce5b"))
        _scored(make_user("worker@example.org", team=mistral), mistral, gold)
        owner = make_user("owner@example.org")

        made = teams.create_team("DEEPMIND  9CE5B", owner)  # a look-alike of the squatted name
        assert made.slug == "deepmind-9ce5b"  # the page's address is free again too
        assert db.session.scalar(db.select(Team).where(Team.name == "DeepMind 9ce5b")) is None
        (event_,) = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "team.release"))
        assert event_.target == "team DeepMind 9ce5b"
        assert json.loads(event_.details)["created_by"] == "squat1@example.net"

        second = make_user("second@example.org")
        for held in ("OpenAI 9ce5b", "Anthropic 9ce5b", "Mistral 9ce5b"):
            with pytest.raises(teams.Conflict):
                teams.create_team(held, second)
        assert db.session.scalar(db.select(db.func.count()).select_from(Team)) == 4


@pytest.mark.postgres(reason="an account's age compared in SQL: timezone-aware on PostgreSQL, naive on SQLite")
def test_prune_unconfirmed_removes_accounts_never_confirmed_and_the_teams_they_hold_alone_and_audits_it(app, runner):
    with app.app_context():
        gold = public_split()
        _team_of_squatter("Squat", "gone@example.net", days_ago=8)
        _team_of_squatter("Shared", "member@example.net", days_ago=9, alone=False)
        _team_of_squatter("Fresh", "fresh@example.net", days_ago=2)
        old_hand = make_user("oldhand@example.net", verified=False)  # uploaded before addresses were checked
        old_hand.created_at = utcnow() - timedelta(days=30)
        lab = Team(name="Lab", slug="lab")
        db.session.add_all([lab, Membership(user=old_hand, team=lab)])
        db.session.commit()
        old_hand.email_verified_at = utcnow()
        _scored(old_hand, lab, gold)
        old_hand.email_verified_at = None
        confirmed = make_user("confirmed@example.org")
        confirmed.created_at = utcnow() - timedelta(days=30)
        db.session.commit()

    dry = runner.invoke(args=["users", "prune-unconfirmed", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would remove team 'Squat'" in dry.output and "would remove account gone@example.net" in dry.output
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count()).select_from(User)) == 6
        assert db.session.scalar(db.select(db.func.count()).select_from(AuditEvent)) == 0

    result = runner.invoke(args=["users", "prune-unconfirmed"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "removed team 'Squat'",
        "removed account gone@example.net",
        "removed account member@example.net",
        "kept account oldhand@example.net: it has submissions",
        "removed 1 teams and 2 accounts never confirmed",
    ]
    with app.app_context():
        assert set(db.session.scalars(db.select(User.email))) == {
            "mate-of-member@example.net",
            "fresh@example.net",
            "oldhand@example.net",
            "confirmed@example.org",
        }
        assert set(db.session.scalars(db.select(Team.name))) == {"Shared", "Fresh", "Lab"}
        shared = db.session.scalar(db.select(Team).where(Team.name == "Shared"))
        assert shared.created_by_id is None and len(shared.memberships) == 1
        assert sorted(db.session.scalars(db.select(AuditEvent.action))) == ["team.release", "user.prune", "user.prune"]
        assert teams.create_team("Squat", accounts.get_user_by_email("confirmed@example.org")).slug == "squat"


def test_the_prune_runs_daily_from_the_shipped_systemd_timer():
    service = (REPO / "serving/systemd/holdout-prune.service").read_text()
    timer = (REPO / "serving/systemd/holdout-prune.timer").read_text()
    assert re.search(r"^ExecStart=\S+/flask --app wsgi users prune-unconfirmed$", service, re.M)
    assert re.search(r"^OnCalendar=daily$", timer, re.M) and "WantedBy=timers.target" in timer


def test_a_cookie_kept_from_a_pruned_account_does_not_sign_in_the_account_given_its_id_next(app, runner):
    """FAILS on the old code (SQLite): an attacker logs in with a throwaway account and keeps the cookie; the
    daily `users prune-unconfirmed` removes the account, SQLite gives its id to the next account registered,
    and the kept cookie (user id, session generation 0: every new account's) is that account's session: its
    address, its teams, and once confirmed its uploads and API tokens."""
    with app.app_context():
        make_user("old@example.org")
        throwaway = make_user("throwaway@example.net", verified=False)
        throwaway_id = throwaway.id
    attacker = app.test_client()
    assert login(attacker, "throwaway@example.net", PASSWORD).status_code == 302
    with app.app_context():
        db.session.get(User, throwaway_id).created_at = utcnow() - timedelta(days=8)
        db.session.commit()
    pruned = runner.invoke(args=["users", "prune-unconfirmed"])
    assert "removed account throwaway@example.net" in pruned.output, pruned.output

    assert register(app.test_client(), "newcomer@example.org", "a fresh passphrase").status_code == 200
    # SQLite has given the newcomer the removed account's id (PostgreSQL's sequence never would).
    page = attacker.get("/account")
    assert page.status_code == 302, "the kept cookie signed in as the newcomer"
    assert "newcomer@example.org" not in page.get_data(as_text=True)
    assert login(app.test_client(), "newcomer@example.org", "a fresh passphrase").status_code == 302


def test_a_reset_link_asked_for_by_a_pruned_account_does_not_reset_the_account_given_its_id_next(app, runner):
    """FAILS on the old code (SQLite): the reset link carries the account's id and reset generation, 0 for every
    new account; asked for by a throwaway account just before the prune removes it, it reset the password of
    the account registered next under the same id."""
    from app.services.people import signed_links

    with app.app_context():
        make_user("old@example.org")
        throwaway = make_user("throwaway@example.net", verified=False)
        throwaway.created_at = utcnow() - timedelta(days=8)
        db.session.commit()
        link = signed_links.sign(signed_links.RESET, {"u": throwaway.id, "g": throwaway.reset_generation})
        throwaway_id = throwaway.id
    assert "removed account" in runner.invoke(args=["users", "prune-unconfirmed"]).output
    assert register(app.test_client(), "newcomer@example.org", "a fresh passphrase").status_code == 200
    with app.app_context():
        assert accounts.get_user_by_email("newcomer@example.org").id == throwaway_id  # SQLite reused it
    assert app.test_client().get(f"/password/reset/{link}").status_code == 422


def test_an_unconfirmed_member_cannot_name_itself_on_the_team_public_page(app):
    """FAILS on the old code: an account never confirmed, in a team from before issue 35 (or added by a
    maintainer), put its name on the team's public page (303, "newbie" listed). Now the 403 uploads give;
    taking one's name off stays open to anyone."""
    with app.app_context():
        lab = Team(name="Lab", slug="lab")
        db.session.add(lab)
        db.session.commit()
        make_user("lead@example.org", team=lab)
        newbie = make_user("newbie@example.org", team=lab, verified=False)
        db.session.get(Membership, (newbie.id, lab.id)).shown = False
        db.session.commit()
        team_id = lab.id
    client = app.test_client()
    assert login(client, "newbie@example.org", PASSWORD).status_code == 302

    named = post_form(client, f"/teams/{team_id}/shown", {"shown": "yes"}, form_page=f"/teams/{team_id}")
    assert named.status_code == 403
    assert html.escape(accounts.NOT_VERIFIED.format(email="newbie@example.org")) in named.get_data(as_text=True)
    assert "newbie" not in app.test_client().get("/teams/lab").get_data(as_text=True)  # as the public sees it
    unnamed = post_form(client, f"/teams/{team_id}/shown", {"shown": "no"}, form_page=f"/teams/{team_id}")
    assert unnamed.status_code == 303
