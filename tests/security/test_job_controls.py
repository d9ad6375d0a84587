"""Who may drive the job queue, and with what (issue 26): the jobs console refuses strangers, members and forged
forms; `flask jobs` refuses bad input without a traceback; bad job settings stop the app or a command naming
the variable."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import func, select, update

from app import create_app
from app.db import db
from app.models import Job
from app.services.errors import Conflict, NotFound
from app.services.jobs import console, queue
from app.settings import ConfigError, from_environment
from tests.support.browser import csrf_token, forget_user, login
from tests.support.submission_world import build_submission_world
from tests.support.users import PASSWORD


@pytest.fixture
def world(ctx):
    return build_submission_world()


def test_the_jobs_console_refuses_strangers_members_and_forged_forms(world, app):
    job_id = queue.enqueue("board", "board:999", {"split_id": 999})
    db.session.commit()
    anonymous = app.test_client()
    assert anonymous.get("/console/jobs").status_code in (302, 401)
    assert anonymous.post(f"/console/jobs/{job_id}/rerun").status_code in (302, 401, 400)
    member = app.test_client()
    forget_user()
    assert login(member, "member@example.org", PASSWORD).status_code == 302
    forget_user()
    token = csrf_token(member, "/login")
    before = db.session.execute(select(Job.id, Job.state, Job.run_after)).all()
    assert member.get("/console/jobs").status_code == 403
    assert member.post(f"/console/jobs/{job_id}/rerun", data={"csrf_token": token}).status_code == 403
    admin = app.test_client()
    forget_user()
    assert login(admin, "admin@example.org", PASSWORD).status_code == 302
    page = admin.get("/console/jobs")
    assert page.status_code == 200 and "no-store" in page.headers.get("Cache-Control", "")
    for data in ({}, {"csrf_token": "forged"}):
        assert admin.post(f"/console/jobs/{job_id}/rerun", data=data).status_code in (303, 400)
    db.session.rollback()
    assert db.session.execute(select(Job.id, Job.state, Job.run_after)).all() == before
    forget_user()
    token = csrf_token(admin, "/console/jobs")
    # A done job: refused, shown, no 500; an unknown one: the same.
    db.session.execute(update(Job).where(Job.id == job_id).values(state="done"))
    db.session.commit()
    for target, said in ((job_id, "nothing to rerun"), (987654, "no job 987654")):
        response = admin.post(f"/console/jobs/{target}/rerun", data={"csrf_token": token}, follow_redirects=True)
        assert response.status_code == 200 and said in response.get_data(as_text=True)
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(Job)) == 1
    with pytest.raises(Conflict) as refused:
        console.rerun(job_id)
    assert refused.value.status == 409
    with pytest.raises(NotFound):
        console.rerun(987654)


def test_flask_jobs_refuses_bad_input_without_a_traceback(world, app, runner):
    job_id = queue.enqueue("board", "board:998", {"split_id": 998})
    db.session.commit()
    db.session.execute(update(Job).where(Job.id == job_id).values(state="done"))
    db.session.commit()
    for args, words in (
        (["jobs", "retry", "abc"], "abc"),
        (["jobs", "retry", "999999"], "999999"),
        (["jobs", "retry", "99999999999999999999"], "99999999999999999999"),  # past an INTEGER id
        (["jobs", "retry", str(job_id)], "done"),
        (["jobs", "list", "--state", "bogus"], "bogus"),
        (["jobs", "list", "--limit", "0"], "limit"),
    ):
        result = runner.invoke(args=args)
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit), (args, result.exception)
        assert words in result.output and "Traceback" not in result.output, (args, result.output)
    assert runner.invoke(args=["worker"]).exit_code == 2  # JOB_QUEUE=inline: no worker to run


@pytest.mark.parametrize(
    "env, named",
    [
        ({"JOB_QUEUE": "bogus"}, "JOB_QUEUE"),
        ({"JOB_QUEUE": "procrastinate"}, "JOB_QUEUE"),
        ({"JOB_HEARTBEAT": "0"}, "JOB_HEARTBEAT"),
        ({"JOB_HEARTBEAT": "nan"}, "JOB_HEARTBEAT"),
        ({"JOB_MAX_ATTEMPTS": "0"}, "JOB_MAX_ATTEMPTS"),
        ({"JOB_TIME_LIMIT": "-1"}, "JOB_TIME_LIMIT"),
        ({"JOB_TIME_LIMIT": "0"}, "JOB_TIME_LIMIT"),  # not quietly the default
        ({"JOB_STUCK_AFTER": "0"}, "JOB_STUCK_AFTER"),
        ({"JOB_STUCK_AFTER": "soon"}, "JOB_STUCK_AFTER"),
    ],
)
def test_bad_job_settings_stop_the_app_naming_the_variable(tmp_path, monkeypatch, env, named):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=named):
        from_environment(str(tmp_path))
    with pytest.raises(ConfigError, match=named):
        create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.db'}"})


@pytest.mark.parametrize("env", [{"JOB_QUEUE": "bogus"}, {"JOB_HEARTBEAT": "0"}, {"SECRET_KEY": ""}])
def test_a_bad_setting_stops_a_command_with_its_name_and_no_traceback(tmp_path, env):
    """`flask --app wsgi ...` with a wrong setting: the message naming it, exit 2, no traceback."""
    import subprocess
    import sys
    from pathlib import Path

    base = {k: v for k, v in os.environ.items() if not k.startswith(("JOB_", "HOLDOUT_DEMO", "SECRET_KEY"))}
    environment = base | {"DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "SECRET_KEY": "k" * 64} | env
    if not environment["SECRET_KEY"]:
        del environment["SECRET_KEY"]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "flask"), "--app", "wsgi", "jobs", "list"],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    named = next(iter(env))
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr + done.stdout
