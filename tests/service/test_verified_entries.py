"""Verified entries (issue 38): a maintainer's mark on a published entry, audited both ways, refused where it
must be, dropped when what was checked changes, and `verified=1`: the verified entries as a board of their own,
ranked among themselves."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import AuditEvent, Submission
from app.services import catalog
from app.services.boards import board_snapshots, leaderboards
from app.services.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.services.intake import submissions
from app.services.maintenance import maintainer_actions
from tests.support.submission_world import build_submission_world

pytestmark = pytest.mark.postgres(
    reason="the mark's timestamptz round trip and the verified board's filtered query, on both dialects"
)


@pytest.fixture
def world(ctx):
    return build_submission_world()


def _entry(world, accuracy: float, seed: int, name: str, publish: bool = True) -> Submission:
    data = synthetic.predictions("nlvr2", world["gold"], accuracy, seed=seed)
    sub = submissions.submit(
        world["member"], None, "nlvr2", "dev", submissions.Upload(data=data, model_name=name)
    ).submission
    if publish:
        submissions.publish(world["member"], sub.id, description=f"{name} described")
    return sub


def _actions() -> list[tuple[str, dict]]:
    events = db.session.scalars(select(AuditEvent).order_by(AuditEvent.id))
    return [(e.action, json.loads(e.details)) for e in events if e.action.startswith("entry.")]


def _on_board(split, sub_id: int):
    return next(e for e in board_snapshots.leaderboard(split) if e.submission_id == sub_id)


def test_verify_and_unverify_are_audited_and_refused_where_they_must_be(world):
    split = catalog.get_split("nlvr2", "dev")
    sub = _entry(world, 0.8, 1, "Checked")
    draft = _entry(world, 0.7, 2, "Draft", publish=False)
    with pytest.raises(Forbidden):
        submissions.verify(world["member"], sub.id, "looked fine")
    with pytest.raises(NotFound, match="no submission 999999"):
        submissions.verify(world["admin"], 999999, "looked fine")
    with pytest.raises(Conflict, match="not published"):
        submissions.verify(world["admin"], draft.id, "looked fine")
    for note, url, field in (
        ("  ", None, "note"),
        ("x" * 501, None, "note"),
        ("weights\u202e checked", None, "note"),
        ("ok", "ftp://example.org/run", "url"),
    ):
        with pytest.raises(InvalidInput) as refused:
            submissions.verify(world["admin"], sub.id, note, url)
        assert refused.value.field == field
    assert _actions() == [] and _on_board(split, sub.id).verified is None

    version = split.board_version
    maintainer_actions.verify_entry(world["admin"], sub.id, " Reran the released code ", "https://example.org/run")
    assert split.board_version == version + 1
    mark = _on_board(split, sub.id).verified
    assert mark is not None and (mark["note"], mark["url"]) == ("Reran the released code", "https://example.org/run")
    assert db.session.get(Submission, sub.id).verified_by_id == world["admin"].id
    built = board_snapshots.snapshot(split)  # the stored snapshot keeps the mark (PAYLOAD_FORMAT 10)
    stored = board_snapshots._decode(built.version, board_snapshots._encode(built))
    assert stored is not None and [e.verified for e in stored.entries] == [e.verified for e in built.entries]
    maintainer_actions.unverify_entry(world["admin"], sub.id)
    assert _on_board(split, sub.id).verified is None
    maintainer_actions.unverify_entry(world["admin"], sub.id)  # nothing to take off: nothing recorded
    with pytest.raises(Forbidden):
        submissions.unverify(world["member"], sub.id)
    assert _actions() == [
        ("entry.verify", {"via": "web", "note": "Reran the released code", "url": "https://example.org/run"}),
        ("entry.unverify", {"via": "web"}),
    ]


def test_the_mark_stays_while_hidden_and_goes_when_the_entry_changes(world):
    """Hiding is a maintainer's (the mark comes back with the entry); unpublishing, or publishing changed
    fields, is the team's: what was checked is no longer what is shown, so the mark goes."""
    split = catalog.get_split("nlvr2", "dev")
    sub = _entry(world, 0.8, 1, "Checked")
    submissions.verify(world["admin"], sub.id, "weights checked")
    submissions.hide(world["admin"], sub.id, "checking a report")
    with pytest.raises(Conflict, match="hidden"):
        submissions.verify(world["admin"], sub.id, "again")
    submissions.unhide(world["admin"], sub.id)
    assert _on_board(split, sub.id).verified is not None
    submissions.publish(world["member"], sub.id, description="Checked, described again")
    assert db.session.get(Submission, sub.id).verified_at is None
    submissions.verify(world["admin"], sub.id, "weights checked")
    submissions.unpublish(world["member"], sub.id)
    submissions.publish(world["member"], sub.id)
    assert _on_board(split, sub.id).verified is None


def test_the_verified_board_ranks_its_entries_among_themselves(world):
    """`verified=1` is the board the verified entries would make alone (the same ranks, rank intervals and
    resolution as a board where only they are published), not the whole board's ranks filtered."""
    split = catalog.get_split("nlvr2", "dev")
    best = _entry(world, 0.97, 1, "Best")
    checked_high = _entry(world, 0.9, 2, "Checked high")
    middle = _entry(world, 0.62, 3, "Middle")
    checked_low = _entry(world, 0.55, 4, "Checked low")
    for sub in (checked_high, checked_low):
        submissions.verify(world["admin"], sub.id, "code and weights checked")
    whole = leaderboards.board("nlvr2", "dev")
    ranked = {e.submission_id: e.rank for e in whole.entries}
    assert ranked[checked_low.id] > 2  # decided worse than Best and Checked high on the whole board

    only = leaderboards.board("nlvr2", "dev", verified="1")
    assert only.verified_only and [e.submission_id for e in only.entries] == [checked_high.id, checked_low.id]
    assert [e.position for e in only.entries] == [1, 2]
    assert all(e.rank_high is not None and e.rank_high <= 2 for e in only.entries)
    found = [(e.rank, e.rank_low, e.rank_high) for e in only.entries]
    resolution = only.resolution
    assert leaderboards.board("nlvr2", "dev", verified="0").entries == whole.entries
    with pytest.raises(leaderboards.InvalidQuery, match="verified"):
        leaderboards.board("nlvr2", "dev", verified="yes")

    for sub in (best, middle):
        submissions.unpublish(world["member"], sub.id)
    alone = leaderboards.board("nlvr2", "dev")
    assert [e.submission_id for e in alone.entries] == [checked_high.id, checked_low.id]
    assert [(e.rank, e.rank_low, e.rank_high) for e in alone.entries] == found
    assert alone.resolution == resolution
    assert split.board_version > 0


def test_the_command_line_verifies_and_unverifies(world, app):
    sub = _entry(world, 0.8, 1, "Checked")
    runner = app.test_cli_runner()
    done = runner.invoke(args=["entries", "verify", str(sub.id), "--note", "reran it", "--url", "https://e.org/x"])
    assert done.exit_code == 0, done.output
    assert "marked verified" in done.output
    refused = runner.invoke(args=["entries", "verify", str(sub.id), "--note", " "])
    assert refused.exit_code == 2 and "note" in refused.output
    assert runner.invoke(args=["entries", "unverify", str(sub.id)]).exit_code == 0
    missing = runner.invoke(args=["entries", "unverify", "999999"])
    assert missing.exit_code == 2 and "no submission 999999" in missing.output
    assert _actions() == [
        ("entry.verify", {"via": "cli", "note": "reran it", "url": "https://e.org/x"}),
        ("entry.unverify", {"via": "cli"}),
    ]
