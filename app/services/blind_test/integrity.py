"""Blind-test integrity: how a release is made, and flags for probing.

- Release (which one applies is decided in services/blind_test/visibility.py): `full_release` rounds every score to
  the split's count resolution, a subset's in whole percents (`release_percentage`, the one rounding of every
  figure a blind test shows before its reveal: the value identifies the count and carries nothing more);
  `ladder_release` runs a team's Ladder and its submitting account's (app/evaluation/ladder.py): a new score
  must beat the stricter, so one person gains nothing from many teams.
- Probing: a submission on a hidden split that differs from one of the same team's earlier submissions
  there on fewer than PROBE_DISTANCE of the examples (flipping a few predictions to read their labels off
  the score) is flagged for the maintainers; so is one that close to another team's submission (shared
  predictions, one person probing through a second account, collusion), with both teams named. Each scored
  submission there keeps a probe summary (app/evaluation/probes.py, table probe_summaries) so the check
  reads the few earlier files that may be that close, not every one.

Helpers for app/services/intake/submissions.py: they add and flush inside its write transaction, never commit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import LargeBinary, bindparam, delete, insert, or_, select, text
from sqlalchemy.orm import aliased

from app import settings
from app.db import db
from app.evaluation import GoldSet, Scores, TaskType, probes, sealed
from app.evaluation import ladder as ladder_rule
from app.models import (
    AccountLadderState,
    Benchmark,
    LadderState,
    ProbeFlag,
    ProbeSummary,
    Score,
    Split,
    Submission,
    Team,
    utcnow,
)
from app.services import catalog
from app.services.errors import InvalidInput, NotFound

# Earlier submissions compared per block: bounds memory (512 VCR-size submissions are ~65 MB of int8).
PROBE_BLOCK = 512
# Ids per query when reading the blobs of the files the probe summaries could not rule out.
ID_BATCH = 500
# Submissions decoded at a time when their probe summaries are rebuilt (a label correction).
SUMMARY_CHUNK = 2000
FLAGS_SHOWN = 500
MAX_ID = 2**31 - 1


# --- release -------------------------------------------------------------------------------------------


def _units(task: TaskType, gold: GoldSet, subsets: dict[str, np.ndarray], subset: str, metric: str) -> int | None:
    """How many units (examples, images, groups) a percentage on (subset, metric) counts over."""
    if subset != "all" and subset not in subsets:
        return None
    if metric in task.estimate_only_metrics:
        return None  # not a count of units (GQA's consistency and distribution): withheld before the reveal
    if metric == "consistency":
        if subset != "all":
            return None
        return gold.n_groups
    # Accuracy over NLVR images counts images; VCR's metrics count questions (TaskType.counted_units).
    return task.counted_units(gold, metric, None if subset == "all" else subsets[subset])


SUBSET_DECIMALS = 0  # a subset's released figures before the reveal: whole percents (see resolution)


def resolution(
    task: TaskType, gold: GoldSet, subsets: dict[str, np.ndarray], subset: str, metric: str
) -> tuple[int, int] | None:
    """(units, decimals) of a released percentage on (subset, metric): the units its count is of, and its
    decimals. The whole split: its count resolution (ladder.count_decimals); its size is public (teams predict
    on its examples). A subset: whole percents. The size of a bias subset depends on the labels, and at any
    finer resolution a board's values on one subset all lie near the multiples of 100/n, so a handful of them
    give n away (at the whole split's resolution six did); whole percents are reached by every count of every
    n from 100 up, so they tell nothing of n. None: a count this code does not know (withheld, see
    full_release)."""
    units = _units(task, gold, subsets, subset, metric)
    whole = _units(task, gold, subsets, "all", metric)
    if not units or not whole:
        return None
    return units, ladder_rule.count_decimals(whole) if subset == "all" else SUBSET_DECIMALS


def release_percentage(value: float | None, found: tuple[int, int] | None) -> float | None:
    """A released percentage: snapped to its count and written to the split's count resolution (see
    resolution); None where it is withheld (no known count, no finite value). The one rounding of every
    figure a blind test shows before its reveal: a team's `full` release, its board, exports and API."""
    if found is None or value is None or not math.isfinite(value):
        return None
    units, decimals = found
    return ladder_rule.round_percentage(value, units, decimals)


def full_release(task: TaskType, gold: GoldSet, subsets: dict[str, np.ndarray], scores: Scores) -> Scores:
    """Every score, snapped to its count and rounded to the split's count resolution (release_percentage).

    A score whose count is unknown (a metric or subset this code does not know) is withheld rather than
    released with digits nobody checked.
    """
    released: Scores = {}
    for subset, metrics in scores.items():
        for metric, value in metrics.items():
            shown = release_percentage(value, resolution(task, gold, subsets, subset, metric))
            if shown is not None:
                released.setdefault(subset, {})[metric] = shown
    return released


def ladder_release(
    submission: Submission, task: TaskType, gold: GoldSet, predictions: np.ndarray, part: np.ndarray | None = None
) -> Scores | None:
    """Run one Ladder step for a new submission (inserted or not) and return the release; with `part` (a
    sealed split's queried examples) the Ladder sees those examples alone.

    The step counts the team's Ladder and the submitting account's (its submissions through every team; none
    for a maintainer's import): the score must beat the stricter of the two, and a new best becomes both's.
    The team is released its own best (None if it has none: a first submission no better than what the
    account was already released through another team tells that team nothing)."""
    states: list[LadderState | AccountLadderState] = [
        _ladder_state(LadderState, LadderState.team_id, submission.team_id, submission.split_id)
    ]
    if submission.user_id is not None:
        states.append(
            _ladder_state(AccountLadderState, AccountLadderState.user_id, submission.user_id, submission.split_id)
        )
    losses = ladder_rule.zero_one_losses(task, *_on_part(gold, predictions, part))
    # Only the stricter Ladder's best vector is read: the step compares with it alone.
    ladders = [ladder_rule.Ladder(_best_loss(state)) for state in states]
    strictest = ladders.index(ladder_rule.stricter(ladders))
    ladders[strictest] = ladder_rule.Ladder(
        ladders[strictest].best_loss, _best_losses(states[strictest], task, gold, part)
    )
    result, after = ladder_rule.step_shared(ladders, losses)
    submission.ladder_improved = result.improved  # the verdict its answer gives (services/intake/submissions.py)
    for state in states:
        if result.improved:
            state.best_loss = result.ladder.best_loss
            state.best_submission = submission
        state.updated_at = utcnow()
    value = ladder_rule.released_accuracy(after[0], losses.size)
    return None if value is None else {"all": {task.primary_metric: value}}


def _ladder_state(model, owner_column, owner_id: int, split_id: int):
    """The stored Ladder of a team or an account on a split (added, fresh, when there is none yet)."""
    state = db.session.scalar(select(model).where(owner_column == owner_id, model.split_id == split_id))
    if state is None:
        state = model(split_id=split_id, best_loss=None)
        setattr(state, owner_column.key, owner_id)
        db.session.add(state)
    return state


def _best_loss(state: LadderState | AccountLadderState) -> float:
    return math.inf if state.best_loss is None else state.best_loss


def _best_losses(
    state: LadderState | AccountLadderState, task: TaskType, gold: GoldSet, part: np.ndarray | None
) -> np.ndarray | None:
    """The 0/1 losses of the submission that set the state's best (None: none yet, or it was deleted)."""
    if state.best_submission_id is None:
        return None
    best = db.session.get(Submission, state.best_submission_id)
    if best is None or best.predictions is None:
        return None
    return ladder_rule.zero_one_losses(task, *_on_part(gold, task.decode(best.predictions, gold.n), part))


def _on_part(gold: GoldSet, predictions: np.ndarray, part: np.ndarray | None) -> tuple[GoldSet, np.ndarray]:
    return (gold, predictions) if part is None else (sealed.restrict(gold, part), np.asarray(predictions)[part])


# --- probing -------------------------------------------------------------------------------------------


def probe_distance() -> float:
    return settings.current().probe_distance


def distances(task: TaskType, new: np.ndarray, stacked: np.ndarray) -> np.ndarray:
    """Share of scored units (examples; NLVR images; VCR questions) on which each of k stacked earlier
    predictions (k, *shape) differs from the new one (*shape): floats in [0, 1], shape (k,)."""
    return task.probe_distances(new, stacked)


def _block_distances(task: TaskType, gold: GoldSet, new: np.ndarray, blobs: list[bytes]) -> np.ndarray:
    """distances() against stored blobs (true/false tasks compare the packed bits directly), over the units the
    task type counts on the split (GQA: its balanced questions; TaskType.split_probe_distances)."""
    return task.split_probe_distances(gold, new, blobs)


@dataclass(frozen=True)
class ProbeCounts:
    """A new submission's probe summary: its count of correct units and correct units per block."""

    units: int
    correct: int
    blocks: np.ndarray  # (probes.BLOCKS,) int64


def probe_summary(task: TaskType, gold: GoldSet, predictions: np.ndarray) -> ProbeCounts:
    correct = probes.unit_correct(task, gold, np.asarray(predictions)[None])
    return ProbeCounts(correct.shape[1], int(correct.sum()), probes.block_counts(correct)[0])


def _window(split_id: int, low: int, high: int) -> list[bytes]:
    """The split's rows of probe_summaries for counts low..high, in the caller's transaction."""
    connection = db.session.connection()
    if connection.dialect.name == "postgresql":
        # Asked for in binary: the text protocol sends bytea as hex, which doubled the ~1 MB a window holds
        # at 400,000 stored submissions and took most of the check's time to encode and decode.
        driver = connection.connection.driver_connection
        assert driver is not None  # a live connection of the session's transaction
        with driver.cursor(binary=True) as cursor:
            cursor.execute(
                "SELECT records FROM probe_summaries WHERE split_id = %s AND correct BETWEEN %s AND %s",
                (split_id, low, high),
            )
            return [bytes(row[0]) for row in cursor.fetchall()]
    return list(
        db.session.scalars(
            select(ProbeSummary.records).where(
                ProbeSummary.split_id == split_id, ProbeSummary.correct.between(low, high)
            )
        )
    )


def _near_by_summary(split_id: int, summary: ProbeCounts, t: int) -> list[int]:
    """Ids of the split's summarised submissions that may differ from the new one on at most t units: those
    whose count of correct units lies within t of the new one's (a range of probe_summaries' key), and whose
    block counts are within t of the new one's (the lower bound of app/evaluation/probes.py)."""
    runs = _window(split_id, summary.correct - t, summary.correct + t)
    if not runs:
        return []
    records = probes.decode_records(b"".join(runs), summary.units)
    return records["id"][probes.lower_bounds(records["blocks"], summary.blocks) <= t].tolist()


def _earlier_by_score(split_id: int, task: TaskType, primary_score: float, threshold: float):
    """(id, team_id, predictions) of the split's scored submissions whose stored primary score lies within
    100 * PROBE_DISTANCE points of the new one's: the primary metric counts the same units the distance does,
    so two files that differ on a share d of them are at most 100 * d points apart. The read of every
    submission before the summaries; now only while some have none (Split.probe_unsummarised)."""
    window = 100 * threshold + 1e-9  # float error in stored percentages must not drop a candidate
    close = select(Score.submission_id).where(
        Score.subset == "all",
        Score.metric == task.primary_metric,
        Score.value.between(primary_score - window, primary_score + window),
    )
    return db.session.execute(
        select(Submission.id, Submission.team_id, Submission.predictions).where(
            Submission.split_id == split_id,
            Submission.status == "scored",
            Submission.predictions.is_not(None),
            Submission.id.in_(close),
        )
    ).all()


def _blobs(split_id: int, ids: list[int]):
    """(id, team_id, predictions) of the scored submissions among `ids` on the split (a record left behind by
    a deleted submission finds nothing)."""
    for start in range(0, len(ids), ID_BATCH):
        yield from db.session.execute(
            select(Submission.id, Submission.team_id, Submission.predictions).where(
                Submission.id.in_(ids[start : start + ID_BATCH]),
                Submission.split_id == split_id,
                Submission.status == "scored",
                Submission.predictions.is_not(None),
            )
        ).all()


def _earlier(submission: Submission, task: TaskType, summary: ProbeCounts, primary_score: float) -> list:
    """The earlier scored submissions on the split (id, team_id, predictions), in id order, that may differ
    from the new one on fewer than PROBE_DISTANCE of the units: a superset of those that do, so comparing
    with these alone flags what comparing with every one would."""
    threshold = probe_distance()
    t = probes.threshold_units(threshold, summary.units)
    if t < 0:
        return []
    split = db.session.get_one(Split, submission.split_id)  # loaded by the caller: no query
    found = {}
    if split.probe_unsummarised:
        found = {row.id: row for row in _earlier_by_score(split.id, task, primary_score, threshold)}
    missing = [i for i in _near_by_summary(split.id, summary, t) if i not in found]
    found.update((row.id, row) for row in _blobs(split.id, missing))
    found.pop(submission.id, None)  # already inserted: not compared with itself
    return [found[i] for i in sorted(found)]


def flag_probes(
    submission: Submission,
    task: TaskType,
    gold: GoldSet,
    predictions: np.ndarray,
    primary_score: float,
    summary: ProbeCounts | None = None,
) -> list[ProbeFlag]:
    """Compare a new submission on a hidden split with every earlier scored one there, of every team, and
    flag the nearest of its own team's and the nearest of other teams' if closer than PROBE_DISTANCE: at
    most two flags per new submission, ties going to the latest. A near-copy of another team's submission
    names both teams (shared predictions, a second account, collusion).

    Only the files `_earlier` cannot rule out are read and compared: every earlier file closer than
    PROBE_DISTANCE is among them, so the flags are those of comparing with every file."""
    threshold = probe_distance()
    if summary is None:
        summary = probe_summary(task, gold, predictions)
    earlier = _earlier(submission, task, summary, primary_score)
    new = np.asarray(predictions)
    # Nearest (distance, id, team) of the team's own and of other teams'.
    nearest: dict[bool, tuple[float, int, int]] = {}
    for start in range(0, len(earlier), PROBE_BLOCK):
        block = earlier[start : start + PROBE_BLOCK]
        found = _block_distances(task, gold, new, [blob for _, _, blob in block])
        own = np.array([team_id == submission.team_id for _, team_id, _ in block])
        for is_own in (True, False):
            mask = own if is_own else ~own
            if not mask.any():
                continue
            candidates = np.where(mask, found, np.inf)
            i = int(np.flatnonzero(candidates == candidates.min())[-1])
            if is_own not in nearest or found[i] <= nearest[is_own][0]:
                nearest[is_own] = (float(found[i]), block[i][0], block[i][1])
    flags = []
    for is_own, (distance, earlier_id, earlier_team) in sorted(nearest.items(), reverse=True):
        if distance >= threshold:
            continue
        flag = ProbeFlag(
            split_id=submission.split_id,
            team_id=submission.team_id,
            submission=submission,
            earlier_submission_id=earlier_id,
            distance=distance,
            other_team_id=None if is_own else earlier_team,
        )
        db.session.add(flag)
        flags.append(flag)
    return flags


# One statement per dialect, written out: built with SQLAlchemy's insert().on_conflict_do_update() it took
# ~2 ms an upload to compile, ten times the statement's own time.
_APPEND = (
    "INSERT INTO probe_summaries (split_id, correct, records) VALUES (:split_id, :correct, :records) "
    "ON CONFLICT (split_id, correct) DO UPDATE SET records = {joined}"
)
APPEND = {
    "postgresql": text(_APPEND.format(joined="probe_summaries.records || excluded.records")),
    # SQLite's || makes text of two blobs: cast back, byte for byte.
    "sqlite": text(_APPEND.format(joined="CAST(probe_summaries.records || excluded.records AS BLOB)")),
}


def store_probe_summary(submission: Submission, summary: ProbeCounts) -> None:
    """Append a scored submission's record to its split's row for its count (after its insert: the record
    holds its id); the caller's transaction commits both or neither. Two uploads with the same count wait for
    each other on that row."""
    record = probes.encode_records(np.array([submission.id], dtype=np.int64), summary.blocks[None], summary.units)
    statement = APPEND[db.session.get_bind().dialect.name].bindparams(bindparam("records", type_=LargeBinary))
    db.session.execute(statement, {"split_id": submission.split_id, "correct": summary.correct, "records": record})


def rebuild_probe_summaries(split: Split, task: TaskType, gold: GoldSet) -> int:
    """Summarise every scored submission of a hidden split against `gold` afresh (after a label correction:
    the counts of correct units change with the labels; also summarises those stored before the summaries).
    Flushes, never commits; returns how many submissions were summarised."""
    db.session.execute(delete(ProbeSummary).where(ProbeSummary.split_id == split.id))
    if not split.hidden:
        return 0
    query = (
        select(Submission.id, Submission.predictions)
        .where(Submission.split_id == split.id, Submission.status == "scored", Submission.predictions.is_not(None))
        .order_by(Submission.id)
    )
    runs: dict[int, list[bytes]] = {}
    count = 0
    for chunk in db.session.execute(query, execution_options={"yield_per": SUMMARY_CHUNK}).partitions(SUMMARY_CHUNK):
        count += len(chunk)
        correct = probes.unit_correct(task, gold, task.decode_many([blob for _, blob in chunk], gold.n))
        ids = np.array([submission_id for submission_id, _ in chunk], dtype=np.int64)
        totals, blocks = correct.sum(axis=1), probes.block_counts(correct)
        for k in np.unique(totals).tolist():
            rows = totals == k
            runs.setdefault(int(k), []).append(probes.encode_records(ids[rows], blocks[rows], correct.shape[1]))
    if runs:
        db.session.execute(
            insert(ProbeSummary),
            [{"split_id": split.id, "correct": k, "records": b"".join(parts)} for k, parts in sorted(runs.items())],
        )
    split.probe_unsummarised = False
    db.session.flush()
    return count


# --- the console's list of flags -----------------------------------------------------------------------


@dataclass
class FlagRow:
    id: int
    benchmark: str
    benchmark_slug: str
    split: str
    split_slug: str
    team: str
    team_id: int
    other_team: str | None  # the earlier submission's team, when it is another team
    other_team_id: int | None
    submission_id: int
    earlier_submission_id: int
    distance: float  # 0-1
    created_at: datetime


@dataclass
class FlagListing:
    rows: list[FlagRow]
    total: int
    splits: list[Split]  # hidden splits, for the filter
    teams: list[Team]  # teams that have flags, for the filter
    split: Split | None
    team: Team | None
    kind: str | None  # "own" (within one team), "cross" (across teams) or None (both)


def _split_filter(ref: str | None) -> Split | None:
    ref = (ref or "").strip()
    if not ref:
        return None
    benchmark_slug, slash, split_slug = ref.partition("/")
    if not slash or not benchmark_slug or not split_slug:
        raise InvalidInput(f"split must be written benchmark/split, got {ref[:80]!r}")
    return catalog.get_split(benchmark_slug, split_slug)


def _team_filter(ref: str | None) -> Team | None:
    ref = (ref or "").strip()
    if not ref:
        return None
    if not re.fullmatch(r"[0-9]{1,18}", ref):
        raise InvalidInput(f"team must be a team id, got {ref[:80]!r}")
    # Ids are 32-bit on PostgreSQL: a larger number is no team (and must not reach the database).
    team = db.session.get(Team, int(ref)) if int(ref) <= MAX_ID else None
    if team is None:
        raise NotFound(f"no team {ref}")
    return team


FLAG_KINDS = {"own": "within a team", "cross": "across teams"}


def _kind_filter(ref: str | None) -> str | None:
    ref = (ref or "").strip()
    if not ref:
        return None
    if ref not in FLAG_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(FLAG_KINDS)}, got {ref[:80]!r}")
    return ref


def list_flags(
    split_ref: str | None = None, team_ref: str | None = None, limit: int = FLAGS_SHOWN, kind_ref: str | None = None
) -> FlagListing:
    """Probe flags, newest first, optionally for one split ('benchmark/split'), one team (id; either team
    of a flag across teams) and one kind ('own' or 'cross')."""
    split, team, kind = _split_filter(split_ref), _team_filter(team_ref), _kind_filter(kind_ref)
    query = _flags_query(split, team, kind)
    count = db.session.scalar(select(db.func.count()).select_from(query.order_by(None).subquery()))
    rows = [
        _flag_row(*found)
        for found in db.session.execute(query.order_by(ProbeFlag.created_at.desc(), ProbeFlag.id.desc()).limit(limit))
    ]
    teams = _flagged_teams()
    return FlagListing(rows, int(count or 0), _flagged_splits(), teams, split, team, kind)


def _flags_query(split: Split | None, team: Team | None, kind: str | None):
    """(flag, split, benchmark, team, other team) of the flags the filters keep, unordered."""
    other = aliased(Team)
    query = (
        select(ProbeFlag, Split, Benchmark, Team, other)
        .join(Split, ProbeFlag.split_id == Split.id)
        .join(Benchmark, Split.benchmark_id == Benchmark.id)
        .join(Team, ProbeFlag.team_id == Team.id)
        .outerjoin(other, ProbeFlag.other_team_id == other.id)
    )
    if split is not None:
        query = query.where(ProbeFlag.split_id == split.id)
    if team is not None:
        query = query.where(or_(ProbeFlag.team_id == team.id, ProbeFlag.other_team_id == team.id))
    if kind == "own":
        query = query.where(ProbeFlag.other_team_id.is_(None))
    elif kind == "cross":
        query = query.where(ProbeFlag.other_team_id.is_not(None))
    return query


def _flag_row(flag: ProbeFlag, found_split: Split, benchmark: Benchmark, found_team: Team, other_team: Team | None):
    return FlagRow(
        id=flag.id,
        benchmark=benchmark.name,
        benchmark_slug=benchmark.slug,
        split=found_split.name,
        split_slug=found_split.slug,
        team=found_team.name,
        team_id=found_team.id,
        other_team=other_team.name if other_team else None,
        other_team_id=other_team.id if other_team else None,
        submission_id=flag.submission_id,
        earlier_submission_id=flag.earlier_submission_id,
        distance=flag.distance,
        created_at=flag.created_at,
    )


def _flagged_teams() -> list[Team]:
    """Every team named in a flag (either side), by name: the team filter's choices."""
    return list(
        db.session.scalars(
            select(Team)
            .where(
                or_(
                    Team.id.in_(select(ProbeFlag.team_id)),
                    Team.id.in_(select(ProbeFlag.other_team_id).where(ProbeFlag.other_team_id.is_not(None))),
                )
            )
            .order_by(Team.name)
        )
    )


def _flagged_splits() -> list[Split]:
    """Every hidden split, by benchmark and position: the split filter's choices."""
    return list(
        db.session.scalars(
            select(Split)
            .join(Benchmark, Split.benchmark_id == Benchmark.id)
            .where(Split.hidden.is_(True))
            .order_by(Benchmark.slug, Split.position)
        )
    )
