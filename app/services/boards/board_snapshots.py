"""Board snapshots: every published entry of a split with its scores, intervals and ranks.

Everything a leaderboard shows (scores, intervals, rank tiers, reference rows) is computed in one
vectorised pass over the split's stored predictions (app.evaluation.statistics) once per change of what
the board shows: publishing, hiding, a new subset, a reference row, a policy change all bump
Split.board_version, and the commit that bumps it queues a "board" job (app/services/jobs) that builds the
snapshot and stores it, compressed, in LeaderboardCache. Readers never wait for it: they are served the
last finished snapshot, marked as updating since the change (`Snapshot.updating_since`), less any entry
taken off the board meanwhile; each process keeps the decoded snapshot in memory. Only a board that never
had a snapshot, or one whose jobs would run in-process (JOB_QUEUE=inline), is built by its reader: in-process
no board job is queued at all (nothing would run one that no reader asks for, and /healthz would call it
stuck), the first reader after a change builds the board. A publish is answered from the last stored snapshot
alone (last_entries): it never builds one, nor waits for one.

A board is rebuilt at most once in BOARD_REBUILD_SECONDS, whoever builds it: a change that comes sooner after
the last build waits for the window's end (its job is queued to run then; in-process, readers until then get
the last board, marked as updating since it was built, less any entry taken off it), so N changes within a
window cost one rebuild, however many toggles a team sends.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import threading
import time
import zlib
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from functools import cached_property
from typing import Any, cast

import numpy as np
from sqlalchemy import CursorResult, delete, event, exists, insert, inspect, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from threadpoolctl import threadpool_limits

from app import observability, settings
from app.db import db, has_changes, may_hold_write_lock, own_session
from app.evaluation import display, sealed, statistics
from app.lru import LRU
from app.models import (
    ChangelogEntry,
    LeaderboardCache,
    Reference,
    Split,
    Submission,
    Team,
    TrackSnapshot,
    as_utc,
    utcnow,
)
from app.names import name_key
from app.services import catalog
from app.services.blind_test import integrity, visibility
from app.services.catalog import entry_fields, label_files, stored_results, tracks
from app.services.errors import Throttled
from app.services.jobs import queue, transport

log = logging.getLogger(__name__)

VIEW_NAMES = ("entries", "teams", "models")  # the boards a snapshot ranks: each a family of its own
GAP = "gap"  # the pseudo-subset an entry's gap is kept under (queried minus sealed, primary metric)
# Bump when the stored payload's shape changes, or what a field holds (4: model keys by look-alike names; 5: a
# blind test's figures before its reveal are the released ones, rounded, without subset intervals, ranked from
# counts alone; 6: with the decimals each released figure is written to; 7: each entry's team slug; 8: one
# decision per pair of each view, the models view's own ranks and each view's resolution; 9: a resolution on
# 0/1 units never under z^2 / units and none over 100 points, statistics.resolution; 10: each entry's verified
# mark; 11: its entry fields): older rows are then recomputed.
PAYLOAD_FORMAT = 11


@dataclass
class Entry:
    rank: int  # 1 + entries decided better (statistics: one decision per pair of the board)
    submission_id: int
    model_name: str
    team: str | None  # None when the team chose to appear anonymously
    submitted_at: datetime
    paper_url: str | None
    code_url: str | None
    description: str
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    # (ci_low, ci_high) per subset and metric; None bounds where no interval exists
    intervals: dict[str, dict[str, tuple[float | None, float | None]]] = field(default_factory=dict)
    position: int = 0  # 1-based place in the default ranking
    rank_low: int | None = None  # the rank interval [1 + B, N - W] (statistics.view_ranks): rank_low is the rank
    rank_high: int | None = None
    team_key: str = ""  # what view=teams groups by: "team:<id>", or "anonymous:<submission id>"
    model_key: str = ""  # what the models view groups by: the team key plus the model name, trimmed, folded
    # Ranks among each team's best entry (view=teams); None for an entry that is not its team's best.
    team_rank: int | None = None
    team_rank_low: int | None = None
    team_rank_high: int | None = None
    # A sealed blind test after its reveal: the one-sided p-value of the gap (scores["gap"], queried minus
    # sealed on the primary metric) and whether it is larger than sampling explains; None elsewhere.
    gap_p: float | None = None
    gap_marked: bool | None = None
    team_slug: str | None = None  # the team's public page, /teams/<slug> (None when anonymous)
    # Ranks among each model's latest entry (the models view, a board of its own); None for an entry that is not
    # its model's latest.
    model_rank: int | None = None
    model_rank_low: int | None = None
    model_rank_high: int | None = None
    # A maintainer's check of the entry: {"at": isoformat, "note": ..., "url": ... or None}; None: not verified.
    verified: dict[str, str | None] | None = None
    fields: dict[str, bool | int | str] = field(default_factory=dict)  # its entry fields (catalog.entry_fields)

    kind = "entry"

    @property
    def rank_interval(self) -> str:
        """'2–5' (or '3' when the interval is one rank)."""
        if self.rank_low is None or self.rank_high is None:
            return ""
        return str(self.rank_low) if self.rank_low == self.rank_high else f"{self.rank_low}–{self.rank_high}"

    def as_team_best(self) -> Entry:
        """This entry as a row of view=teams: ranked among the teams' best entries."""
        twin = copy.copy(self)  # shallow, as dataclasses.replace, which is several times slower per row
        twin.rank, twin.rank_low, twin.rank_high = self.team_rank or self.rank, self.team_rank_low, self.team_rank_high
        return twin

    def value(self, column) -> float | None:
        return self.scores.get(column.subset, {}).get(column.metric)

    def interval(self, column) -> tuple[float | None, float | None]:
        return self.intervals.get(column.subset, {}).get(column.metric, (None, None))


@dataclass
class ReferenceRow:
    """A baseline or human-performance row from a paper: shown where its primary score falls, never ranked."""

    id: int
    name: str
    source_url: str | None
    created_at: datetime
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    published_on: date | None = None  # the day its figures were published, when the maintainer gave it

    kind = "reference"
    rank = None  # never ranked: a reference row has no rank of its own

    def value(self, column) -> float | None:
        return self.scores.get(column.subset, {}).get(column.metric)

    def interval(self, column) -> tuple[float | None, float | None]:
        return (None, None)


@dataclass(frozen=True)
class ChangelogLine:
    date: datetime
    message: str


@dataclass
class Snapshot:
    version: int
    entries: list[Entry]
    references: list[ReferenceRow]
    changelog: list[ChangelogLine] = field(default_factory=list)  # label corrections..., newest first
    # Set on a snapshot served while a newer one is being built: when the oldest change not in it was made.
    updating_since: datetime | None = None
    # Per view ("entries", "teams", "models"): the smallest difference in points its own pair decisions detect
    # with 80% power (statistics.resolution); None with fewer than two entries.
    resolutions: dict[str, float | None] = field(default_factory=dict)
    spreads: dict[str, float | None] = field(default_factory=dict)  # what each resolution came from (a unit's sd)
    built_at: datetime | None = None  # when its computation began (for a stored one: when it was stored)
    # The benchmark's entry fields when it was built (a change of them bumps the board's version).
    field_specs: tuple[entry_fields.FieldSpec, ...] = ()

    @cached_property
    def team_entries(self) -> list[Entry]:
        return [entry.as_team_best() for entry in self.entries if entry.team_rank is not None]

    def rows(self, view: str) -> list[Entry]:
        return self.team_entries if view == "teams" else self.entries


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _shown(value: float) -> float | None:
    """A column's value or bound as the snapshot keeps it: a released figure stays one (it carries the decimals
    it is written with, display.Figure), anything else a plain float; None where there is none."""
    if isinstance(value, display.Figure):
        return value if math.isfinite(value) else None
    return _finite(value)


def _compute(
    split: Split, version: int, until: datetime | None = None, *, selection: tracks.Selection | None = None
) -> Snapshot:
    """Scores, intervals and rank tiers of every published entry, from the stored predictions (`until`: of the
    entries on the board as it stood then, see final_snapshot; `selection`: of the entries a track keeps alone,
    ranked among themselves, see selected_snapshot)."""
    built_at = utcnow()
    task = catalog.task_of(split.benchmark)
    specs = tuple(entry_fields.specs(split.benchmark_id))
    rows = _published_rows(split, until, selection, results=task.results_dtype is not None)
    entries: list[Entry] = []
    if rows:
        gold, stacked, wanted, gaps = _scoring_inputs(split, task, rows)
        moments = [as_utc(row.created_at) for row in rows]
        table, order, placed, by_view = _statistics(task, gold, stacked, wanted, rows, moments, split)
        del stacked  # not needed again (70 MB on a 10,000-entry board)
        team_keys = placed["team_keys"]
        ranked, team_ranked, model_ranked = by_view["entries"], by_view["teams"], by_view["models"]
        resolutions = {name: view.resolution for name, view in by_view.items()}
        spreads = {name: view.spread for name, view in by_view.items()}
        by_position = {position: index for index, position in enumerate(placed["best"])}
        by_latest = {position: index for index, position in enumerate(placed["latest"])}
        # Python floats once per column (indexing numpy arrays entry by entry costs more than the rest here), as
        # anyone may read them (on a blind test before its reveal: the released figures, visibility.released_column).
        subsets = {name: indices for name, (indices, _) in wanted.items() if indices is not None}
        columns = [
            (
                subset,
                metric,
                *visibility.released_column(
                    split,
                    task,
                    gold,
                    subsets,
                    (subset, metric),
                    interval.values.tolist(),
                    interval.low.tolist(),
                    interval.high.tolist(),
                ),
            )
            for (subset, metric), interval in table.items()
        ]
        for position, i in enumerate(order.tolist()):
            row = rows[i]
            scores, intervals = _row_scores(columns, i)
            gap_p, gap_marked = _add_gap(task, gaps, i, scores, intervals)
            team_index = by_position.get(position)
            model_index = by_latest.get(position)
            entries.append(
                Entry(
                    rank=ranked.ranks[position],
                    submission_id=row.id,
                    model_name=row.model_name,
                    team=None if row.anonymous else row.name,
                    team_slug=None if row.anonymous else row.slug,
                    submitted_at=moments[i],
                    paper_url=row.paper_url,
                    code_url=row.code_url,
                    description=row.description or "",
                    fields=json.loads(row.fields) if row.fields else {},
                    scores=scores,
                    intervals=intervals,
                    position=position + 1,
                    rank_low=ranked.lows[position],
                    rank_high=ranked.highs[position],
                    team_key=team_keys[position],
                    model_key=model_key(team_keys[position], row.model_name),
                    team_rank=None if team_index is None else team_ranked.ranks[team_index],
                    team_rank_low=None if team_index is None else team_ranked.lows[team_index],
                    team_rank_high=None if team_index is None else team_ranked.highs[team_index],
                    model_rank=None if model_index is None else model_ranked.ranks[model_index],
                    model_rank_low=None if model_index is None else model_ranked.lows[model_index],
                    model_rank_high=None if model_index is None else model_ranked.highs[model_index],
                    gap_p=gap_p,
                    gap_marked=gap_marked,
                    verified=_verified_mark(row),
                )
            )
        return Snapshot(
            version,
            entries,
            _references(split),
            resolutions=resolutions,
            spreads=spreads,
            built_at=built_at,
            field_specs=specs,
        )
    return Snapshot(version, entries, _references(split), built_at=built_at, field_specs=specs)


def _verified_mark(row) -> dict[str, str | None] | None:
    if row.verified_at is None:
        return None
    return {"at": as_utc(row.verified_at).isoformat(), "note": row.verified_note, "url": row.verified_url}


def _add_gap(task, gaps, i: int, scores: dict, intervals: dict) -> tuple[float | None, bool | None]:
    """Row i's sealed gap as a column of its own (when the gap test ran and it has one): its p and mark."""
    if gaps is None or _finite(gaps.gap[i]) is None:
        return None, None
    scores[GAP] = {task.primary_metric: float(gaps.gap[i])}
    intervals[GAP] = {task.primary_metric: (None, None)}
    return _finite(gaps.p[i]), bool(gaps.larger_than_sampling[i])


def _on_board(split: Split) -> tuple:
    """What puts a submission on the split's board: scored, published, not hidden, and what the split's
    visibility admits (the snapshot's rows, and the entries a board served while updating may still show)."""
    return (
        Submission.split_id == split.id,
        Submission.status == "scored",
        Submission.published_at.is_not(None),
        Submission.hidden_at.is_(None),
        visibility.board_entries(split),
    )


def standing_at(until: datetime | None) -> tuple:
    """What kept an entry on the board at a closing time `until` (closed from that instant on, as for uploads):
    uploaded and published before it; nothing more without one. With _on_board's conditions (still published,
    not hidden), the final board's entries: an entry its team withdrew after the closing time has left the
    final board too (its publication is cleared), and one published again after it dates from then, so it is
    on the board but not on the final board; one a maintainer hid stays hidden from both."""
    return () if until is None else (Submission.created_at < until, Submission.published_at < until)


def _kept_ids(split: Split, until: datetime | None, selection: tracks.Selection) -> tuple[int, ...]:
    """The ids of the split's entries on the board (then, with `until`) that a selection keeps, in id order: one
    query of their fields, without the predictions."""
    verified = (Submission.verified_at.is_not(None),) if selection.verified else ()
    facts = db.session.execute(
        select(Submission.id, Submission.fields)
        .where(*_on_board(split), *standing_at(until), *verified)
        .order_by(Submission.id)
    )
    return tuple(sid for sid, text in facts if selection.keeps(entry_fields.values_of(text), True))


def _published_rows(
    split: Split, until: datetime | None = None, selection: tracks.Selection | None = None, *, results: bool = False
) -> Sequence[Any]:
    """The split's entries on the board (scored, published, not hidden), with their teams' names and stored
    predictions, by submission id; with `until` (a closing time), only those on the board then (standing_at);
    with a `selection`, only those it keeps (their fields read first, without the predictions). With `results`
    (a family that keeps compact results) without the predictions: _results_matrix reads the results apart."""
    kept = standing_at(until)
    if selection is not None:
        kept += (Submission.id.in_(_kept_ids(split, until, selection)),)
    return db.session.execute(
        select(
            Submission.id,
            Submission.model_name,
            Submission.anonymous,
            Team.name,
            Team.slug,
            Submission.created_at,
            Submission.paper_url,
            Submission.code_url,
            Submission.description,
            Submission.fields,
            *(() if results else (Submission.predictions,)),
            Submission.team_id,
            Submission.verified_at,
            Submission.verified_note,
            Submission.verified_url,
        )
        .join(Team, Submission.team_id == Team.id)
        .where(*_on_board(split), *kept)
        .order_by(Submission.id)
    ).all()


def _scoring_inputs(split: Split, task, rows: Sequence) -> tuple:
    """What the board is scored on: the gold set, the rows' predictions stacked (or their compact results, for a
    family that keeps them: _results_matrix), the columns wanted ({subset: (indices, metrics)}) and the sealed gap
    test (None unless both parts are public)."""
    gold = label_files.load_gold(split)
    if task.results_dtype is not None:
        stacked = _results_matrix(split, task, gold, [row.id for row in rows])
    else:
        stacked = task.decode_many([row.predictions for row in rows], gold.n)
    public = visibility.public_subsets(split)
    part = visibility.queried_indices(split)
    gaps = None
    if part is not None:
        # Before the reveal of a sealed split the board is its queried part's: scores, intervals, ranks.
        gold, public = visibility.queried_view(split, gold, public, part)
        stacked = stacked[:, part]
    elif sealed.QUERIED in public and sealed.SEALED in public:
        gaps = sealed.gap_test(task, gold, stacked, public[sealed.QUERIED], public[sealed.SEALED])
    sources = {subset.name: subset.source for subset in split.subsets}
    wanted: dict[str, tuple[np.ndarray | None, tuple[str, ...]]] = {"all": (None, catalog.split_metrics(split))}
    wanted.update(
        {
            name: (indices, visibility.subset_metrics(task, sources.get(name, "derived"), split))
            for name, indices in public.items()
        }
    )
    return gold, stacked, wanted, gaps


_RESULT_ROWS = 64  # entries' results read and laid out at a time (29 MB of VQA v2 test-std points)


def _results_matrix(split: Split, task, gold, ids: list[int]) -> np.ndarray:
    """The entries' compact results (TaskType.results_dtype) as a (k, n) matrix in `ids`' order, laid out by example
    underneath ((n, k) in memory, the transposed view given: the statistics read it in place, layout.by_example),
    read from the database a few entries at a time. An entry whose stored results are missing or were counted
    against another gold file is counted from its predictions here (read alone)."""
    unique = list(dict.fromkeys(ids))
    if len(unique) != len(ids):  # an entry twice (compared with itself): read once
        once: np.ndarray = _results_matrix(split, task, gold, unique)
        where = {submission_id: i for i, submission_id in enumerate(unique)}
        return once[[where[submission_id] for submission_id in ids]]
    by_example = np.empty((gold.n, len(ids)), dtype=task.results_dtype)
    column = {submission_id: i for i, submission_id in enumerate(ids)}
    missing = set(ids)
    for chunk in stored_results.each(ids, _RESULT_ROWS):
        block = np.empty((len(chunk), gold.n), dtype=task.results_dtype)
        placed: list[int] = []
        for submission_id, blob in chunk:
            found = stored_results.unpacked(task, split, blob, gold.n)
            if found is not None:
                block[len(placed)] = found
                placed.append(column[submission_id])
                missing.discard(submission_id)
        by_example[:, placed] = block[: len(placed)].T
    for submission_id in sorted(missing):  # none kept, or counted against another gold file: from the predictions
        predictions = db.session.scalar(select(Submission.predictions).where(Submission.id == submission_id))
        by_example[:, column[submission_id]] = task.results(gold, task.decode(predictions, gold.n)[None])[0]
    return by_example.T


def _row_scores(columns: list, i: int) -> tuple[dict, dict]:
    """Row i's scores and intervals, {subset: {metric: ...}}, from the columns' Python floats."""
    scores: dict[str, dict[str, float]] = {}
    intervals: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    for subset, metric, values, lows, highs in columns:
        value = _shown(values[i])
        if value is None:
            continue  # an empty subset has no score
        scores.setdefault(subset, {})[metric] = value
        intervals.setdefault(subset, {})[metric] = (_shown(lows[i]), _shown(highs[i]))
    return scores, intervals


def _statistics(
    task, gold, stacked: np.ndarray, wanted: dict, rows: Sequence, moments: list[datetime], split: Split
) -> tuple:
    """Every column's scores and intervals, the table order, what was placed with it (each row's team key in table
    order, the positions of each team's best entry and of each model's latest), and each view's ranks by name
    (entries, teams, models: each a board of its own, _by_name).

    The significance ranks need only the judgements and the table order (the primary and tie-break columns'
    values, counted before any interval is drawn): they are worked out on a second thread while the columns are
    bootstrapped (numpy lets go of the GIL in both), which takes a 10,000-entry board's first view from two
    cores' time to about one's."""
    primary_key = ("all", task.primary_metric)
    handover = _Handover(rows, moments, primary_key, ("all", task.tie_break_metric) if task.tie_break_metric else None)
    if visibility.counts_only(split):
        return _count_statistics(task, gold, stacked, wanted, handover)
    # One BLAS thread for the bootstrap's products while the ranks take the other core (two would contend).
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(1, "board-ranks") as pool:
        ranking = pool.submit(_rank, task, gold, stacked, handover)
        try:
            table = dict(
                statistics.each_interval(
                    task,
                    gold,
                    stacked,
                    wanted,
                    counts_only=visibility.counts_only(split),
                    on_values=handover.place,
                )
            )
        finally:
            handover.ordered.set()  # never leave the thread waiting (the with would wait for it in turn)
        order = handover.placed["order"]
        # Ranks and rank intervals both from the paired tests (statistics.view_ranks): one procedure.
        ranks = ranking.result()
    return table, order, handover.placed, _by_name(handover.placed["view_names"], ranks)


def _count_statistics(task, gold, stacked: np.ndarray, wanted: dict, handover: _Handover) -> tuple:
    """_statistics on a blind test before its reveal: intervals from each entry's count alone, and ranks and rank
    intervals from the primary column's counts alone (statistics.count_ranks: an unpaired test, where the board
    after the reveal pairs the entries' judgements), so that the board shows nothing the released counts do not
    tell. No second thread: no paired test to run."""
    table = dict(statistics.each_interval(task, gold, stacked, wanted, counts_only=True, on_values=handover.place))
    order, views = handover.placed["order"], handover.placed["views"]
    found = integrity.resolution(task, gold, {}, "all", task.primary_metric)
    assert found is not None  # the whole split's primary metric always has a count
    units, _ = found
    primary = handover.values[handover.primary_key][order]
    ranks = statistics.count_ranks(primary, units, views)
    return table, order, handover.placed, _by_name(handover.placed["view_names"], ranks)


@dataclass(frozen=True)
class _ViewRanks:
    """One view's ranks as plain lists (table order within the view), and its resolution."""

    ranks: list[int]
    lows: list[int]
    highs: list[int]
    resolution: float | None
    spread: float | None


def _by_name(names: list[str], found: list[statistics.Ranks]) -> dict[str, _ViewRanks]:
    """{view name: its ranks}; a view that is the whole board (every entry its team's best, or its model's latest)
    is the board's own."""
    by_name = {
        name: _ViewRanks(r.ranks.tolist(), r.lows.tolist(), r.highs.tolist(), r.resolution, r.spread)
        for name, r in zip(names, found, strict=True)
    }
    for name in VIEW_NAMES:
        by_name.setdefault(name, by_name["entries"])
    return by_name


class _Handover:
    """What the bootstrap (main thread) hands the ranks' thread: the columns' values as they are counted, and
    (`placed`: order, team_keys, best, views; `ordered` set) the table order once the primary and tie-break
    columns are in."""

    def __init__(
        self, rows: Sequence, moments: list[datetime], primary_key: tuple[str, str], tie_key: tuple[str, str] | None
    ):
        self.rows, self.moments, self.primary_key, self.tie_key = rows, moments, primary_key, tie_key
        self.values: dict[tuple[str, str], np.ndarray] = {}
        self.placed: dict = {}
        self.ordered = threading.Event()

    def place(self, key: tuple[str, str], column: np.ndarray) -> None:
        values, rows, tie_key = self.values, self.rows, self.tie_key
        values[key] = column
        if self.ordered.is_set() or self.primary_key not in values or (tie_key is not None and tie_key not in values):
            return
        order = _table_order(
            rows, self.moments, values[self.primary_key], values[tie_key] if tie_key else np.zeros(len(rows))
        )
        team_keys = [f"anonymous:{rows[i].id}" if rows[i].anonymous else f"team:{rows[i].team_id}" for i in order]
        best = _first_of_each(team_keys)  # positions of each team's best entry
        model_keys = [model_key(team, rows[i].model_name) for team, i in zip(team_keys, order, strict=True)]
        latest = _latest_of_each(model_keys, [self.moments[i] for i in order], [rows[i].id for i in order])
        # Each view is a board of its own (its own N, its own pair decisions), ranked on the board's pair counts
        # in the same pass (statistics.view_ranks); a view holding every entry is the board itself.
        names: list[str] = ["entries"]
        views: list[np.ndarray | None] = [None]
        for name, positions in (("teams", best), ("models", latest)):
            if len(positions) != len(order):
                names.append(name)
                views.append(np.asarray(positions))
        self.placed.update(order=order, team_keys=team_keys, best=best, latest=latest, views=views, view_names=names)
        self.ordered.set()


def _rank(task, gold, stacked: np.ndarray, handover: _Handover) -> list[statistics.Ranks]:
    """The ranks and rank intervals of the board and its teams view (the ranks' thread)."""
    if task.unit_points(gold) > 1:  # soft scores: a paired permutation test on the points (no McNemar)
        scores = task.unit_scores(gold, stacked)
        handover.ordered.wait()
        if "order" not in handover.placed:
            return []
        order = handover.placed["order"]
        primary = handover.values[handover.primary_key][order]
        return statistics.paired_view_ranks(
            scores, primary, handover.placed["views"], order=order, full_points=task.unit_points(gold)
        )
    # Meanwhile, what needs no order: the judgements packed, the tests' library loaded.
    judgements = [statistics.PackedJudgements.of_predictions(task, gold, stacked)]
    statistics.load_tests()
    handover.ordered.wait()
    if "order" not in handover.placed:
        return []  # the columns failed: the error is the main thread's to raise
    order = handover.placed["order"]
    # Handed over (popped): the rows in submission order are let go of once view_ranks has reordered them.
    return statistics.view_ranks(
        judgements.pop(), handover.values[handover.primary_key][order], handover.placed["views"], order=order
    )


def _table_order(rows: Sequence, moments: list[datetime], primary: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """Primary metric (descending), tie-break metric (descending), then submission time and id."""
    times = np.array([moment.timestamp() for moment in moments])
    ids = np.array([row.id for row in rows])
    return np.lexsort((ids, times, -np.nan_to_num(tie, nan=-1.0), -np.nan_to_num(primary, nan=-1.0)))


def _latest_of_each(keys: list[str], moments: list[datetime], ids: list[int]) -> list[int]:
    """Ascending positions of each key's latest entry (by submission time, then id): the models view's rows."""
    latest: dict[str, int] = {}
    for position, key in enumerate(keys):
        current = latest.get(key)
        if current is None or (moments[position], ids[position]) > (moments[current], ids[current]):
            latest[key] = position
    return sorted(latest.values())


def _first_of_each(keys: list[str]) -> list[int]:
    seen: set[str] = set()
    firsts = []
    for position, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            firsts.append(position)
    return firsts


def model_key(team_key: str, model_name: str) -> str:
    """A model is a team plus its model name, as names are compared (app/names.py: names differing in case,
    spaces, compatibility forms or look-alike letters are one model); each anonymous entry is its own."""
    if team_key.startswith("anonymous:"):
        return team_key
    return f"{team_key}/{name_key(model_name)}"


def changelog(split: Split) -> list[ChangelogLine]:
    """The split's public changelog, newest first (what the board shows under its table); every line is
    written with a board_version bump, so it goes with the snapshot."""
    return changelog_of(split.id)


def changelog_of(split_id: int) -> list[ChangelogLine]:
    rows = db.session.execute(
        select(ChangelogEntry.created_at, ChangelogEntry.message)
        .where(ChangelogEntry.split_id == split_id)
        .order_by(ChangelogEntry.created_at.desc(), ChangelogEntry.id.desc())
    ).all()
    return [ChangelogLine(as_utc(created_at), message) for created_at, message in rows]


def _references(split: Split) -> list[ReferenceRow]:
    rows = db.session.scalars(select(Reference).where(Reference.split_id == split.id).order_by(Reference.id))
    return [
        ReferenceRow(r.id, r.name, r.source_url, as_utc(r.created_at), json.loads(r.scores), r.published_on)
        for r in rows
    ]


# --- the stored payload ----------------------------------------------------------------------------------


# An entry in the stored payload: a list of these fields' values, in this order (bump PAYLOAD_FORMAT on a change).
_PAYLOAD_FIELDS = (
    "rank",
    "submission_id",
    "model_name",
    "team",
    "submitted_at",  # isoformat
    "paper_url",
    "code_url",
    "description",
    "scores",
    "intervals",  # (low, high) tuples: json writes them as lists
    "position",
    "rank_low",
    "rank_high",
    "team_key",
    "model_key",
    "team_rank",
    "team_rank_low",
    "team_rank_high",
    "gap_p",
    "gap_marked",
    "team_slug",
    "model_rank",
    "model_rank_low",
    "model_rank_high",
    "verified",
    "fields",
)
_MOMENT = _PAYLOAD_FIELDS.index("submitted_at")


def _encode(snapshot: Snapshot) -> bytes:
    body = {
        "format": PAYLOAD_FORMAT,
        "entries": [_encoded_entry(e) for e in snapshot.entries],
        "decimals": _figure_decimals(snapshot.entries),
        "resolutions": snapshot.resolutions,
        "spreads": snapshot.spreads,
        "fields": [spec.as_dict() for spec in snapshot.field_specs],
        "references": [
            [
                r.id,
                r.name,
                r.source_url,
                r.created_at.isoformat(),
                r.scores,
                r.published_on.isoformat() if r.published_on else None,
            ]
            for r in snapshot.references
        ],
    }
    # Level 1: a third of level 6's time on a 10,000-entry board, for a tenth more bytes.
    return zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 1)


def _encoded_entry(entry: Entry) -> list:
    values = [getattr(entry, name) for name in _PAYLOAD_FIELDS]
    values[_MOMENT] = entry.submitted_at.isoformat()
    return values


def _figure_decimals(entries: list[Entry]) -> dict[str, dict[str, int]]:
    """{subset: {metric: decimals}} of the columns that hold released figures (JSON keeps only their values):
    a column's figures all share its decimals (integrity.resolution depends on the column alone)."""
    found: dict[str, dict[str, int]] = {}
    for entry in entries:
        for subset, metrics in entry.scores.items():
            for metric, value in metrics.items():
                if isinstance(value, display.Figure):
                    found.setdefault(subset, {})[metric] = value.decimals
    return found


def _as_figures(entry: Entry, decimals: dict[str, dict[str, int]]) -> None:
    """The released figures of a decoded entry marked again with their decimals (see _figure_decimals)."""
    for subset, metrics in decimals.items():
        for metric, places in metrics.items():
            value = entry.scores.get(subset, {}).get(metric)
            if value is None:
                continue
            entry.scores[subset][metric] = display.figure(value, places)
            low, high = entry.intervals.get(subset, {}).get(metric, (None, None))
            if low is not None and high is not None:
                entry.intervals[subset][metric] = (display.figure(low, places), display.figure(high, places))


def _decode(version: int, payload: bytes, built_at: datetime | None = None) -> Snapshot | None:
    try:
        body = json.loads(zlib.decompress(payload))
    except (zlib.error, ValueError):
        return None
    if body.get("format") != PAYLOAD_FORMAT:
        return None
    entries = [_decoded_entry(values) for values in body["entries"]]
    for entry in entries:
        _as_figures(entry, body["decimals"])
    references = [_decoded_reference(values) for values in body["references"]]
    specs = tuple(
        entry_fields.FieldSpec(
            d["key"],
            d["label"],
            d["type"],
            tuple(d["choices"] or ()),
            d["unit"],
            d["required"],
            d["column"],
            d["filter"],
        )
        for d in body["fields"]
    )
    return Snapshot(
        version,
        entries,
        references,
        resolutions=body["resolutions"],
        spreads=body["spreads"],
        built_at=built_at,
        field_specs=specs,
    )


def _decoded_reference(values: list) -> ReferenceRow:
    rid, name, url, moment, scores, *rest = values
    day = rest[0] if rest else None  # a payload stored before references had dates: those rows had none
    return ReferenceRow(
        rid, name, url, datetime.fromisoformat(moment), scores, date.fromisoformat(day) if day else None
    )


def _decoded_entry(values: list) -> Entry:
    fields = dict(zip(_PAYLOAD_FIELDS, values, strict=True))
    fields["submitted_at"] = datetime.fromisoformat(fields["submitted_at"])
    fields["intervals"] = {s: {m: (b[0], b[1]) for m, b in ms.items()} for s, ms in fields["intervals"].items()}
    return Entry(**fields)


def _share(split_id: int, version: int, payload: bytes, track: str | None = None) -> None:
    """Store a computed snapshot for every worker, while the split is still at that version.

    The one place a read writes, and why: the first reader after a change computes the board (seconds on
    a crowded one) and every other worker and server should not compute it again. It never commits the
    reader's transaction: it does nothing when the reader has changes of its own, pending or flushed, and
    otherwise writes on a connection of its own. A write request's transaction that only read (a publication's
    answer says where the entry now is) is ended first: it may hold a lock this write would wait for (SQLite's
    write lock, taken when it began), and there is nothing in it to lose; the board it built is shared like
    any other (else every server would build it again, and count its window from an older build). On SQLite
    the reader's read-only transaction is ended afterwards too, so that a write the reader makes later does
    not start from a snapshot older than this one. A failure (two workers inserting the first row at once, a
    busy database) means a later reader computes again."""
    if has_changes():
        return
    if may_hold_write_lock():
        db.session.rollback()
    still_current = exists().where(Split.id == split_id, Split.board_version == version)
    values = {"version": version, "payload": payload, "computed_at": utcnow()}
    table: Any = LeaderboardCache if track is None else TrackSnapshot
    mine = (table.split_id == split_id,) + (() if track is None else (TrackSnapshot.track == track,))
    named = {} if track is None else {"track": track}
    try:
        with db.engine.begin() as connection:
            updated = connection.execute(update(table).where(*mine, still_current).values(values)).rowcount
            if not updated:
                already = connection.execute(select(table.split_id).where(*mine)).first()
                if already is None and connection.execute(select(Split.id).where(still_current)).first():
                    connection.execute(insert(table).values(split_id=split_id, **named, **values))
    except SQLAlchemyError as exc:
        log.warning("leaderboard cache for split %s (%s) not stored: %s", split_id, track or "board", exc)
    if db.session.get_bind().dialect.name == "sqlite":
        db.session.rollback()


_memo: LRU[Snapshot] = LRU(64)


def memo_get(split_id: int, version: int) -> Snapshot | None:
    """The snapshot this process holds for the split, if it is at that version (no query)."""
    hit = _memo.get((str(db.engine.url), split_id))
    return hit if hit is not None and hit.version == version else None


def board_key(split_id: int) -> str:
    return f"board:{split_id}"


def snapshot(split: Split) -> Snapshot:
    """The split's board: at its current version when that is built, else the last finished snapshot marked
    as updating (see the module's docstring); computed now only where nobody else will."""
    version = split.board_version or 0
    hit = memo_get(split.id, version)
    if hit is not None:
        return hit
    found = _stored(split.id, version)
    if found is not None and found.version == version:
        return found
    if found is None:
        return _build_here(split, version)
    if transport.inline():
        # In-process the reader builds, once the window since the last build has passed (BOARD_REBUILD_SECONDS);
        # sooner, it is served the last board, as readers are while a worker builds the next.
        if found.built_at is not None and built_lately(found.built_at):
            return _behind(split, found, since=found.built_at)
        return _build_here(split, version)
    return _behind(split, found)


def rebuild_seconds() -> float:
    """BOARD_REBUILD_SECONDS: a board is rebuilt at most once in this many seconds."""
    return settings.current().board_rebuild_seconds


def built_lately(built_at: datetime) -> bool:
    """Whether a board built then is within its rebuild window: in-process its reader does not build it again
    yet, whatever changed since."""
    return utcnow() < as_utc(built_at) + timedelta(seconds=rebuild_seconds())


def _next_rebuild(split_id: int, session: Session) -> datetime | None:
    """When the board's next build may begin: a window after its last one began (its last job's start, or its
    stored snapshot's time, whichever is later); None when it may begin now."""
    window = rebuild_seconds()
    if window <= 0:
        return None
    stored = session.scalar(select(LeaderboardCache.computed_at).where(LeaderboardCache.split_id == split_id))
    moments = [as_utc(stored)] if stored is not None else []
    started = queue.last_started(board_key(split_id), session)
    moments += [started] if started is not None else []
    if not moments:
        return None
    due = max(moments) + timedelta(seconds=window)
    return due if due > utcnow() else None


def _stored(split_id: int, version: int) -> Snapshot | None:
    """The newest snapshot of the split in this process or the database (of any version up to `version`)."""
    key = (str(db.engine.url), split_id)
    held = _memo.get(key)
    row = db.session.execute(
        select(LeaderboardCache.version, LeaderboardCache.computed_at).where(LeaderboardCache.split_id == split_id)
    ).first()
    stored, stored_at = (row.version, as_utc(row.computed_at)) if row is not None else (None, None)
    if held is not None and (stored is None or held.version >= stored) and held.version <= version:
        return held
    if stored is None or stored > version:
        return held if held is not None and held.version <= version else None
    payload = db.session.execute(select(LeaderboardCache.payload).where(LeaderboardCache.split_id == split_id)).scalar()
    decoded = _decode(stored, payload, stored_at) if payload is not None else None
    if decoded is None:
        return None
    decoded.changelog = changelog_of(split_id)
    return _memo.put(key, decoded)


def _build_here(split: Split, version: int) -> Snapshot:
    """Built by its reader: run in-process the board's waiting job, or compute (and share) it here."""
    if not may_hold_write_lock() and transport.inline():
        ran = transport.run_for_key(board_key(split.id))
        if db.session.get_bind().dialect.name == "sqlite":
            # As in _share: the reader's read-only transaction ends (nothing in it to lose), so a write it makes
            # later does not start from a snapshot older than the job's commit.
            db.session.rollback()
        built = memo_get(split.id, version) if ran else None
        if built is not None:
            return built
    with observability.board_computation(split.benchmark.slug, split.slug):
        found = _compute(split, version)
    _share(split.id, version, _encode(found))
    found.changelog = changelog(split)
    return _memo.put((str(db.engine.url), split.id), found)


def _behind(split: Split, found: Snapshot, since: datetime | None = None) -> Snapshot:
    """The last finished snapshot, served while the board's job builds the next: marked as updating since its
    oldest waiting change (`since`: given by an in-process reader, which has no job to ask), and without entries
    taken off the board since (hidden, withdrawn)."""
    if since is None:
        since = queue.waiting_since(board_key(split.id))
    if since is None:
        # No job is waiting or running for it: its last one failed (shown on the console; its readers do not
        # queue another for JOB_STUCK_AFTER, so a board that cannot be built is not tried at every view), or
        # its hand-over was lost.
        since = queue.failed_since(board_key(split.id))
        if since is None:
            # Not from a transaction with changes of its own (a request that wrote and now reads): the job it
            # may have queued is not committed yet, and a second session would wait for it.
            if not may_hold_write_lock():
                _queue_board_job(split.id)
            since = utcnow()
    return replace(
        found, entries=_still_on_board(split, found.entries), updating_since=since, changelog=found.changelog
    )


def _still_on_board(split: Split, entries: list[Entry]) -> list[Entry]:
    """A snapshot's entries less those taken off the board since it was built (hidden, withdrawn)."""
    on_board = set(db.session.scalars(select(Submission.id).where(*_on_board(split))))
    return [entry for entry in entries if entry.submission_id in on_board]


def _still_kept(split: Split, selection: tracks.Selection, entries: list[Entry]) -> list[Entry]:
    """A stored track board's entries less those taken off the board since it was built, and those the track
    no longer keeps (its conditions changed, or an entry was unverified): the page states the track as it is
    now, so no row may contradict it while the job rebuilds the board."""
    rows = db.session.execute(select(Submission.id, Submission.fields, Submission.verified_at).where(*_on_board(split)))
    kept = {sid for sid, text, at in rows if selection.keeps(entry_fields.values_of(text), at is not None)}
    return [entry for entry in entries if entry.submission_id in kept]


def _queue_board_job(split_id: int) -> None:
    """From a reader: queue the board's job in a transaction of its own (the reader's stays read-only)."""
    try:
        with own_session():
            queue.enqueue(
                "board", board_key(split_id), {"split_id": split_id}, run_after=_next_rebuild(split_id, db.session())
            )
            db.session.commit()
    except SQLAlchemyError as exc:
        log.warning("board job for split %s not queued: %s", split_id, exc)


def build(args: dict, deadline: queue.Deadline) -> str:
    """The "board" job: compute the split's snapshot at its current version and store it for every reader."""
    split = db.session.get(Split, int(args["split_id"]))
    if split is None:
        return "split deleted"
    version = split.board_version or 0
    with observability.board_computation(split.benchmark.slug, split.slug):
        found = _compute(split, version)
    deadline.check()
    payload = _encode(found)
    values = {"version": version, "payload": payload, "computed_at": utcnow()}
    # Never over a newer snapshot (a job of a later change that finished first).
    updated = cast(
        CursorResult,
        db.session.execute(
            update(LeaderboardCache)
            .where(LeaderboardCache.split_id == split.id, LeaderboardCache.version <= version)
            .values(values)
        ),
    ).rowcount
    if not updated and db.session.get(LeaderboardCache, split.id) is None:
        db.session.execute(insert(LeaderboardCache).values(split_id=split.id, **values))
    db.session.commit()
    found.changelog = changelog_of(split.id)
    held = _memo.get((str(db.engine.url), split.id))
    if held is None or held.version <= version:
        _memo.put((str(db.engine.url), split.id), found)
    built = _build_tracks(split, version, deadline)
    db.session.commit()
    return f"{len(found.entries)} entries at version {version}, {built} track boards"


queue.register("board", build)


@event.listens_for(Split.board_version, "set")
def _board_changed(target: Split, _value, _old, _initiator) -> None:
    state = inspect(target)
    if state.session is not None and target.id is not None:
        state.session.info.setdefault("boards_changed", set()).add(target.id)


@event.listens_for(Session, "before_commit")
def _queue_changed_boards(session: Session) -> None:
    """The commit that changes what a board shows queues its job (in the same transaction), to run a window
    after the board's last build began at the earliest (_next_rebuild: changes meanwhile are folded into it),
    unless the board's scores are held: nobody may read a held board (leaderboard() is empty) until the change
    that shows it (a reveal, a policy of `full`), which bumps its version and queues its job then; one queued
    before the board was held is dropped. In-process (JOB_QUEUE=inline) no board job is queued: its reader
    builds the board, and a job would wait for a reader who may never come and be flagged stuck (issues 34
    and 35); one left waiting by an older release is dropped."""
    changed = session.info.pop("boards_changed", None)
    if not changed:
        return
    for split_id in sorted(changed):
        split = session.get(Split, split_id)
        if split is None:
            continue
        if visibility.scores_are_public(split) and not transport.inline():
            due = _next_rebuild(split_id, session)
            queue.enqueue("board", board_key(split_id), {"split_id": split_id}, session, run_after=due)
        else:
            queue.drop_waiting(board_key(split_id), session)


@event.listens_for(Session, "after_rollback")
def _forget_changed_boards(session: Session) -> None:
    session.info.pop("boards_changed", None)


def published_ranks(split: Split) -> dict[int, int]:
    """Rank of every published entry as the board would show it now, computed afresh (not cached): for
    telling how many ranks a label correction moved, inside its transaction."""
    return {entry.submission_id: entry.rank for entry in _compute(split, split.board_version or 0).entries}


_final_memo: LRU[Snapshot] = LRU(16)


def final_snapshot(split: Split) -> Snapshot:
    """The split's final board: its entries as they stood at its closing time (split.closes_at), that is those
    uploaded before it and published by then that are on the board now (not hidden since, not withdrawn),
    ranked among themselves with the board's own code. Computed by its reader (a final board is read far less
    than the board) and kept in this process per board version and closing time."""
    assert split.closes_at is not None, "only a split with a closing time has a final board"
    closes_at = as_utc(split.closes_at)
    version = split.board_version or 0
    key = (str(db.engine.url), split.id, version, closes_at.isoformat())
    hit = _final_memo.get(key)
    if hit is not None:
        return hit
    with observability.board_computation(split.benchmark.slug, split.slug, "final"):
        found = _compute(split, version, until=closes_at)
    found.changelog = changelog(split)
    return _final_memo.put(key, found)


_selected_memo: LRU[Snapshot] = LRU(32)


class _BuildBudget:
    """How many boards of ad-hoc selections (and final views of a track) this process computes for its readers in
    a minute: each distinct set of entries a `where` keeps is a board computed inside a request (seconds on a
    crowded board), and conditions are cheap to vary, so past the budget a reader is told to retry (429, with
    Retry-After) instead of each variation costing a computation. Named tracks and boards already in memory are
    served as ever."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._started: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self) -> None:
        now = time.monotonic()
        with self._lock:
            while self._started and self._started[0] <= now - 60:
                self._started.popleft()
            if len(self._started) >= self.per_minute:
                wait = max(1, math.ceil(self._started[0] + 60 - now))
                raise Throttled(
                    f"this server process has computed {self.per_minute} filtered boards in the last minute; retry in "
                    f"{wait} s, or ask for one of the benchmark's named tracks (?track=), which are always served",
                    retry_after=wait,
                )
            self._started.append(now)


READER_BUILDS_PER_MINUTE = 60
_budgets: LRU[_BuildBudget] = LRU(64)


def _reader_builds(database: str) -> _BuildBudget:
    """This process's budget for the boards its readers compute, one per database it serves."""
    return _budgets.get_or_make(database, lambda: _BuildBudget(READER_BUILDS_PER_MINUTE))


def selected_snapshot(split: Split, selection: tracks.Selection, final: bool = False) -> Snapshot:
    """The entries a selection keeps (a track, ad-hoc conditions, the verified entries) as a board of their own:
    only they are scored and ranked, with the board's own code, so their ranks, rank intervals and resolution are
    the selected set's (1..N' among N' entries, its own family of pairwise decisions), never the whole board's
    (`final`: those of the final board, see final_snapshot). A named track's board (and the verified one) is
    built by the board's job with the board and stored (track_snapshot); an ad-hoc one, or a final one, by its
    reader, kept in this process per board version."""
    if selection.named and not final:
        return track_snapshot(split, selection)
    until = as_utc(split.closes_at) if final and split.closes_at is not None else None
    version = split.board_version or 0
    board = (str(db.engine.url), split.id, version, until.isoformat() if until else None)
    hit = _selected_memo.get((*board, selection.key))
    if hit is not None:
        return hit
    # Kept by the entries chosen too: conditions written apart that keep the same entries (parameters<=9e8,
    # parameters<=950000000...) are one board, so no visitor makes this process compute more boards than
    # there are sets of entries to keep.
    kept = _kept_ids(split, until, selection)
    found = _selected_memo.get((*board, kept))
    if found is None:
        _reader_builds(str(db.engine.url)).take()
        with observability.board_computation(split.benchmark.slug, split.slug, "final" if final else "filtered"):
            found = _compute(split, version, until=until, selection=selection)
        found.changelog = changelog(split)
        _selected_memo.put((*board, kept), found)
    return _selected_memo.put((*board, selection.key), found)


_track_memo: LRU[Snapshot] = LRU(64)


def track_snapshot(split: Split, selection: tracks.Selection) -> Snapshot:
    """A named track's board at the split's board version: this process's, or the one the board's job stored;
    while the job builds the next, the last one stored, marked as updating (as the board is); computed here (and
    stored) when there is none, or in-process (JOB_QUEUE=inline) where no job builds it."""
    name = cast(str, selection.track)
    version = split.board_version or 0
    key = (str(db.engine.url), split.id, name)
    held = _track_memo.get(key)
    if held is not None and held.version == version:
        return held
    row = db.session.execute(
        select(TrackSnapshot.version, TrackSnapshot.payload, TrackSnapshot.computed_at).where(
            TrackSnapshot.split_id == split.id, TrackSnapshot.track == name
        )
    ).first()
    stored = _decode(row.version, row.payload, as_utc(row.computed_at)) if row is not None else None
    if stored is not None and stored.version == version:
        stored.changelog = changelog_of(split.id)
        return _track_memo.put(key, stored)
    if stored is not None and stored.version < version and not transport.inline():
        since = queue.waiting_since(board_key(split.id))
        if since is not None:
            stored.changelog = changelog_of(split.id)
            return replace(stored, entries=_still_kept(split, selection, stored.entries), updating_since=since)
    with observability.board_computation(split.benchmark.slug, split.slug, "track"):
        found = _compute(split, version, selection=selection)
    _share(split.id, version, _encode(found), track=name)
    found.changelog = changelog(split)
    return _track_memo.put(key, found)


def _build_tracks(split: Split, version: int, deadline: queue.Deadline) -> int:
    """The board job's second part: every named track's board (verified first) at the board's version, stored
    for every reader; a track no longer defined loses its stored board."""
    selections = [s for s in tracks.named_selections(split.benchmark_id) if _needs_track(split, s)]
    for selection in selections:
        name = cast(str, selection.track)
        with observability.board_computation(split.benchmark.slug, split.slug, "track"):
            found = _compute(split, version, selection=selection)
        deadline.check()
        values = {"version": version, "payload": _encode(found), "computed_at": utcnow()}
        mine = (TrackSnapshot.split_id == split.id, TrackSnapshot.track == name)
        updated = cast(
            CursorResult,
            db.session.execute(update(TrackSnapshot).where(*mine, TrackSnapshot.version <= version).values(values)),
        ).rowcount
        if not updated and db.session.execute(select(TrackSnapshot.split_id).where(*mine)).first() is None:
            db.session.execute(insert(TrackSnapshot).values(split_id=split.id, track=name, **values))
        found.changelog = changelog_of(split.id)
        _track_memo.put((str(db.engine.url), split.id, name), found)
    names = [cast(str, selection.track) for selection in selections]
    db.session.execute(
        delete(TrackSnapshot).where(TrackSnapshot.split_id == split.id, TrackSnapshot.track.not_in(names))
    )
    return len(selections)


def _needs_track(split: Split, selection: tracks.Selection) -> bool:
    """Whether a named track has a board to build: the verified one only once an entry is verified (most boards
    have none), every other as soon as the benchmark defines it."""
    if selection.track != tracks.VERIFIED:
        return True
    return (
        db.session.execute(
            select(Submission.id).where(*_on_board(split), Submission.verified_at.is_not(None)).limit(1)
        ).first()
        is not None
    )


def leaderboard(split: Split) -> list[Entry]:
    """Published, visible, scored submissions in ranking order (empty while a hidden split's scores are held)."""
    if not visibility.scores_are_public(split):
        return []
    return snapshot(split).entries


def last_entries(split: Split) -> list[Entry]:
    """leaderboard() as its last stored snapshot has it, less entries taken off the board since, and never built
    or queued here: a read, for an answer that must not wait for a build (a publish); empty while the split has
    no snapshot yet or its scores are held."""
    if not visibility.scores_are_public(split):
        return []
    version = split.board_version or 0
    found = _stored(split.id, version)
    if found is None:
        return []
    return found.entries if found.version == version else _still_on_board(split, found.entries)


def submission_intervals(
    submission: Submission, subset_names: list[str], part: np.ndarray | None = None, *, public: bool = True
) -> dict[str, dict[str, tuple]]:
    """(ci_low, ci_high) of one scored submission on the named subsets, computed as on its leaderboard (the
    same resamples, or on a blind test before its reveal the count alone), so the two agree; with `part`
    (a sealed split's queried examples), on that part alone, as its board is; `public` (anyone but a
    maintainer): as the board shows them (visibility.released_column: on a blind test before its reveal, the
    whole split's rounded outward, none on a subset). The caller decides which subsets the viewer may see."""
    if submission.status != "scored" or submission.predictions is None:
        return {}
    split = submission.split
    task = catalog.task_of(split.benchmark)
    known = {s.name: s for s in split.subsets}
    wanted: dict[str, tuple[np.ndarray | None, tuple[str, ...]]] = (
        {"all": (None, catalog.split_metrics(split))} if "all" in subset_names else {}
    )
    wanted.update(
        {
            name: (known[name].indices, visibility.subset_metrics(task, known[name].source, split))
            for name in subset_names
            if name in known
        }
    )
    if not wanted:
        return {}
    key = (str(db.engine.url), submission.id, split.board_version, tuple(sorted(wanted)), part is not None, public)
    hit = _submission_memo.get(key)
    if hit is not None:
        return hit
    # The resamples are the costly part and the same for a maintainer and anyone else: kept once for both.
    gold, subsets, table = _submission_intervals_memo.get_or_make(
        key[:-1], lambda: _submission_table(split, task, submission, wanted, part)
    )
    result: dict[str, dict[str, tuple]] = {}
    for (subset, metric), interval in table.items():
        low, high = interval.low.tolist(), interval.high.tolist()
        if public:
            _, low, high = visibility.released_column(
                split, task, gold, subsets, (subset, metric), interval.values.tolist(), low, high
            )
        result.setdefault(subset, {})[metric] = (_shown(low[0]), _shown(high[0]))
    return _submission_memo.put(key, result)


def _submission_table(split: Split, task, submission: Submission, wanted: dict, part: np.ndarray | None) -> tuple:
    """submission_intervals' figures before the viewer's release rule: (gold, subsets' indices, intervals)."""
    gold = label_files.load_gold(split)
    predictions = task.decode(submission.predictions, gold.n)
    if part is not None:
        subsets = {name: indices for name, (indices, _) in wanted.items() if indices is not None}
        gold, inside = visibility.queried_view(split, gold, subsets, part)
        wanted = {
            name: (inside.get(name) if indices is not None else None, metrics)
            for name, (indices, metrics) in wanted.items()
            if indices is None or name in inside
        }
        predictions = predictions[part]
    table = statistics.intervals(task, gold, predictions[None], wanted, counts_only=visibility.counts_only(split))
    subsets = {name: indices for name, (indices, _) in wanted.items() if indices is not None}
    return gold, subsets, table


_submission_memo: LRU[dict] = LRU(256)
_submission_intervals_memo: LRU[tuple] = LRU(128)


def board_inputs(split: Split, task, rows: Sequence) -> tuple:
    """_scoring_inputs for any rows with stored predictions (two entries compared, comparisons.py): the board's
    gold set and columns, the rows' predictions stacked, as the board scores them."""
    return _scoring_inputs(split, task, rows)
