"""Accounts nobody can borrow (issue 14): every session of a user ends at once on logout, password change
and a maintainer's "sign out everywhere"; the login throttle is kept in the database, so every app that
shares it counts the same attempts; team names that look alike (case, compatibility forms, look-alike letters
of any script) or like "Anonymous" are refused, and so are invisible characters; no absolute URL is built from an
untrusted Host; the labels folder and the SQLite file are owner-only."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from sqlalchemy import select, text

from app import create_app, synthetic
from app.db import db
from app.models import AuditEvent, Team, User
from app.names import name_key
from app.services.errors import Conflict, InvalidInput, Throttled
from app.services.people import accounts, teams
from tests.conftest import make_config
from tests.support.browser import login, logout, post_form
from tests.support.files import write
from tests.support.security_world import EMAILS
from tests.support.users import PASSWORD, make_user


@pytest.fixture
def people(app):
    with app.app_context():
        make_user(EMAILS["owner"])
        make_user(EMAILS["admin"], admin=True)
        db.session.commit()


def _client(app, email=EMAILS["owner"], password=PASSWORD):
    client = app.test_client()
    assert login(client, email, password).status_code == 302
    assert client.get("/account").status_code == 200
    return client


def _copy(app, client):
    """Another browser holding a copy of `client`'s session cookie (say, stolen)."""
    copy = app.test_client()
    copy.set_cookie("session", client.get_cookie("session").value)
    return copy


# --- sessions ------------------------------------------------------------------------------------------


def test_logout_ends_every_session_of_the_user(app, people):
    laptop, phone = _client(app), _client(app)
    stolen = _copy(app, laptop)
    assert stolen.get("/account").status_code == 200
    assert logout(laptop).status_code == 302
    for client in (laptop, phone, stolen):
        response = client.get("/account")
        assert response.status_code == 302 and "/login" in response.headers["Location"]
    # Logging in again works, and the new session is not ended by the old cookie's existence.
    again = _client(app)
    assert stolen.get("/account").status_code == 302 and again.get("/account").status_code == 200


def test_changing_the_password_ends_every_other_session(app, people):
    laptop, phone = _client(app), _client(app)
    stolen = _copy(app, laptop)
    response = post_form(
        laptop,
        "/account/password",
        {"current_password": PASSWORD, "new_password": "a brand new password"},
        form_page="/account",
    )
    assert response.status_code == 303
    assert laptop.get("/account").status_code == 200  # the browser that changed it stays in
    assert phone.get("/account").status_code == 302 and stolen.get("/account").status_code == 302
    assert login(app.test_client(), EMAILS["owner"], PASSWORD).status_code == 401
    _client(app, password="a brand new password")
    # A wrong current password or a short new one: a clear 422, nothing changes.
    for form, message in (
        ({"current_password": "not it at all", "new_password": "another new one"}, "the current password is wrong"),
        ({"current_password": "a brand new password", "new_password": "short"}, "at least 8 characters"),
    ):
        response = post_form(laptop, "/account/password", form, form_page="/account")
        assert response.status_code == 422 and message in response.get_data(as_text=True)
    assert laptop.get("/account").status_code == 200


def test_a_maintainer_signs_a_user_out_everywhere(app, people, runner):
    victim = _client(app)
    stolen = _copy(app, victim)
    admin = _client(app, EMAILS["admin"])
    response = post_form(admin, "/console/users/sign-out", {"email": EMAILS["owner"].upper()}, form_page="/console/")
    assert response.status_code == 303
    assert victim.get("/account").status_code == 302 and stolen.get("/account").status_code == 302
    assert admin.get("/console/").status_code == 200
    response = post_form(admin, "/console/users/sign-out", {"email": "nobody@example.org"}, form_page="/console/")
    assert response.status_code == 404 and "no user with email" in response.get_data(as_text=True)
    # The command line does the same, and both are in the audit log.
    victim = _client(app)
    result = runner.invoke(args=["users", "sign-out", EMAILS["owner"]])
    assert result.exit_code == 0 and "signed owner@example.org out everywhere" in result.output
    assert victim.get("/account").status_code == 302
    result = runner.invoke(args=["users", "sign-out", "nobody@example.org"])
    assert result.exit_code == 2 and "no user with email 'nobody@example.org'" in result.output
    with app.app_context():
        events = db.session.scalars(
            select(AuditEvent).where(AuditEvent.action == "user.sign_out_everywhere").order_by(AuditEvent.id)
        ).all()
        assert [(e.target, json.loads(e.details)["via"]) for e in events] == [
            ("user owner@example.org", "web"),
            ("user owner@example.org", "cli"),
        ]


def test_api_tokens_survive_a_logout(app, people):
    with app.app_context():
        _, token = accounts.create_token(db.session.scalar(select(User).where(User.email == EMAILS["owner"])), "t")
    logout(_client(app))
    assert app.test_client().get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"}).status_code == 200


# --- the shared throttle -------------------------------------------------------------------------------


def test_the_throttle_is_shared_by_every_app_on_the_database(app, people, tmp_path, database_url):
    """Two app objects on one database stand for two servers (tests/load/test_shared_throttle.py runs
    real gunicorn servers): attempts sent to either count together."""
    other = create_app(make_config(tmp_path / "other", database_url))
    servers = [app.test_client(), other.test_client()]
    statuses = [login(servers[i % 2], f"guess{i}@example.org", "wrong password").status_code for i in range(10)]
    assert statuses == [401] * 10
    for server in servers:
        response = login(server, EMAILS["owner"], PASSWORD)
        assert response.status_code == 429 and int(response.headers["Retry-After"]) > 0
    # Registration has its own count, shared the same way.
    statuses = [
        post_form(servers[i % 2], "/register", {"email": f"new{i}@example.org", "password": "short"}).status_code
        for i in range(11)
    ]
    assert statuses == [422] * 10 + [429]
    with other.app_context():
        db.engine.dispose()


def test_old_buckets_are_pruned(app, people):
    from app.models import AuthAttempt
    from app.services.people import throttle

    with app.app_context():
        throttle.attempt("login:10.0.0.1", now=1_000_000.0)
        throttle.attempt("login:10.0.0.2", now=1_000_005.0)
        assert len(db.session.scalars(select(AuthAttempt)).all()) == 2
        throttle.attempt("login:10.0.0.3", now=1_000_000.0 + throttle.AUTH_WINDOW + 10)
        assert [row.key for row in db.session.scalars(select(AuthAttempt))] == ["login:10.0.0.3"]
        # Ten attempts pass, the eleventh is refused; a window later the key may try again.
        for _ in range(throttle.AUTH_LIMIT):
            throttle.attempt("login:10.0.0.4", now=2_000_000.0)
        with pytest.raises(Throttled) as refused:
            throttle.attempt("login:10.0.0.4", now=2_000_003.0)
        assert 0 < refused.value.retry_after <= throttle.AUTH_WINDOW
        throttle.attempt("login:10.0.0.4", now=2_000_000.0 + throttle.AUTH_WINDOW + throttle.BUCKET_SECONDS)


# --- team names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, same_as",
    [
        ("TeamA", "teama"),
        ("\u202eTeamA\u2060", "teama"),  # names stored before invisible characters were refused key as shown
        ("ＴｅａｍＡ", "teama"),
        ("Теаm\u0410", "teama"),  # Cyrillic Т, е, а, А
        ("ΤeamΑ", "teama"),  # Greek Tau and Alpha
        ("  Team   A  ", "team a"),
        ("Team\u00a0A", "team a"),
        ("Аnоnymоus", "anonymous"),
        ("ANONYMOUS", "anonymous"),
        ("Anonymous\ufe0f", "anonymous"),
        ("Café", "cafe\u0301"),
        ("Lab <b>", "lab <b>"),
    ],
)
def test_name_keys(name, same_as):
    assert name_key(name) == name_key(same_as)


def test_team_names_that_look_alike_are_refused(ctx):
    user = accounts.create_user("u@example.org", "a long password")
    first = teams.create_team("TeamA", user)
    for copy in ("teama", "TEAMA", "ＴｅａｍＡ", "ТеаmА", "ΤeamΑ", "TeamＡ"):
        with pytest.raises(Conflict, match="looks like the existing team 'TeamA'|already exists"):
            teams.create_team(copy, user)
    with pytest.raises(Conflict, match="already exists"):
        teams.create_team("TeamA", user)
    for reserved in ("Anonymous", "anonymous", "Аnоnymоus", "ＡＮＯＮＹＭＯＵＳ", "Anonyrnous"):
        with pytest.raises(InvalidInput, match="is reserved"):
            teams.create_team(reserved, user)
    for empty in ("", "   "):
        with pytest.raises(InvalidInput, match="1 to 80 visible characters"):
            teams.create_team(empty, user)
    # Invisible characters are refused, naming the character, rather than dropped from the name.
    for invisible, named in (("Team\u200bB", "U+200B ZERO WIDTH SPACE"), ("\ufe0f", "U+FE0F VARIATION SELECTOR-16")):
        with pytest.raises(
            InvalidInput, match=re.escape(f"team name contains {named}, an invisible control character")
        ):
            teams.create_team(invisible, user)
    assert teams.create_team("TeamB", user).name == "TeamB"
    # (made as a maintainer would: the account has made its two teams of the day)
    assert teams.create_team("  Team   A ").name == "Team A"
    assert sorted(t.name for t in db.session.scalars(select(Team))) == ["Team A", "TeamA", "TeamB"]
    assert first.name_key == name_key("teama")


def test_stored_keys_are_recomputed_when_the_rule_changes(ctx):
    """Keys stored by an older rule let a new team look like an old one; recompute_name_keys (for a migration)
    keys every team again, makes the later key of two teams that now look alike distinct, and names the teams
    a maintainer should look at."""
    teams.create_team("Lab")
    stored = {"L\ua4eeb": "l\ua4eeb", "Rivals": "rivals", "\u13aanonymous": "\u13aanonymous", "Ops\u17b4": "ops\u17b4"}
    db.session.add_all([Team(name=name, name_key=key) for name, key in stored.items()])
    db.session.execute(Team.__table__.update().where(Team.name == "Lab").values(name_key="lab"))
    db.session.commit()
    assert teams.check_team_name("RIVAIS") == ("RIVAIS", name_key("Rivals"))  # the old key lets it through
    ids = dict(db.session.execute(select(Team.name, Team.id)).all())
    expected = [
        (ids["L\ua4eeb"], "L\ua4eeb", "looks like the earlier team 'Lab'"),
        (ids["\u13aanonymous"], "\u13aanonymous", 'looks like "Anonymous"'),
        (
            ids["Ops\u17b4"],
            "Ops\u17b4",
            "contains U+17B4 KHMER VOWEL INHERENT AQ, an invisible control character; remove it",
        ),
    ]
    assert teams.recompute_name_keys(db.session.connection()) == expected
    db.session.commit()
    keys = dict(db.session.execute(select(Team.name, Team.name_key)).all())
    lisu = ids["L\ua4eeb"]
    assert keys["Lab"] == name_key("Lab") and keys["L\ua4eeb"] == f"{name_key('Lab')}#{lisu}"
    assert keys["Rivals"] == name_key("Rivals") and keys["Ops\u17b4"] == name_key("Ops")
    with pytest.raises(Conflict, match="looks like the existing team 'Rivals'"):
        teams.create_team("RIVAIS")
    assert teams.recompute_name_keys(db.session.connection()) == expected  # and again: the same


def test_team_name_refusals_on_the_page_and_the_command_line(app, people, runner):
    client = _client(app)
    response = post_form(client, "/teams", {"name": "Lab"}, form_page="/teams")
    assert response.status_code in (302, 303)
    response = post_form(client, "/teams", {"name": "LАB"}, form_page="/teams")  # Cyrillic А
    assert response.status_code == 409 and "looks like the existing team" in response.get_data(as_text=True)
    response = post_form(client, "/teams", {"name": "Anonymous"}, form_page="/teams")
    assert response.status_code == 422 and "is reserved" in response.get_data(as_text=True)
    result = runner.invoke(args=["teams", "create", "l\u0430b", "--member", EMAILS["owner"]])  # Cyrillic а
    assert result.exit_code == 2 and "looks like the existing team 'Lab'" in result.output
    result = runner.invoke(args=["teams", "create", "l\u200bab", "--member", EMAILS["owner"]])
    assert result.exit_code == 2 and "contains U+200B ZERO WIDTH SPACE" in result.output
    result = runner.invoke(args=["teams", "create", "anonymous"])
    assert result.exit_code == 2 and "reserved" in result.output


# --- Host ----------------------------------------------------------------------------------------------


def test_unknown_hosts_are_refused_and_urls_use_the_trusted_one(app, people):
    client = _client(app)
    for host in ("evil.example", "localhost.evil.example", "127.0.0.1.evil.example"):
        response = client.get("/", headers={"Host": host})
        assert response.status_code == 400, host
        assert "evil" not in response.headers.get("Location", "")
    for host in ("localhost", "127.0.0.1:8000", "localhost:5000"):
        assert client.get("/", headers={"Host": host}).status_code == 200, host
    # An invite link (the one absolute URL the site makes) names the host the request came to, if trusted.
    with app.app_context():
        team_id = (
            db.session.scalar(select(Team.id))
            or teams.create_team("Lab", db.session.scalar(select(User).where(User.email == EMAILS["owner"]))).id
        )
    response = post_form(client, f"/teams/{team_id}/invites", {}, form_page=f"/teams/{team_id}")
    assert response.status_code == 200 and "http://localhost/invites/" in response.get_data(as_text=True)
    response = client.post(f"/teams/{team_id}/invites", headers={"Host": "evil.example"})
    assert response.status_code == 400


def test_trusted_hosts_and_server_name_from_the_configuration(tmp_path, database_url, monkeypatch):
    from app.settings import ConfigError, from_environment

    monkeypatch.setenv("TRUSTED_HOSTS", "leaderboard.example.org, .holdout.example")
    assert from_environment(str(tmp_path))["TRUSTED_HOSTS"] == ["leaderboard.example.org", ".holdout.example"]
    monkeypatch.setenv("TRUSTED_HOSTS", "https://leaderboard.example.org/")
    with pytest.raises(ConfigError, match="TRUSTED_HOSTS"):
        from_environment(str(tmp_path))
    monkeypatch.delenv("TRUSTED_HOSTS")

    app = create_app(
        make_config(tmp_path, database_url) | {"TRUSTED_HOSTS": ["leaderboard.example.org", ".holdout.example"]}
    )
    client = app.test_client()
    assert client.get("/", headers={"Host": "leaderboard.example.org"}).status_code == 200
    assert client.get("/", headers={"Host": "eu.holdout.example"}).status_code == 200
    assert client.get("/", headers={"Host": "localhost"}).status_code == 400
    named = create_app(make_config(tmp_path / "named", database_url) | {"SERVER_NAME": "leaderboard.example.org"})
    client = named.test_client()
    assert client.get("/", base_url="http://leaderboard.example.org").status_code == 200
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 400
    with named.test_request_context("/", base_url="http://leaderboard.example.org"):
        from flask import url_for

        assert url_for("public.index", _external=True) == "http://leaderboard.example.org/"
    for each in (app, named):
        with each.app_context():
            db.engine.dispose()


# --- file modes ----------------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_labels_folder_and_files_are_owner_only(app, runner, tmp_path):
    root = Path(app.config["HIDDEN_LABELS_DIR"])
    runner.invoke(args=["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "NLVR2"])
    gold = write(tmp_path, "dev.json", synthetic.nlvr2_gold(40, seed=1))
    assert runner.invoke(args=["splits", "add", "nlvr2", "dev", "--labels", gold]).exit_code == 0
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files and {_mode(p) for p in files} == {0o600}
    assert {_mode(p) for p in [root, *root.rglob("*")] if p.is_dir()} == {0o700}
    # A folder made by a checkout (0755, files 0644) is closed when the app starts.
    loose = tmp_path / "loose"
    (loose / "nlvr2").mkdir(parents=True)
    (loose / "nlvr2" / "old.jsonl").write_bytes(b"{}\n")
    os.chmod(loose, 0o755)
    os.chmod(loose / "nlvr2", 0o755)
    os.chmod(loose / "nlvr2" / "old.jsonl", 0o644)
    create_app(make_config(tmp_path, app.config["SQLALCHEMY_DATABASE_URI"]) | {"HIDDEN_LABELS_DIR": str(loose)})
    assert (_mode(loose), _mode(loose / "nlvr2"), _mode(loose / "nlvr2" / "old.jsonl")) == (0o700, 0o700, 0o600)


def test_the_sqlite_database_is_owner_only(tmp_path):
    database = tmp_path / "fresh" / "holdout.sqlite3"
    database.parent.mkdir()
    app = create_app(make_config(tmp_path, database))
    with app.app_context():
        db.session.execute(text("CREATE TABLE probe (x INTEGER)"))  # the first connection creates the file
        db.session.commit()
        assert _mode(database) == 0o600
        db.engine.dispose()
    os.chmod(database, 0o644)  # a file from before: closed on the next connection
    with app.app_context():
        db.session.execute(text("INSERT INTO probe VALUES (1)"))
        db.session.commit()
        assert _mode(database) == 0o600
        wal = Path(f"{database}-wal")
        assert not wal.exists() or _mode(wal) == 0o600
        db.engine.dispose()
