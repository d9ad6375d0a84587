"""Issue 35, findings 4 and 7 and the demo's port: throwaway accounts that squat names, addresses that can be
learned, and mailed links that ignore the port the demo serves on.

Each test reproduces what the red team found (FAILS: what the old code did) and guards the fix. Mail goes to a
real SMTP server on loopback (tests/support/smtp_sink.py); jobs run beside the request (JOB_QUEUE=inline).
"""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import event

from app.db import db
from app.models import ApiToken, AuditEvent, Invite, Membership, Submission, Team, User, utcnow
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.people import accounts, teams
from app.settings import Settings
from tests.support.blind_test_world import binary_file, public_split
from tests.support.browser import login, post_form, register
from tests.support.smtp_sink import settled
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


# --- finding 4: unconfirmed means unconfirmed ------------------------------------------------------------


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


# --- finding 7: which addresses have accounts -----------------------------------------------------------


def test_registering_answers_alike_whether_the_address_has_an_account_and_mails_its_owner_instead(
    mail_app, sink, monkeypatch
):
    """FAILS on the old code: "an account with this email already exists" (409) told which addresses had
    accounts. Now both answers are the same page (200, no session), both hash the password; the owner is
    mailed that someone tried (a few times an hour at most), and the account is unchanged."""
    with mail_app.app_context():
        make_user("known@example.org")
    hashed: list[str] = []
    cheap = accounts.generate_password_hash  # the tests' cheap hash (tests/conftest.py)

    def counting(password):
        hashed.append(password)
        return cheap(password)

    monkeypatch.setattr(accounts, "generate_password_hash", counting)

    def ask(address: str):
        client = mail_app.test_client()
        answer = register(client, address, "a fresh passphrase")
        page = re.sub(r'name="csrf_token"[^>]*value="[^"]*"', "", answer.get_data(as_text=True))
        return answer.status_code, page.replace(address, "ADDRESS"), client.get("/account").status_code

    known, new = ask("known@example.org"), ask("new@example.org")
    assert known == new and known[0] == 200 and known[2] == 302, (known[0], new[0])
    assert hashed == ["a fresh passphrase"] * 2

    (taken,) = sink.wait_for("known@example.org")
    assert taken["Subject"] == "Someone tried to register with your address on Holdout"
    assert {"http://localhost/login", "http://localhost/password/forgot"} <= set(sink.links(taken))
    (welcome,) = sink.wait_for("new@example.org")
    assert welcome["Subject"] == "Confirm your email address for Holdout"
    for _ in range(3):
        assert ask("known@example.org") == known
    settled()
    assert len(sink.to("known@example.org")) == 3  # then silence: registering cannot flood a mailbox
    with mail_app.app_context():
        assert db.session.scalar(db.select(db.func.count()).select_from(User)) == 2
    assert login(mail_app.test_client(), "known@example.org", PASSWORD).status_code == 302


@pytest.mark.postgres(reason="the unique address refused at the flush, and the transaction after it, on each dialect")
def test_two_registrations_of_one_new_address_at_once_make_one_account_and_answer_alike(mail_app, sink, monkeypatch):
    """The second of two registrations racing for one address finds it taken only when its row is flushed
    (the unique constraint): it answers like the first and mails the owner; it is never a 500."""
    with mail_app.app_context():
        make_user("racing@example.org")
    lookup, calls = accounts.get_user_by_email, []

    def first_misses(email):  # the other registration commits between this one's look-up and its insert
        calls.append(email)
        return None if len(calls) == 1 else lookup(email)

    monkeypatch.setattr(accounts, "get_user_by_email", first_misses)
    answer = register(mail_app.test_client(), "racing@example.org", "a fresh passphrase")
    assert answer.status_code == 200 and "A mail is on its way to racing@example.org" in answer.get_data(as_text=True)
    assert len(calls) == 2
    (letter,) = sink.wait_for("racing@example.org")
    assert letter["Subject"] == "Someone tried to register with your address on Holdout"
    with mail_app.app_context():
        assert db.session.scalar(db.select(db.func.count()).select_from(User)) == 1


def _statements(app, work) -> list[str]:
    """The SQL statements `work` runs in this thread (jobs beside it run in threads of their own)."""
    seen: list[str] = []
    me = threading.get_ident()

    def note(conn, cursor, statement, parameters, context, executemany):
        if threading.get_ident() == me:
            seen.append(statement)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", note)
    try:
        work()
    finally:
        event.remove(engine, "before_cursor_execute", note)
    return seen


@pytest.mark.postgres(reason="the statements a request runs differ by dialect (the throttle's upsert, BEGIN)")
def test_asking_for_a_reset_does_the_same_work_for_an_address_with_an_account_and_one_without(mail_app, sink):
    """FAILS on the old code: a letter was queued (a job row and its commit) only for a real account, which
    answered about 20 ms slower. Now the request runs the same statements either way: the letter's job looks
    the account up after the answer, and mails only a real one."""
    with mail_app.app_context():
        make_user("known@example.org")
    clients = {address: mail_app.test_client() for address in ("known@example.org", "nobody@example.org")}
    for client in clients.values():
        client.get("/password/forgot")  # the form's page (and its CSRF token) first, outside the measure
    work = {
        address: _statements(mail_app, lambda c=client, a=address: post_form(c, "/password/forgot", {"email": a}))
        for address, client in clients.items()
    }
    assert work["known@example.org"] == work["nobody@example.org"]
    assert any(statement.startswith("INSERT INTO jobs") for statement in work["known@example.org"])
    (letter,) = sink.wait_for("known@example.org")
    assert "/password/reset/" in letter.get_content()
    settled()
    assert sink.to("nobody@example.org") == []


# --- the demo's port ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variables", "environment", "expected"),
    [
        ({"PORT": "8123"}, {}, "http://127.0.0.1:8123"),
        ({"PORT": "8123", "HOST": "0.0.0.0"}, {}, "http://127.0.0.1:8123"),
        ({"PORT": "8123"}, {"SITE_URL": "https://demo.example.org"}, "https://demo.example.org"),
    ],
)
def test_make_run_mails_links_to_the_port_the_demo_serves_on(tmp_path, variables, environment, expected):
    """FAILS on the old code: `make run PORT=8123` served on 8123 and mailed links to 8000. The run target's
    server line is run as make writes it, with a stand-in gunicorn that reports its SITE_URL and --bind."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gunicorn").write_text('#!/bin/sh\nprintf "%s\\n" "$SITE_URL" "$*"\n')
    (fake / "gunicorn").chmod(0o755)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SITE_URL", "HOST", "PORT", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    }
    settings = [f"{name}={value}" for name, value in variables.items()]
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", f"BIN={fake}", *settings],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in printed.splitlines() if "/gunicorn " in line]
    served = subprocess.run(
        ["sh", "-c", line], env={**env, **environment}, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert Settings(site_url=served[0]).link_base == expected
    bind = shlex.split(served[1])
    assert bind[bind.index("--bind") + 1] == f"{variables.get('HOST', '127.0.0.1')}:{variables['PORT']}"
