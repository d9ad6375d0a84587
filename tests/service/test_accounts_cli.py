"""`users create`, `teams create` and `tokens create`: the account commands scripts rely on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from werkzeug.security import check_password_hash

from app import create_app
from app.db import db
from app.http.security import bearer_token
from app.models import Team, User
from app.services.people import accounts, teams

PASSWORD = "correct horse battery"


def create_user(runner, email, *extra):
    return runner.invoke(args=["users", "create", email, "--password", PASSWORD, *extra])


def test_users_create(app, runner):
    result = create_user(runner, "Ada@Example.org")
    assert result.exit_code == 0, result.output
    assert "created user ada@example.org" in result.output
    admin = create_user(runner, "root@example.org", "--admin")
    assert admin.exit_code == 0 and "(admin)" in admin.output
    with app.app_context():
        ada = accounts.get_user_by_email("ada@example.org")
        assert not ada.is_admin and check_password_hash(ada.password_hash, PASSWORD)
        assert ada.password_hash != PASSWORD
        assert accounts.get_user_by_email("root@example.org").is_admin


def test_users_create_asks_for_the_password_when_not_given(app, runner):
    result = runner.invoke(args=["users", "create", "ada@example.org"], input=f"{PASSWORD}\n{PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert PASSWORD not in result.output
    with app.app_context():
        assert accounts.authenticate("ada@example.org", PASSWORD) is not None


def test_users_create_refusals_exit_2(app, runner):
    create_user(runner, "ada@example.org")
    duplicate = create_user(runner, "ADA@example.org")
    assert duplicate.exit_code == 2 and "already exists" in duplicate.stderr
    short = runner.invoke(args=["users", "create", "bob@example.org", "--password", "short"])
    assert short.exit_code == 2 and "at least 8 characters" in short.stderr
    bad = create_user(runner, "not-an-email")
    assert bad.exit_code == 2 and "valid email" in bad.stderr
    with app.app_context():
        assert db.session.scalar(db.select(db.func.count(User.id))) == 1


def test_teams_create_with_members(app, runner):
    create_user(runner, "ada@example.org")
    create_user(runner, "bob@example.org")
    result = runner.invoke(
        args=["teams", "create", "Aurora Lab", "--member", "ada@example.org", "--member", "BOB@example.org"]
    )
    assert result.exit_code == 0, result.output
    assert "created team Aurora Lab with 2 members" in result.output
    alone = runner.invoke(args=["teams", "create", "Empty"])
    assert alone.exit_code == 0, alone.output
    with app.app_context():
        team = teams.find_team("Aurora Lab")
        assert [u.email for u in teams.members(team)] == ["ada@example.org", "bob@example.org"]
        assert teams.members(teams.find_team("Empty")) == []


def test_teams_create_refusals_exit_2(app, runner):
    create_user(runner, "ada@example.org")
    unknown = runner.invoke(
        args=["teams", "create", "Aurora Lab", "--member", "ada@example.org", "--member", "nobody@example.org"]
    )
    assert unknown.exit_code == 2
    assert "nobody@example.org" in unknown.stderr
    with app.app_context():
        assert db.session.scalar(db.select(Team)) is None  # nothing half-created
    runner.invoke(args=["teams", "create", "Aurora Lab"])
    duplicate = runner.invoke(args=["teams", "create", "Aurora Lab"])
    assert duplicate.exit_code == 2 and "already exists" in duplicate.stderr
    empty = runner.invoke(args=["teams", "create", " "])
    assert empty.exit_code == 2


def test_tokens_create_prints_a_working_token_last(app, runner):
    create_user(runner, "ada@example.org")
    result = runner.invoke(args=["tokens", "create", "ada@example.org", "--name", "ci"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip().splitlines()[-1]
    assert token.startswith("hd_")
    with app.app_context():
        user = accounts.user_for_token(bearer_token(f"Bearer {token}"))
        assert user is not None and user.email == "ada@example.org"
        assert [t.name for t in user.tokens] == ["ci"]
    default = runner.invoke(args=["tokens", "create", "ADA@example.org"])
    assert default.exit_code == 0
    with app.app_context():
        user = accounts.user_for_token(bearer_token("Bearer " + default.stdout.strip().splitlines()[-1]))
        assert sorted(t.name for t in user.tokens) == ["ci", "cli"]


def test_tokens_create_refusals_exit_2(app, runner):
    unknown = runner.invoke(args=["tokens", "create", "nobody@example.org"])
    assert unknown.exit_code == 2 and "nobody@example.org" in unknown.stderr
    create_user(runner, "ada@example.org")
    long_name = runner.invoke(args=["tokens", "create", "ada@example.org", "--name", "x" * 81])
    assert long_name.exit_code == 2 and "1 to 80 characters" in long_name.stderr


@pytest.mark.slow
def test_commands_through_the_flask_executable(tmp_path):
    """As a deployment script runs them: a real process, the token on the last line of stdout."""
    repo = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "SECRET_KEY": "test-" + "x" * 40,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "HIDDEN_LABELS_DIR": str(tmp_path / "labels"),
        "SUBMISSIONS_DIR": str(tmp_path / "subs"),
    }
    env.pop("HOLDOUT_DEMO", None)

    def flask(*args):
        return subprocess.run(
            [sys.executable, "-m", "flask", "--app", "wsgi", *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert flask("db", "upgrade").returncode == 0
    assert flask("users", "create", "ada@example.org", "--password", PASSWORD).returncode == 0
    missing = flask("teams", "create", "Lab", "--member", "nobody@example.org")
    assert missing.returncode == 2 and "nobody@example.org" in missing.stderr
    created = flask("tokens", "create", "ada@example.org", "--name", "deploy")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]

    app = create_app({"SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"], "SECRET_KEY": "x", "TESTING": True})
    with app.app_context():
        assert accounts.user_for_token(bearer_token(f"Bearer {token}")).email == "ada@example.org"
        db.engine.dispose()
