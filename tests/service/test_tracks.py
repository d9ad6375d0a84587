"""Tracks (issue 38) at the service: a track's board is the board its entries would make published alone (ranks
1..N', rank intervals, resolution, the row-agreement sum within the track) for every registered family; and
the queue path: the board's job stores each named track's board (the verified one only once an entry is
verified), a reader is served it without computing, the stored one marked updating after a change, and a
removed track's stored board goes."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select

from app.db import db
from app.evaluation import TASK_TYPES, get_task
from app.models import Team, TrackSnapshot
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.catalog import entry_fields, tracks
from app.services.intake import submissions
from app.services.jobs import queue, transport
from app.services.maintenance import maintainer_actions
from tests.support.submission_world import build_submission_world

pytestmark = pytest.mark.postgres(
    reason="a track keeps entries by their JSON fields and its board is stored in track_snapshots, on both dialects"
)

SIZE = 120
ZERO_SHOT = (True, False, True, True, False, True)  # the entries' zero_shot, in upload order


def _zero_shot_field(benchmark: str) -> None:
    entry_fields.add_field(benchmark, entry_fields.checked_spec("zero_shot", "Zero-shot", "yesno", filterable=True))


def _rows(entries) -> list[tuple[int, int | None, int | None]]:
    return [(e.rank, e.rank_low, e.rank_high) for e in entries]


def _agrees(entries) -> None:
    """Ranks 1..N' among the track's N' entries, and what each row says it is surely better / worse than sums the
    same: Σ(rank_low - 1) = Σ(N' - rank_high)."""
    k = len(entries)
    lows = np.array([e.rank_low for e in entries])
    highs = np.array([e.rank_high for e in entries])
    assert [e.position for e in entries] == list(range(1, k + 1))
    assert ((lows >= 1) & (lows <= highs) & (highs <= k)).all()
    assert [e.rank for e in entries] == lows.tolist()
    assert (lows - 1).sum() == (k - highs).sum()


# Every family on SQLite; on PostgreSQL one family: what depends on the dialect (the JSON fields read, the ids
# kept) is the same code for every family, and the other eight repeats cost 4 s of CI time.
@pytest.mark.parametrize(
    "family", [f if f == "nlvr2" else pytest.param(f, marks=pytest.mark.one_backend) for f in sorted(TASK_TYPES)]
)
def test_a_tracks_board_is_the_board_of_its_entries_published_alone(ctx, family):
    """For every family: the zero-shot track's board (ranked among its entries) equals the whole board of another
    split with the same gold where only those entries are published."""
    task = get_task(family)
    split_name = "test1" if family == "nlvr2-contrast" else "dev"
    data = task.synthetic_gold(SIZE, seed=3, split=split_name)
    catalog.add_benchmark("bench", family, task.label)
    _zero_shot_field("bench")
    tracks.add_track("bench", "zero-shot", "Zero-shot", ["zero_shot:yes"])
    catalog.add_split("bench", "whole", data)
    catalog.add_split("bench", "alone", data)
    whole, alone = catalog.get_split("bench", "whole"), catalog.get_split("bench", "alone")
    team = Team(name="Lab")
    db.session.add(team)
    db.session.commit()
    for i, zero_shot in enumerate(ZERO_SHOT):
        upload = task.synthetic_predictions(data, 0.45 + 0.09 * i, seed=20 + i, **task.demo_split_options(split_name))
        fields = {"zero_shot": "yes" if zero_shot else "no"}
        submissions.store_scored(whole, team, upload, model_name=f"m{i}", publish=True, fields=fields)
        if zero_shot:
            submissions.store_scored(alone, team, upload, model_name=f"m{i}", publish=True, fields=fields)

    chosen = tracks.selection(whole.benchmark_id, track="zero-shot")
    assert chosen is not None and chosen.named and chosen.track == "zero-shot"
    track_board = board_snapshots.selected_snapshot(whole, chosen)
    reference = board_snapshots.snapshot(alone)
    assert len(track_board.entries) == sum(ZERO_SHOT) == len(reference.entries)
    assert [e.model_name for e in track_board.entries] == [e.model_name for e in reference.entries]
    assert _rows(track_board.entries) == _rows(reference.entries)
    assert track_board.resolutions == reference.resolutions
    _agrees(track_board.entries)
    everyone = board_snapshots.snapshot(whole)
    assert len(everyone.entries) == len(ZERO_SHOT)
    # The same ad-hoc (one memo for the conditions however written) is the same board.
    adhoc = tracks.selection(whole.benchmark_id, where=["zero_shot:yes"])
    assert adhoc is not None and not adhoc.named
    assert _rows(board_snapshots.selected_snapshot(whole, adhoc).entries) == _rows(reference.entries)


# --- the queue path ------------------------------------------------------------------------------------------


@pytest.fixture
def world(ctx):
    made = build_submission_world()
    _zero_shot_field("nlvr2")
    tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
    return made


def _publish(world, accuracy: float, seed: int, zero_shot: bool):
    from app import synthetic

    data = synthetic.predictions("nlvr2", world["gold"], accuracy, seed=seed)
    split = catalog.get_split("nlvr2", "dev")
    fields = {"zero_shot": "yes" if zero_shot else "no"}
    return submissions.store_scored(
        split, world["lab"], data, model_name=f"model-{seed}", description="d", publish=True, fields=fields
    )


def _workers(app, monkeypatch) -> list[queue.Queued]:
    """JOB_QUEUE=procrastinate with the workers stood in for: what is handed to them is only recorded."""
    handed: list[queue.Queued] = []
    monkeypatch.setattr(transport, "defer", lambda job: handed.append(job) or True)
    app.config["JOB_QUEUE"] = "procrastinate"
    return handed


def _counting(monkeypatch) -> list:
    """Every board computation, with its selection's name (None: the whole board)."""
    calls: list = []
    real = board_snapshots._compute

    def counted(split, version, until=None, *, selection=None):
        calls.append(selection.track if selection is not None else None)
        return real(split, version, until, selection=selection)

    monkeypatch.setattr(board_snapshots, "_compute", counted)
    return calls


def _stored() -> dict[str, int]:
    db.session.rollback()
    return dict(db.session.execute(select(TrackSnapshot.track, TrackSnapshot.version)).tuples().all())


def _run_waiting() -> None:
    db.session.rollback()
    transport.run_due_here()
    db.session.rollback()


def test_the_board_job_stores_each_named_track_and_readers_get_it_without_computing(world, app, monkeypatch):
    handed = _workers(app, monkeypatch)
    first = _publish(world, 0.8, 1, zero_shot=True)
    _publish(world, 0.7, 2, zero_shot=False)
    third = _publish(world, 0.6, 3, zero_shot=True)
    assert {job.kind for job in handed} == {"board"}
    calls = _counting(monkeypatch)
    _run_waiting()
    split = catalog.get_split("nlvr2", "dev")
    version = split.board_version
    # The whole board and the zero-shot track; no verified board while no entry is verified.
    assert sorted(calls, key=str) == [None, "zero-shot"]
    assert _stored() == {"zero-shot": version}

    board_snapshots._track_memo.clear()  # another process: it reads the stored board
    calls.clear()
    api = app.test_client().get("/api/v1/leaderboards/nlvr2/dev?track=zero-shot").get_json()
    assert [e["submission_id"] for e in api["entries"]] == [first.id, third.id]
    assert api["track"] == "zero-shot" and api["updating_since"] is None
    assert calls == []

    maintainer_actions.verify_entry(world["admin"], first.id, "code and weights checked")
    calls.clear()
    _run_waiting()
    assert sorted(calls, key=str) == [None, "verified", "zero-shot"]
    split = catalog.get_split("nlvr2", "dev")
    assert _stored() == {"verified": split.board_version, "zero-shot": split.board_version}

    # A change: the reader is served the stored track board, marked as updating, and computes nothing.
    calls.clear()
    _publish(world, 0.9, 4, zero_shot=True)
    board_snapshots._track_memo.clear()
    api = app.test_client().get("/api/v1/leaderboards/nlvr2/dev?track=zero-shot").get_json()
    assert api["updating_since"] is not None
    assert [e["submission_id"] for e in api["entries"]] == [first.id, third.id]
    assert calls == []

    # A removed track's stored board goes with the board's next build.
    tracks.remove_track("nlvr2", "zero-shot")
    _run_waiting()
    assert set(_stored()) == {"verified"}
    refused = app.test_client().get("/api/v1/leaderboards/nlvr2/dev?track=zero-shot")
    assert refused.status_code == 400 and "zero-shot" in refused.get_json()["error"]
    maintainer_actions.unverify_entry(world["admin"], first.id)  # no track left to build: none stored
    _run_waiting()
    assert _stored() == {}


def test_while_a_changed_track_waits_for_its_job_no_entry_outside_it_is_shown(world, app, monkeypatch):
    """A track's conditions changed (tracks.store), or an entry unverified: until the job rebuilds the track's
    board, the reader is served the last stored one marked as updating, but never an entry the track as now
    defined leaves out (the page states the new conditions above it), as an entry hidden meanwhile is never
    shown."""
    _workers(app, monkeypatch)
    checked = _publish(world, 0.8, 1, zero_shot=True)
    other = _publish(world, 0.7, 2, zero_shot=False)
    maintainer_actions.verify_entry(world["admin"], checked.id, "code and weights checked")
    _run_waiting()
    version = catalog.get_split("nlvr2", "dev").board_version
    assert _stored() == {"verified": version, "zero-shot": version}
    calls = _counting(monkeypatch)
    benchmark = catalog.get_benchmark("nlvr2")
    spec = tracks.checked_track(benchmark, "zero-shot", "Zero-shot", ["zero_shot:no"])
    tracks.store(benchmark, spec, actor=None, via="test")
    db.session.commit()
    maintainer_actions.unverify_entry(world["admin"], checked.id)
    board_snapshots._track_memo.clear()
    client = app.test_client()
    api = client.get("/api/v1/leaderboards/nlvr2/dev?track=zero-shot").get_json()
    assert api["where"] == ["zero_shot:no"] and api["updating_since"] is not None
    assert [e["submission_id"] for e in api["entries"]] == []  # the stored board's entry is zero-shot
    verified = client.get("/api/v1/leaderboards/nlvr2/dev?track=verified").get_json()
    assert verified["updating_since"] is not None and verified["entries"] == []
    assert calls == []
    _run_waiting()
    api = client.get("/api/v1/leaderboards/nlvr2/dev?track=zero-shot").get_json()
    assert api["updating_since"] is None
    assert [e["submission_id"] for e in api["entries"]] == [other.id]


def test_a_track_on_a_blind_test_ranks_from_the_released_counts_and_tells_no_other_figure(ctx):
    """On a hidden split under `full` before its reveal (a counts-only board): the track's board is the board of
    its entries published alone on a like split, and each row carries the very figures the whole board does."""
    from app import synthetic

    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    _zero_shot_field("nlvr2")
    tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
    gold = synthetic.nlvr2_gold(SIZE, split="test", seed=7)
    for slug in ("whole", "alone"):
        catalog.add_split("nlvr2", slug, gold, hidden=True)
        catalog.set_policy("nlvr2", slug, feedback="full")
    whole, alone = catalog.get_split("nlvr2", "whole"), catalog.get_split("nlvr2", "alone")
    team = Team(name="Lab")
    db.session.add(team)
    db.session.commit()
    for i, zero_shot in enumerate(ZERO_SHOT):
        data = synthetic.predictions("nlvr2", gold, 0.5 + 0.08 * i, seed=40 + i, split="test")
        fields = {"zero_shot": "yes" if zero_shot else "no"}
        for split in (whole, alone) if zero_shot else (whole,):
            submissions.store_scored(split, team, data, model_name=f"m{i}", publish=True, fields=fields)
    chosen = tracks.selection(whole.benchmark_id, track="zero-shot")
    assert chosen is not None
    track_board = board_snapshots.selected_snapshot(whole, chosen)
    reference = board_snapshots.snapshot(alone)
    assert len(track_board.entries) == sum(ZERO_SHOT)
    assert _rows(track_board.entries) == _rows(reference.entries)
    assert track_board.resolutions == reference.resolutions
    _agrees(track_board.entries)
    everyone = {e.submission_id: e for e in board_snapshots.snapshot(whole).entries}
    for entry in track_board.entries:
        assert (entry.scores, entry.intervals) == (
            everyone[entry.submission_id].scores,
            everyone[entry.submission_id].intervals,
        )
