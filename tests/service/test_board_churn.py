"""Changes to a board cost what they are worth (issue 35, finding 3): publishing and unpublishing are throttled
per account and per entry (429 with Retry-After, from the API and the pages), a publish that changes nothing
changes nothing, and N changes within BOARD_REBUILD_SECONDS cost one rebuild, in-process and with workers, while
readers get the last board marked as updating, less any entry taken off it. And in-process no board job is
queued for a reader who may never come (finding 5): /healthz stays ok however long nobody reads."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from sqlalchemy import func, select

from app.db import db
from app.models import Job, Split, utcnow
from app.services.boards import board_snapshots
from app.services.intake import submissions
from app.services.jobs import queue, transport
from tests.support.api_world import PASSWORD, build_world, stored_submission
from tests.support.browser import login, post_form

pytestmark = pytest.mark.postgres(
    reason="the throttle's counts and the queue's coalescing are upserts per dialect; moments compared in SQL"
)

BOARD = "/api/v1/leaderboards/nlvr2/dev"


@pytest.fixture
def world(app):
    return build_world(app)


def _change(client, world, submission_id: int, action: str, **body):
    return client.post(
        f"/api/v1/submissions/{submission_id}/{action}",
        json=body or {"description": "A model."},
        headers=world.headers("member"),
    )


def _builds(monkeypatch) -> list[int]:
    """The versions board_snapshots computes from now on (the board's work, whoever does it)."""
    calls: list[int] = []
    real = board_snapshots._compute

    def counted(split, version, until=None):
        calls.append(version)
        return real(split, version, until)

    monkeypatch.setattr(board_snapshots, "_compute", counted)
    return calls


def _version(app) -> int:
    with app.app_context():
        return db.session.scalar(select(Split.board_version).where(Split.slug == "dev"))


def _jobs(app, state: str | None = None) -> int:
    with app.app_context():
        query = select(func.count()).select_from(Job).where(Job.kind == "board")
        return db.session.scalar(query.where(Job.state == state) if state else query)


def _with_workers(app, monkeypatch) -> list[queue.Queued]:
    """JOB_QUEUE=procrastinate with the workers stood in for: what is handed to them is collected."""
    handed: list[queue.Queued] = []
    monkeypatch.setattr(transport, "defer", lambda job: handed.append(job) or True)
    app.config["JOB_QUEUE"] = "procrastinate"
    return handed


def test_publishing_and_unpublishing_are_throttled_per_entry_and_per_account(app, client, world, monkeypatch):
    monkeypatch.setattr(submissions, "CHANGES_PER_ENTRY", 3)
    monkeypatch.setattr(submissions, "CHANGES_PER_ACCOUNT", 5)
    first, second = (stored_submission(app, world, seed=seed, model_name=f"m{seed}") for seed in (1, 2))
    answers = [_change(client, world, first, action) for action in ("publish", "unpublish", "publish", "unpublish")]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert 0 < int(refused.headers["Retry-After"]) <= 3600
    assert f"submission {first} was published, unpublished or edited 3 times in the last hour" in refused.json["error"]
    assert {entry["submission_id"] for entry in client.get(BOARD).json["entries"]} == {first}  # nothing changed
    # Another entry has a count of its own, until the account's runs out (the refused attempt counted too).
    assert _change(client, world, second, "publish").status_code == 200
    over = _change(client, world, second, "unpublish")
    assert over.status_code == 429
    assert "this account published, unpublished or edited entries 5 times" in over.json["error"]
    # The pages answer the same: a 429 page with Retry-After.
    assert login(client, "member@example.org", PASSWORD).status_code == 302
    page = post_form(client, f"/submissions/{second}/unpublish", form_page=f"/submissions/{second}")
    assert page.status_code == 429 and int(page.headers["Retry-After"]) > 0
    assert "5 times in the last hour" in page.get_data(as_text=True)


def test_a_publish_that_changes_nothing_changes_nothing(app, client, world, monkeypatch):
    handed = _with_workers(app, monkeypatch)
    entry = stored_submission(app, world, publish=True, description="A model.")
    unpublished = stored_submission(app, world, seed=2, model_name="off the board")
    with app.app_context():
        transport.run_due_here()
    version, jobs = _version(app), _jobs(app)
    handed.clear()
    for body in ({"description": "A model."}, {"description": "  A model. "}, {}):
        answer = client.post(f"/api/v1/submissions/{entry}/publish", json=body, headers=world.headers("member"))
        assert answer.status_code == 200 and answer.json["placement"]["row"] == 1
    assert _change(client, world, unpublished, "unpublish").status_code == 200  # not on the board: nothing to do
    assert (_version(app), _jobs(app), handed) == (version, jobs, [])
    # A change is one: a new version, a job for the workers.
    assert _change(client, world, entry, "publish", description="Better words.").status_code == 200
    assert _version(app) == version + 1 and [job.kind for job in handed] == ["board"]


def test_toggles_within_a_window_cost_one_rebuild_in_process(app, client, world, monkeypatch):
    """In-process (no worker) the reader builds the board, at most once a window: sooner it is served the last
    board marked as updating since it was built, less any entry taken off it; after the window the next
    reader builds it, once, whatever the number of changes meanwhile."""
    app.config["BOARD_REBUILD_SECONDS"] = 60
    first, second = (stored_submission(app, world, publish=True, seed=s, model_name=f"m{s}") for s in (1, 2))
    start = utcnow()
    with time_machine.travel(start, tick=False):
        builds = _builds(monkeypatch)
        assert len(client.get(BOARD).json["entries"]) == 2 and len(builds) == 1
    with time_machine.travel(start + timedelta(seconds=5), tick=False):
        for action in ("unpublish", "publish", "unpublish", "publish", "unpublish"):
            assert _change(client, world, second, action).status_code == 200
            board = client.get(BOARD).json
            shown = [entry["submission_id"] for entry in board["entries"]]
            assert board["updating_since"] is not None
            # Withdrawn: off the board at once; published again: back, as the last board ranked it.
            assert set(shown) == ({first} if action == "unpublish" else {first, second})
        assert len(builds) == 1
    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        board = client.get(BOARD).json
        assert board["updating_since"] is None and [e["submission_id"] for e in board["entries"]] == [first]
        client.get(BOARD)
        assert len(builds) == 2
    assert _jobs(app) == 0  # in-process: no board job at all


def test_toggles_within_a_window_cost_one_rebuild_with_workers(app, client, world, monkeypatch):
    """With workers, a change's job runs a window after the last build began at the earliest; changes meanwhile
    are folded into it, and readers get the last board, marked as updating, less any entry taken off it."""
    app.config["BOARD_REBUILD_SECONDS"] = 60
    handed = _with_workers(app, monkeypatch)
    first, second = (stored_submission(app, world, publish=True, seed=s, model_name=f"m{s}") for s in (1, 2))
    handed.clear()
    start = utcnow()
    with time_machine.travel(start, tick=False):
        builds = _builds(monkeypatch)
        with app.app_context():
            assert transport.run_due_here() == 1  # the board's first build
        assert len(builds) == 1
    with time_machine.travel(start + timedelta(seconds=5), tick=False):
        for action in ("unpublish", "publish", "unpublish", "publish", "unpublish"):
            assert _change(client, world, second, action).status_code == 200
        board = client.get(BOARD).json
        assert board["updating_since"] is not None
        assert [entry["submission_id"] for entry in board["entries"]] == [first]  # withdrawn: off at once
        with app.app_context():
            assert transport.run_due_here() == 0  # not due before the window's end
        assert len(builds) == 1 and _jobs(app, "queued") == 1
        assert len(handed) == 1 and handed[0].delay >= 55  # one job, handed over to run at the window's end
    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        with app.app_context():
            assert transport.run_due_here() == 1
        board = client.get(BOARD).json
        assert board["updating_since"] is None and [e["submission_id"] for e in board["entries"]] == [first]
        assert len(builds) == 2


def test_in_process_no_board_job_waits_for_a_reader(app, client, world, runner):
    """Finding 5: publishing in-process (the demo's way, a team's through the API and the pages) queued a board
    job that the publishing request did not run (it built the board itself) and no later read cleared: /healthz
    called it stuck five minutes later, and `flask jobs list --state attention` exited 1."""
    stored_submission(app, world, publish=True, seed=1, model_name="demo-like")  # as `flask demo` stores them
    entry = stored_submission(app, world, seed=2, model_name="the team's")
    assert _change(client, world, entry, "publish").status_code == 200
    assert _change(client, world, entry, "unpublish").status_code == 200
    assert login(client, "member@example.org", PASSWORD).status_code == 302
    page = post_form(
        client, f"/submissions/{entry}/publish", {"description": "A model."}, form_page=f"/submissions/{entry}"
    )
    assert page.status_code == 303
    assert len(client.get(BOARD).json["entries"]) == 2
    later = utcnow() + timedelta(seconds=app.config["JOB_STUCK_AFTER"] + 6 * app.config["JOB_HEARTBEAT"] + 60)
    with time_machine.travel(later, tick=False):
        listed = runner.invoke(args=["jobs", "list", "--state", "attention"])
        assert listed.exit_code == 0, listed.output
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json["status"] == "ok", health.json
