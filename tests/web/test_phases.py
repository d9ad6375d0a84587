"""A split's phase (issue 27): uploads outside opens_at..closes_at are refused (409) by the page and the API with
the dates named and nothing stored; the board and its API say where the split stands; the final board keeps the
entries as they stood at closing; `flask splits phase` refuses a closing time not after the opening."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from sqlalchemy import func, select

from app.db import db
from app.models import AuditEvent, Submission, User, as_utc
from app.services import catalog
from app.services.catalog import phases
from app.services.errors import InvalidInput
from app.services.intake import submissions
from tests.support.api_world import PASSWORD, build_world, post_file, stored_submission
from tests.support.browser import csrf_token, login, post_form

OPENS, CLOSES = "2026-12-01T00:00Z", "2027-01-31T23:59Z"
BEFORE = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DURING = datetime(2027, 1, 10, 12, 0, tzinfo=UTC)
AFTER = datetime(2027, 2, 5, 12, 0, tzinfo=UTC)


def _world(app):
    world = build_world(app)
    with app.app_context():
        phases.set_phase("nlvr2", "dev", opens_at=OPENS, closes_at=CLOSES)
    return world


def _stored(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission))


def _files(app) -> set[Path]:
    return {path for path in Path(app.config["SUBMISSIONS_DIR"]).rglob("*") if path.is_file()}


def _refused_everywhere(app, world, expected: str) -> None:
    """The API and the Submit page both answer 409 naming the date; no row is stored and no original kept."""
    client = app.test_client()
    before, kept = _stored(app), _files(app)
    answer = post_file(client, world, "member", world.predictions())
    assert answer.status_code == 409, answer.get_json()
    assert expected in answer.get_json()["error"]
    assert login(client, "member@example.org", PASSWORD).status_code == 302
    form = {
        "csrf_token": csrf_token(client, "/submit"),
        "team": "1",
        "split": "nlvr2/dev",
        "model_name": "late",
        "file": (io.BytesIO(world.predictions()), "p.csv"),
    }
    page = client.post("/submit", data=form, content_type="multipart/form-data")
    assert page.status_code == 409 and expected in page.get_data(as_text=True)
    assert (_stored(app), _files(app)) == (before, kept)


def test_uploads_before_the_opening_are_refused_with_the_date_and_nothing_stored(app):
    world = _world(app)
    with time_machine.travel(BEFORE, tick=False):
        _refused_everywhere(app, world, "Uploads to NLVR2 Dev open at 2026-12-01 00:00 UTC")
        board = app.test_client().get("/api/v1/leaderboards/nlvr2/dev").get_json()
        assert board["phase"] == {
            "opens_at": "2026-12-01T00:00:00+00:00",
            "closes_at": "2027-01-31T23:59:00+00:00",
            "state": "not_open_yet",
            "reveal_planned_at": None,
            "text": "Opens 2026-12-01 00:00 UTC",
        }


def test_uploads_after_the_closing_are_refused_and_the_board_says_so(app):
    world = _world(app)
    with time_machine.travel(DURING, tick=False):
        page = app.test_client().get("/leaderboards/nlvr2/dev").get_data(as_text=True)
        assert "Open until 2027-01-31 23:59 UTC" in page and "view=final" not in page
        assert post_file(app.test_client(), world, "member", world.predictions()).status_code == 201
    with time_machine.travel(AFTER, tick=False):
        _refused_everywhere(app, world, "Uploads to NLVR2 Dev closed at 2027-01-31 23:59 UTC")
        page = app.test_client().get("/leaderboards/nlvr2/dev").get_data(as_text=True)
        assert "Closed since 2027-01-31 23:59 UTC" in page
        assert "Final board as at 2027-01-31 23:59 UTC" in page
        assert app.test_client().get("/api/v1/leaderboards/nlvr2/dev").get_json()["phase"]["state"] == "closed"


def test_the_final_board_keeps_the_entries_as_they_stood_at_closing(app):
    world = _world(app)
    with time_machine.travel(DURING, tick=False):
        early = stored_submission(app, world, publish=True, model_name="published-in-time")
        late = stored_submission(app, world, seed=8, model_name="published-after-closing")
        api = app.test_client().get("/api/v1/leaderboards/nlvr2/dev?view=final")
        assert api.status_code == 404 and "uploads close at 2027-01-31 23:59 UTC" in api.get_json()["error"]
    with time_machine.travel(AFTER, tick=False):
        with app.app_context():
            member = db.session.scalar(select(User).where(User.email == "member@example.org"))
            submissions.publish(member, late, description="after the closing")
        client = app.test_client()
        now = client.get("/api/v1/leaderboards/nlvr2/dev").get_json()
        final = client.get("/api/v1/leaderboards/nlvr2/dev?view=final").get_json()
        assert {e["submission_id"] for e in now["entries"]} == {early, late}
        assert [(e["submission_id"], e["rank"]) for e in final["entries"]] == [(early, 1)]
        assert final["view"] == "final"
        page = client.get("/leaderboards/nlvr2/dev?view=final").get_data(as_text=True)
        assert "published-in-time" in page and "published-after-closing" not in page
        assert "Final board: the entries as they stood" in page
        # Not on a split without a closing time.
        assert client.get("/leaderboards/nlvr2/test-u?view=final").status_code == 404


def test_the_phase_command_refuses_a_closing_not_after_the_opening(app):
    build_world(app)
    runner = app.test_cli_runner()
    wrong = runner.invoke(args=["splits", "phase", "nlvr2", "dev", "--opens", CLOSES, "--closes", OPENS])
    assert wrong.exit_code == 2
    assert "closes_at (2026-12-01 00:00 UTC) must be after opens_at (2027-01-31 23:59 UTC)" in wrong.output
    garbled = runner.invoke(args=["splits", "phase", "nlvr2", "dev", "--opens", "next tuesday"])
    assert garbled.exit_code == 2 and "--opens" in garbled.output and "Traceback" not in garbled.output
    done = runner.invoke(args=["splits", "phase", "nlvr2", "dev", "--opens", "2026-12-01T01:00+01:00"])
    assert done.exit_code == 0, done.output
    assert "opens 2026-12-01 00:00 UTC, no closing time" in done.output
    with app.app_context():
        events = list(db.session.scalars(select(AuditEvent).where(AuditEvent.action == "split.phase")))
    assert len(events) == 1
    assert json.loads(events[0].details) == {"via": "cli", "opens_at": "none → 2026-12-01 00:00 UTC"}


def test_the_console_form_names_the_field_it_refuses(app):
    build_world(app)
    admin = app.test_client()
    assert login(admin, "admin@example.org", PASSWORD).status_code == 302
    path, page = "/console/splits/nlvr2/dev/phase", "/console/splits/nlvr2/dev"
    wrong = post_form(admin, path, {"opens_at": "2027-01-31T23:59", "closes_at": "2026-12-01T00:00"}, form_page=page)
    assert wrong.status_code == 422
    assert "closes_at (2026-12-01 00:00 UTC) must be after opens_at (2027-01-31 23:59 UTC)" in wrong.get_data(True)
    garbled = post_form(admin, path, {"opens_at": "soon", "closes_at": ""}, form_page=page)
    assert garbled.status_code == 422 and "opens_at must be a date and time in ISO 8601" in garbled.get_data(True)
    with app.app_context():
        assert not db.session.scalar(
            select(func.count()).select_from(AuditEvent).where(AuditEvent.action == "split.phase")
        )


def test_the_console_types_and_shows_times_as_24_hour_utc_text(app):
    """Issue 34: a datetime-local field showed "02/26/2027, 11:" (the browser's locale, a 12-hour clock, minutes
    cut) on a page that says UTC. The field is text: '2027-02-26 23:59' is taken as UTC and shown back so; a
    12-hour time is refused, the error naming the form expected."""
    build_world(app)
    admin = app.test_client()
    assert login(admin, "admin@example.org", PASSWORD).status_code == 302
    path, page = "/console/splits/nlvr2/dev/phase", "/console/splits/nlvr2/dev"
    saved = post_form(admin, path, {"opens_at": "", "closes_at": "2027-02-26 23:59"}, form_page=page)
    assert saved.status_code == 303
    with app.app_context():
        assert as_utc(catalog.get_split("nlvr2", "dev").closes_at) == datetime(2027, 2, 26, 23, 59, tzinfo=UTC)
    body = admin.get(page).get_data(True)
    field = re.search(r'<input[^>]*name="closes_at"[^>]*>', body).group(0)
    assert 'type="text"' in field and 'value="2027-02-26 23:59"' in field, field
    assert "datetime-local" not in body
    twelve = post_form(admin, path, {"opens_at": "", "closes_at": "02/26/2027, 11:59 PM"}, form_page=page)
    assert twelve.status_code == 422
    assert "on the 24-hour clock, e.g. 2026-12-01 23:59" in twelve.get_data(True)


@pytest.mark.postgres(reason="moments compared with the closing time in SQL: stored and compared per dialect")
def test_a_held_boards_final_view_counts_the_entries_at_closing(app):
    """A held board's final view says how many entries its final board will show: those uploaded and published
    before the closing time and still on the board, not today's (issue 35). Withdrawn after the closing, an entry
    has left the final board; published again after it, it is on the board but not the final one; hidden by a
    maintainer, it is on neither."""
    world = build_world(app)
    with app.app_context():
        phases.set_phase("nlvr2", "test-u", opens_at=OPENS, closes_at=CLOSES)
    with time_machine.travel(DURING, tick=False):
        kept, withdrawn, again, hidden = (
            stored_submission(app, world, split="test-u", publish=True, seed=seed, model_name=f"m{seed}")
            for seed in (1, 2, 3, 4)
        )
        late = stored_submission(app, world, split="test-u", seed=5, model_name="late")
    with time_machine.travel(AFTER, tick=False):
        with app.app_context():
            member = db.session.scalar(select(User).where(User.email == "member@example.org"))
            admin = db.session.scalar(select(User).where(User.email == "admin@example.org"))
            submissions.unpublish(member, withdrawn)
            submissions.unpublish(member, again)
            submissions.publish(member, again, description="published again after the closing")
            submissions.hide(admin, hidden, "a duplicate")
            submissions.publish(member, late, description="after the closing")
        client = app.test_client()
        now = client.get("/api/v1/leaderboards/nlvr2/test-u").get_json()
        final = client.get("/api/v1/leaderboards/nlvr2/test-u?view=final").get_json()
        assert now["scores_public"] is False and final["entries"] == []
        assert (now["held"]["entries"], final["held"]["entries"]) == (3, 1)  # kept, again, late; kept alone
        page = client.get("/leaderboards/nlvr2/test-u?view=final").get_data(as_text=True)
        assert "1 entry from 1 team is waiting" in page
    with app.app_context():
        catalog.reveal_split("nlvr2", "test-u")
    with time_machine.travel(AFTER, tick=False):
        final = app.test_client().get("/api/v1/leaderboards/nlvr2/test-u?view=final").get_json()
        assert [entry["submission_id"] for entry in final["entries"]] == [kept]


def test_a_planned_reveal_is_said_by_the_board_and_its_api_until_the_reveal(app):
    _world(app)
    with app.app_context():
        with pytest.raises(InvalidInput, match="public split"):
            phases.set_phase("nlvr2", "dev", reveal_planned_at="2027-02-15")
        phases.set_phase("nlvr2", "test-u", closes_at=CLOSES, reveal_planned_at="2027-02-15")
    with time_machine.travel(DURING, tick=False):
        client = app.test_client()
        said = "Open until 2027-01-31 23:59 UTC; scores to be revealed 2027-02-15 00:00 UTC"
        assert said in client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
        phase = client.get("/api/v1/leaderboards/nlvr2/test-u").get_json()["phase"]
        assert phase["reveal_planned_at"] == "2027-02-15T00:00:00+00:00" and phase["text"] == said
        with app.app_context():
            catalog.reveal_split("nlvr2", "test-u")
        phase = client.get("/api/v1/leaderboards/nlvr2/test-u").get_json()["phase"]
        assert phase["reveal_planned_at"] is None and phase["text"] == "Open until 2027-01-31 23:59 UTC"
