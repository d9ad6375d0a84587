"""Public rankings of published submissions, with 95% intervals and significance-aware ranks.

Everything a leaderboard shows (scores, intervals, rank tiers, reference rows) is computed in one
vectorised pass over the split's stored predictions (app.evaluation.statistics) once per change of
what the board shows: publishing, hiding, a new subset, a reference row, a policy change all bump
Split.board_version. The first reader after a bump computes the snapshot and stores it, compressed, in
LeaderboardCache in a short transaction of its own; every later request of any worker reads it from
there, and each process keeps the decoded snapshot (and the rendered page) in memory, so a page view is
one small query.
"""
from __future__ import annotations

import json
import logging
import math
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from datetime import datetime
from urllib.parse import urlencode

import numpy as np
from flask import current_app
from markupsafe import Markup
from sqlalchemy import bindparam, event, exists, func, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from app import observability
from app.db import begin_reading, db, write_transaction
from app.evaluation import get_task, statistics
from app.models import (
    Benchmark, ChangelogEntry, LeaderboardCache, Reference, Split, Submission, Team, as_utc, utcnow,
)
from app.services import catalog, gold_files, progress_chart
from app.services.errors import NotFound, ServiceError

log = logging.getLogger(__name__)

PER_PAGE = 100
PAYLOAD_FORMAT = 2  # bump when the stored payload's shape changes: older rows are then recomputed
METRIC_LABELS = {
    "accuracy": "Accuracy", "consistency": "Consistency", "q_a": "Q→A", "qa_r": "QA→R", "q_ar": "Q→AR",
}


VIEWS = ("entries", "teams")  # every published entry, or each team's best (anonymous entries count apart)


class InvalidQuery(ServiceError):
    """A malformed sort, order, page, view or columns parameter."""

    status = 400


# --- what a board holds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    subset: str
    metric: str
    label: str
    size: int | None = None  # examples the column counts over (shown in its header)

    @property
    def key(self) -> str:
        return f"{self.subset}:{self.metric}"


@dataclass
class Entry:
    rank: int  # 1 + entries significantly better (statistics.significance_ranks)
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
    rank_low: int | None = None  # 95% rank interval from the bootstrap resamples
    rank_high: int | None = None
    team_key: str = ""  # what view=teams groups by: "team:<id>", or "anonymous:<submission id>"
    model_key: str = ""  # what the models view groups by: the team key plus the model name, trimmed, folded
    # Ranks among each team's best entry (view=teams); None for an entry that is not its team's best.
    team_rank: int | None = None
    team_rank_low: int | None = None
    team_rank_high: int | None = None

    kind = "entry"

    @property
    def rank_interval(self) -> str:
        """'2–5' (or '3' when the interval is one rank)."""
        if self.rank_low is None or self.rank_high is None:
            return ""
        return str(self.rank_low) if self.rank_low == self.rank_high else f"{self.rank_low}–{self.rank_high}"

    def as_team_best(self) -> Entry:
        """This entry as a row of view=teams: ranked among the teams' best entries."""
        return replace(self, rank=self.team_rank, rank_low=self.team_rank_low, rank_high=self.team_rank_high)

    def value(self, column: Column) -> float | None:
        return self.scores.get(column.subset, {}).get(column.metric)

    def interval(self, column: Column) -> tuple[float | None, float | None]:
        return self.intervals.get(column.subset, {}).get(column.metric, (None, None))


@dataclass
class ReferenceRow:
    """A baseline or human-performance row from a paper: shown apart, never ranked."""

    id: int
    name: str
    source_url: str | None
    created_at: datetime
    scores: dict[str, dict[str, float]] = field(default_factory=dict)

    kind = "reference"

    def value(self, column: Column) -> float | None:
        return self.scores.get(column.subset, {}).get(column.metric)

    def interval(self, column: Column) -> tuple[float | None, float | None]:
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
    chart: str = ""
    columns: list[Column] = field(default_factory=list)  # the default columns
    available: list[Column] = field(default_factory=list)  # every column a visitor may choose
    changelog: list[ChangelogLine] = field(default_factory=list)  # label corrections..., newest first

    @cached_property
    def team_entries(self) -> list[Entry]:
        return [entry.as_team_best() for entry in self.entries if entry.team_rank is not None]

    def rows(self, view: str) -> list[Entry]:
        return self.team_entries if view == "teams" else self.entries


@dataclass
class Board:
    benchmark: Benchmark | BenchmarkInfo
    split: Split | SplitInfo | None
    entries: list[Entry]  # every published entry, in ranking order
    scores_public: bool
    columns: list[Column] = field(default_factory=list)
    references: list[ReferenceRow] = field(default_factory=list)
    rows: list[Entry | ReferenceRow] = field(default_factory=list)  # this page, in display order
    sort: Column | None = None  # None: the default ranking
    order: str = "desc"
    page: int = 1
    pages: int = 1
    chart: Markup = Markup("")
    # Everything the rendered table depends on; pages with the same key render the same HTML.
    cache_key: tuple | None = None
    view: str = "entries"
    available: list[Column] = field(default_factory=list)  # every column a visitor may choose
    chosen: tuple[str, ...] | None = None  # the columns parameters as given (None: the default columns)
    changelog: list[ChangelogLine] = field(default_factory=list)

    @property
    def primary(self) -> Column | None:
        """The column the default ranking uses (NLVR, NLVR2: accuracy; VCR: Q→AR)."""
        return primary_column(self.available or self.columns, self.benchmark.task_type)

    @cached_property
    def best(self) -> dict[str, float]:
        """Each column's best value among the ranked entries (shown bold)."""
        found: dict[str, float] = {}
        for column in self.columns:
            values = [v for v in (entry.value(column) for entry in self.entries) if v is not None]
            if values:
                found[column.key] = max(values)
        return found

    def is_best(self, row, column: Column) -> bool:
        value = row.value(column)
        return row.kind == "entry" and value is not None and value == self.best.get(column.key)

    def _query(self, **params) -> str:
        base = {"view": self.view if self.view != "entries" else None, "columns": self.chosen}
        if self.sort is not None:
            base.update(sort=self.sort.key, order=self.order)
        base.update(params)
        return "?" + urlencode({k: v for k, v in base.items() if v is not None}, doseq=True, safe=":,")

    def sort_link(self, column: Column) -> str:
        """?sort=<subset>:<metric>&order=desc|asc: descending first, toggled when already sorted by it."""
        order = "asc" if self.sort == column and self.order == "desc" else "desc"
        return self._query(sort=column.key, order=order)

    def page_link(self, page: int) -> str:
        return self._query(page=page)

    def view_link(self, view: str) -> str:
        return self._query(view=view if view != "entries" else None, page=None)

    def sorted_by(self, column: Column) -> str | None:
        """'descending'/'ascending' for the column the table is sorted by (aria-sort), else None."""
        if self.sort == column:
            return "descending" if self.order == "desc" else "ascending"
        return None


# --- columns and visibility ------------------------------------------------------------------------------


def scores_are_public(split: Split | SplitInfo) -> bool:
    """Hidden splits under a withholding policy keep scores private until a maintainer reveals them."""
    return not split.hidden or split.feedback == "full" or split.revealed_at is not None


def _subset_label(name: str, metric: str) -> str:
    """'Balanced accuracy', 'hard-cardinality accuracy', 'region west Q→AR'."""
    readable = name.split(":", 1)[1] if name.startswith("category:") else name.replace(":", " ")
    metric_label = METRIC_LABELS.get(metric, metric)
    metric_label = metric_label.lower() if metric in ("accuracy", "consistency") else metric_label
    return f"{readable[:1].upper()}{readable[1:]} {metric_label}"


def available_columns(split: Split) -> list[Column]:
    """Every column a visitor may choose: each metric on the whole split, then the task's subset metrics
    on every subset the public may see (derived bias subsets first), each with its number of examples."""
    task = get_task(split.benchmark.task_type)
    result = [Column("all", metric, METRIC_LABELS.get(metric, metric), split.example_count) for metric in task.metrics]
    visible = [s for s in split.subsets if not is_breakdown(split, s.source)]
    for subset in sorted(visible, key=lambda s: (s.source != "derived", s.name)):
        # A blind test's bias subsets are derived from its labels: their sizes are not shown before the reveal.
        size = None if counts_only(split) else subset.size
        for metric in task.subset_metrics:
            result.append(Column(subset.name, metric, _subset_label(subset.name, metric), size))
    return result


def columns(split: Split) -> list[Column]:
    """The default columns: every metric on the whole split, then accuracy on the derived bias subsets."""
    derived = {s.name for s in split.subsets if s.source == "derived"}
    return [c for c in available_columns(split) if c.subset == "all" or c.subset in derived]


def choose_columns(available: list[Column], defaults: list[Column],
                   chosen: str | Sequence[str] | None) -> list[Column]:
    """The columns named by ?columns=all:accuracy,category:hard-cardinality:accuracy,... or by repeated
    ?columns= (the chooser's checkboxes), in that order; a value that is itself a column's key is taken
    whole (a field subset's name may hold a comma). The default columns when none are named. InvalidQuery
    names an unknown key and the valid ones."""
    values = [chosen] if isinstance(chosen, str) else list(chosen or ())
    by_key = {column.key: column for column in available}
    keys: list[str] = []
    for value in values:
        keys.extend([value] if value in by_key else (part.strip() for part in value.split(",")))
    picked: list[Column] = []
    for key in keys:
        if not key:
            continue
        if key not in by_key:
            valid = ", ".join(by_key)
            raise InvalidQuery(f"columns: unknown column {key[:80]!r}; choose from {valid}")
        if by_key[key] not in picked:
            picked.append(by_key[key])
    return picked or defaults


def primary_column(cols: list[Column], task_type: str) -> Column | None:
    metric = get_task(task_type).primary_metric
    return next((c for c in cols if c.subset == "all" and c.metric == metric), None)


def counts_only(split: Split | SplitInfo) -> bool:
    """A blind test before its reveal: intervals (scores and ranks) come from each entry's count alone, so
    that neither its board nor a team's own page tells more than the released counts."""
    return split.hidden and split.revealed_at is None


def is_breakdown(split: Split, subset_source: str) -> bool:
    """Per-category, per-field and maintainers' id subsets of a hidden split are for maintainers only:
    small subsets of a blind test tell too much about its labels."""
    return split.hidden and subset_source != "derived"


def public_subsets(split: Split) -> dict[str, np.ndarray]:
    """Subsets whose scores anyone may see on this split: all of them on public splits, the derived
    bias subsets on hidden ones."""
    return {s.name: s.indices for s in split.subsets if not is_breakdown(split, s.source)}


def default_split(benchmark: Benchmark | BenchmarkInfo) -> Split | SplitInfo | None:
    """The landing split: the one a maintainer pinned, else the blind test (the first hidden split), else
    the first split. Adding a split later never moves it off a hidden split or a pinned one."""
    pinned = benchmark.default_split_id
    for split in benchmark.splits:
        if split.id == pinned:
            return split
    hidden = [split for split in benchmark.splits if split.hidden]
    if hidden:
        return hidden[0]
    return benchmark.splits[0] if benchmark.splits else None


# --- computing a snapshot --------------------------------------------------------------------------------


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _compute(split: Split, version: int) -> Snapshot:
    """Scores, intervals and rank tiers of every published entry, from the stored predictions."""
    task = get_task(split.benchmark.task_type)
    rows = db.session.execute(
        select(Submission.id, Submission.model_name, Submission.anonymous, Team.name, Submission.created_at,
               Submission.paper_url, Submission.code_url, Submission.description, Submission.predictions,
               Submission.team_id)
        .join(Team, Submission.team_id == Team.id)
        .where(
            Submission.split_id == split.id,
            Submission.status == "scored",
            Submission.published_at.is_not(None),
            Submission.hidden_at.is_(None),
        )
        .order_by(Submission.id)
    ).all()
    entries: list[Entry] = []
    if rows:
        gold = gold_files.load_gold(split)
        stacked = task.decode_many([row.predictions for row in rows], gold.n)
        wanted = {"all": (None, task.metrics)}
        wanted.update({name: (indices, task.subset_metrics) for name, indices in public_subsets(split).items()})
        primary_key = ("all", task.primary_metric)
        table = statistics.intervals(task, gold, stacked, wanted, keep=primary_key, counts_only=counts_only(split))
        primary = table[primary_key].values
        tie = table[("all", task.tie_break_metric)].values if task.tie_break_metric else np.zeros(len(rows))
        times = np.array([as_utc(row.created_at).timestamp() for row in rows])
        ids = np.array([row.id for row in rows])
        # Primary metric (descending), tie-break metric (descending), then submission time and id.
        order = np.lexsort((ids, times, -np.nan_to_num(tie, nan=-1.0), -np.nan_to_num(primary, nan=-1.0)))
        correct = statistics.primary_correctness(task, gold, stacked)[order]
        samples = table[primary_key].samples[order]
        ranked = _ranks(correct, primary[order], samples)
        team_keys = [f"anonymous:{rows[i].id}" if rows[i].anonymous else f"team:{rows[i].team_id}" for i in order]
        best = _first_of_each(team_keys)  # positions of each team's best entry
        # Every entry its team's best (the usual board): the teams view is the board itself.
        team_ranked = ranked if len(best) == len(order) else _ranks(correct[best], primary[order][best], samples[best])
        by_position = {position: index for index, position in enumerate(best)}
        for position, i in enumerate(order.tolist()):
            row = rows[i]
            scores: dict[str, dict[str, float]] = {}
            intervals: dict[str, dict[str, tuple[float | None, float | None]]] = {}
            for (subset, metric), interval in table.items():
                value = _finite(interval.values[i])
                if value is None:
                    continue  # an empty subset has no score
                scores.setdefault(subset, {})[metric] = value
                intervals.setdefault(subset, {})[metric] = (_finite(interval.low[i]), _finite(interval.high[i]))
            team_index = by_position.get(position)
            entries.append(Entry(
                rank=ranked[0][position], submission_id=row.id, model_name=row.model_name,
                team=None if row.anonymous else row.name, submitted_at=as_utc(row.created_at),
                paper_url=row.paper_url, code_url=row.code_url, description=row.description or "",
                scores=scores, intervals=intervals, position=position + 1,
                rank_low=ranked[1][position], rank_high=ranked[2][position],
                team_key=team_keys[position], model_key=model_key(team_keys[position], row.model_name),
                team_rank=None if team_index is None else team_ranked[0][team_index],
                team_rank_low=None if team_index is None else team_ranked[1][team_index],
                team_rank_high=None if team_index is None else team_ranked[2][team_index],
            ))
    return Snapshot(version, entries, _references(split))


def _ranks(correct: np.ndarray, primary: np.ndarray, samples: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """Significance-aware ranks and 95% rank intervals of entries in table order."""
    ranks = statistics.significance_ranks(correct, primary).ranks
    low, high = statistics.rank_intervals(samples)
    return ranks.tolist(), low.tolist(), high.tolist()


def _first_of_each(keys: list[str]) -> list[int]:
    seen: set[str] = set()
    firsts = []
    for position, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            firsts.append(position)
    return firsts


def model_key(team_key: str, model_name: str) -> str:
    """A model is a team plus its model name, trimmed and case-folded; each anonymous entry is its own."""
    if team_key.startswith("anonymous:"):
        return team_key
    return f"{team_key}/{' '.join(model_name.split()).casefold()}"


def changelog(split: Split) -> list[ChangelogLine]:
    """The split's public changelog, newest first (what the board shows under its table); every line is
    written with a board_version bump, so it goes with the snapshot."""
    rows = db.session.execute(
        select(ChangelogEntry.created_at, ChangelogEntry.message)
        .where(ChangelogEntry.split_id == split.id).order_by(ChangelogEntry.created_at.desc(), ChangelogEntry.id.desc())
    ).all()
    return [ChangelogLine(as_utc(created_at), message) for created_at, message in rows]


def _references(split: Split) -> list[ReferenceRow]:
    rows = db.session.scalars(select(Reference).where(Reference.split_id == split.id).order_by(Reference.id))
    return [ReferenceRow(r.id, r.name, r.source_url, as_utc(r.created_at), json.loads(r.scores)) for r in rows]


def _chart(split: Split, snapshot: Snapshot) -> str:
    task = get_task(split.benchmark.task_type)
    metric = task.primary_metric
    points = [
        progress_chart.Point(e.submitted_at, e.scores["all"][metric],
                             progress_chart.tooltip(e.model_name, e.team, e.scores["all"][metric], e.submitted_at),
                             f"/submissions/{e.submission_id}")
        for e in snapshot.entries if metric in e.scores.get("all", {})
    ]
    lines = [
        progress_chart.Line(r.scores["all"][metric], f"{r.name} {r.scores['all'][metric]:.1f}")
        for r in snapshot.references if metric in r.scores.get("all", {})
    ]
    return progress_chart.render(points, METRIC_LABELS.get(metric, metric), lines)


# --- the stored payload ----------------------------------------------------------------------------------


def _encode(snapshot: Snapshot) -> bytes:
    body = {
        "format": PAYLOAD_FORMAT,
        "entries": [
            [e.rank, e.submission_id, e.model_name, e.team, e.submitted_at.isoformat(), e.paper_url, e.code_url,
             e.description, e.scores, {s: {m: list(b) for m, b in ms.items()} for s, ms in e.intervals.items()},
             e.position, e.rank_low, e.rank_high, e.team_key, e.model_key, e.team_rank, e.team_rank_low,
             e.team_rank_high]
            for e in snapshot.entries
        ],
        "references": [
            [r.id, r.name, r.source_url, r.created_at.isoformat(), r.scores] for r in snapshot.references
        ],
    }
    return zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 6)


def _decode(version: int, payload: bytes) -> Snapshot | None:
    try:
        body = json.loads(zlib.decompress(payload))
    except (zlib.error, ValueError):
        return None
    if body.get("format") != PAYLOAD_FORMAT:
        return None
    entries = [
        Entry(rank=rank, submission_id=sid, model_name=model, team=team,
              submitted_at=datetime.fromisoformat(moment), paper_url=paper, code_url=code, description=text,
              scores=scores, intervals={s: {m: (b[0], b[1]) for m, b in ms.items()} for s, ms in bounds.items()},
              position=position, rank_low=low, rank_high=high, team_key=team_key, model_key=key, team_rank=t_rank,
              team_rank_low=t_low, team_rank_high=t_high)
        for (rank, sid, model, team, moment, paper, code, text, scores, bounds, position, low, high, team_key, key,
             t_rank, t_low, t_high) in body["entries"]
    ]
    references = [
        ReferenceRow(rid, name, url, datetime.fromisoformat(moment), scores)
        for rid, name, url, moment, scores in body["references"]
    ]
    return Snapshot(version, entries, references)


def _store(split_id: int, version: int, payload: bytes) -> None:
    """Keep a computed snapshot, in a short write transaction of its own, while the split is still at that
    version. The read transaction the snapshot was computed in is ended first (callers are read-only
    pages), so that the session never writes on a stale SQLite snapshot. A failure (two workers inserting
    the first row at once, a busy database) just means a later reader computes again."""
    if db.session.new or db.session.dirty or db.session.deleted:
        return  # never commit a caller's pending changes along with the cache
    still_current = exists().where(Split.id == split_id, Split.board_version == version)
    values = {"version": version, "payload": payload, "computed_at": utcnow()}
    try:
        db.session.commit()
        with write_transaction():
            updated = db.session.execute(
                update(LeaderboardCache).where(LeaderboardCache.split_id == split_id, still_current).values(values)
            ).rowcount
            if not updated:
                already = db.session.execute(
                    select(LeaderboardCache.split_id).where(LeaderboardCache.split_id == split_id)
                ).first()
                if already is None and db.session.execute(select(Split.id).where(still_current)).first():
                    db.session.execute(insert(LeaderboardCache).values(split_id=split_id, **values))
            db.session.commit()
    except SQLAlchemyError as exc:
        db.session.rollback()
        log.warning("leaderboard cache for split %s not stored: %s", split_id, exc)


_memo: OrderedDict[tuple[str, int], Snapshot] = OrderedDict()
_memo_lock = threading.Lock()
_MEMO_SIZE = 64


def _memo_get(split_id: int, version: int) -> Snapshot | None:
    with _memo_lock:
        hit = _memo.get((str(db.engine.url), split_id))
    return hit if hit is not None and hit.version == version else None


def snapshot(split: Split) -> Snapshot:
    """The split's board at its current version: from this process's memory, else the stored payload,
    else computed now (and stored for everyone else)."""
    version = split.board_version or 0
    key = (str(db.engine.url), split.id)  # the database too: tests run many databases in one process
    with _memo_lock:
        hit = _memo.get(key)
        if hit is not None and hit.version == version:
            _memo.move_to_end(key)
            return hit
    row = db.session.execute(
        select(LeaderboardCache.version, LeaderboardCache.payload).where(LeaderboardCache.split_id == split.id)
    ).first()
    found = _decode(version, row.payload) if row is not None and row.version == version else None
    if found is None:
        with observability.board_computation():
            found = _compute(split, version)
        _store(split.id, version, _encode(found))
    found.chart = _chart(split, found)
    found.columns = columns(split)
    found.available = available_columns(split)
    found.changelog = changelog(split)
    with _memo_lock:
        _memo[key] = found
        _memo.move_to_end(key)
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return found


def published_ranks(split: Split) -> dict[int, int]:
    """Rank of every published entry as the board would show it now, computed afresh (not cached): for
    telling how many ranks a label correction moved, inside its transaction."""
    return {entry.submission_id: entry.rank for entry in _compute(split, split.board_version or 0).entries}


def leaderboard(split: Split) -> list[Entry]:
    """Published, visible, scored submissions in ranking order (empty while a hidden split's scores are held)."""
    if not scores_are_public(split):
        return []
    return snapshot(split).entries


# --- the page --------------------------------------------------------------------------------------------


def _parse_sort(cols: list[Column], sort: str | None, order: str | None) -> tuple[Column | None, str]:
    if order not in (None, "", "desc", "asc"):
        raise InvalidQuery(f"order must be 'desc' or 'asc', got {order!r}")
    if not sort:
        return None, order or "desc"
    for column in cols:
        if column.key == sort:
            return column, order or "desc"
    choices = ", ".join(column.key for column in cols)
    raise InvalidQuery(f"sort must name a column ({choices}), got {sort!r}")


def _parse_page(page: str | int | None) -> int:
    if page in (None, ""):
        return 1
    try:
        number = int(page)
    except (TypeError, ValueError):
        raise InvalidQuery(f"page must be a whole number of at least 1, got {page!r}") from None
    if number < 1:
        raise InvalidQuery(f"page must be a whole number of at least 1, got {page!r}")
    return number


def _ordered(rows: list, column: Column, order: str) -> list:
    """Entries and reference rows sorted by a column: rows without a value last, ties in ranking order."""
    present = [row for row in rows if row.value(column) is not None]
    missing = [row for row in rows if row.value(column) is None]
    present.sort(key=lambda row: row.value(column), reverse=order == "desc")  # stable, also reversed
    return present + missing


def _interleave(entries: list[Entry], references: list[ReferenceRow], primary: Column) -> list:
    """Reference rows where their primary score falls among the ranked entries (last if they have none)."""
    rows: list = list(entries)
    for reference in sorted(references, key=lambda r: -(r.value(primary) or -1.0)):
        value = reference.value(primary)
        if value is None:
            rows.append(reference)
            continue
        at = next((i for i, row in enumerate(rows) if (row.value(primary) or -1.0) < value), len(rows))
        rows.insert(at, reference)
    return rows


def _paginate(rows: list, page: int) -> tuple[list, int]:
    """PER_PAGE entries a page; reference rows go with the page of the entry they precede."""
    pages = max(1, math.ceil(sum(1 for row in rows if row.kind == "entry") / PER_PAGE))
    if page > pages:
        raise InvalidQuery(f"page {page} is past the last page ({pages})")
    shown, seen = [], 0
    for row in rows:
        index = min(seen // PER_PAGE, pages - 1)
        if index == page - 1:
            shown.append(row)
        if row.kind == "entry":
            seen += 1
    return shown, pages


@dataclass(frozen=True)
class SplitInfo:
    """What a leaderboard page needs of a split, read without the ORM (a page view's only query)."""

    id: int
    slug: str
    name: str
    hidden: bool
    example_count: int
    board_version: int
    feedback: str
    revealed_at: datetime | None
    # The submission policy, for the board's "How to submit" section.
    per_day: int | None = None
    per_month: int | None = None
    total: int | None = None
    rejected_per_day: int = 0
    is_open: bool = True


@dataclass(frozen=True)
class BenchmarkInfo:
    id: int
    slug: str
    name: str
    description: str
    paper_url: str | None
    task_type: str
    splits: tuple[SplitInfo, ...]
    default_split_id: int | None = None


# Built once: SQLAlchemy then reuses its compiled form and result metadata (a fresh select costs more to
# build than the query takes to run).
_BENCHMARK_QUERY = (
    select(Benchmark.id, Benchmark.slug, Benchmark.name, Benchmark.description, Benchmark.paper_url,
           Benchmark.task_type, Split.id, Split.slug, Split.name, Split.hidden, Split.example_count,
           Split.board_version, Split.feedback, Split.revealed_at, Split.per_day, Split.per_month, Split.total,
           Split.rejected_per_day, Split.is_open, Benchmark.default_split_id)
    .outerjoin(Split, Split.benchmark_id == Benchmark.id)
    .where(Benchmark.slug == bindparam("slug"))
    .order_by(Split.position, Split.id)
)


def benchmark_info(slug: str) -> BenchmarkInfo:
    """The benchmark and its splits in one plain query; NotFound for an unknown slug."""
    rows = db.session.connection().execute(_BENCHMARK_QUERY, {"slug": slug}).all()
    if not rows:
        raise catalog.unknown_benchmark(slug)
    first = rows[0]
    splits = tuple(
        SplitInfo(row[6], row[7], row[8], bool(row[9]), row[10], row[11] or 0, row[12], row[13], *row[14:18],
                  bool(row[18]))
        for row in rows if row[6] is not None
    )
    return BenchmarkInfo(first[0], first[1], first[2], first[3] or "", first[4], first[5], splits, first[19])


_views: OrderedDict[tuple, tuple[list, int]] = OrderedDict()
_rendered: OrderedDict[tuple, Markup | bytes] = OrderedDict()
_VIEWS_SIZE = 128  # per memo; a rendered page of 100 rows is about 200 kB


def _remember(memo: OrderedDict, key: tuple, make):
    with _memo_lock:
        if key in memo:
            memo.move_to_end(key)
            return memo[key]
    value = make()
    with _memo_lock:
        memo[key] = value
        while len(memo) > _VIEWS_SIZE:
            memo.popitem(last=False)
    return value


_recent_pages: OrderedDict[tuple, tuple[float, bytes]] = OrderedDict()
_changes = 0  # boards this process has changed: part of recent_page's key, so its own changes show at once


@event.listens_for(Split.board_version, "set")
def _board_changed(_target, _value, _old, _initiator) -> None:
    global _changes
    _changes += 1


def recent_page(key: tuple, make: Callable[[], bytes]) -> bytes:
    """A page for visitors without a session, reused for LEADERBOARD_PAGE_TTL seconds without asking the
    database: a popular board is read far more often than it changes, and a page up to that old is as
    good as current. (Each worker keeps its own; a change made in this worker is seen here at once.)"""
    ttl = float(current_app.config.get("LEADERBOARD_PAGE_TTL") or 0)
    if ttl <= 0:
        return make()
    key = (str(db.engine.url), _changes, *key)
    now = time.monotonic()
    with _memo_lock:
        found = _recent_pages.get(key)
        if found is not None and found[0] > now:
            return found[1]
    body = make()
    with _memo_lock:
        _recent_pages[key] = (now + ttl, body)
        _recent_pages.move_to_end(key)
        while len(_recent_pages) > _VIEWS_SIZE:
            _recent_pages.popitem(last=False)
    return body


def _given(chosen: str | Sequence[str] | None) -> tuple[str, ...] | None:
    values = (chosen,) if isinstance(chosen, str) else tuple(chosen or ())
    return tuple(value for value in values if value) or None


def _parse_view(view: str | None) -> str:
    if view in (None, ""):
        return "entries"
    if view not in VIEWS:
        raise InvalidQuery(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    return view


def board(benchmark_slug: str, split_slug: str | None = None, *, sort: str | None = None,
          order: str | None = None, page: str | int | None = None, view: str | None = None,
          chosen: str | Sequence[str] | None = None, paginate: bool = True) -> Board:
    """A leaderboard page: NotFound for unknown slugs, InvalidQuery (400) for bad sort, order, page, view
    or columns. `view="teams"` keeps each team's best entry (ranked among those); `chosen` names the
    columns; `paginate=False` puts every row on one page (exports).

    Once the split's snapshot is in memory this is one query (the benchmark and its splits).
    """
    begin_reading()
    benchmark = benchmark_info(benchmark_slug)
    if split_slug:
        split = next((s for s in benchmark.splits if s.slug == split_slug), None)
        if split is None:
            raise catalog.unknown_split(benchmark_slug, split_slug, [s.slug for s in benchmark.splits])
    else:
        split = default_split(benchmark)
    if split is None:
        return Board(benchmark, None, [], True)
    number = _parse_page(page)
    shown_view = _parse_view(view)
    if not scores_are_public(split):
        full = db.session.get(Split, split.id)
        available = available_columns(full)
        cols = choose_columns(available, columns(full), chosen)
        column, direction = _parse_sort(cols, sort, order)
        if number > 1:
            raise InvalidQuery(f"page {number} is past the last page (1)")
        return Board(benchmark, split, [], False, cols, sort=column, order=direction, view=shown_view,
                     available=available, chosen=_given(chosen), changelog=changelog(full))
    snap = _memo_get(split.id, split.board_version) or snapshot(db.session.get(Split, split.id))
    cols = choose_columns(snap.available, snap.columns, chosen)
    column, direction = _parse_sort(cols, sort, order)
    entries = snap.rows(shown_view)
    key = (str(db.engine.url), split.id, snap.version, column.key if column else None, direction, number,
           shown_view, tuple(c.key for c in cols), paginate)

    def arrange() -> tuple[list, int]:
        primary = primary_column(snap.available, benchmark.task_type)
        rows = _interleave(entries, snap.references, primary) if column is None else _ordered(
            [*entries, *snap.references], column, direction)
        return _paginate(rows, number) if paginate else (rows, 1)

    shown, pages = _remember(_views, key, arrange)
    facts = (benchmark.slug, split.slug, split.name, split.hidden, split.example_count)
    return Board(benchmark, split, entries, True, cols, snap.references, shown, column, direction,
                 number, pages, Markup(snap.chart), key + facts, shown_view, snap.available, _given(chosen),
                 snap.changelog)


def rendered(board: Board, render, *, extra: tuple = ()):
    """What `render()` (a view's template) makes of a board, made once per board version, sort, page and
    `extra` (the view's own distinctions): 100 rows of a table are most of a page's cost, and they are
    the same for every visitor. A str result comes back as Markup; bytes as they are."""
    def make():
        result = render()
        return Markup(result) if isinstance(result, str) else result

    if board.cache_key is None:
        return make()
    return _remember(_rendered, (*board.cache_key, board.benchmark, *extra), make)


def submission_intervals(submission: Submission, subset_names: list[str]) -> dict[str, dict[str, tuple]]:
    """(ci_low, ci_high) of one scored submission on the named subsets, computed as on its leaderboard (the
    same resamples, or on a blind test before its reveal the count alone), so the two agree. The caller
    decides which subsets the viewer may see."""
    if submission.status != "scored" or submission.predictions is None:
        return {}
    split = submission.split
    task = get_task(split.benchmark.task_type)
    known = {s.name: s for s in split.subsets}
    wanted = {"all": (None, task.metrics)} if "all" in subset_names else {}
    wanted.update({name: (known[name].indices, task.subset_metrics) for name in subset_names if name in known})
    if not wanted:
        return {}
    key = (str(db.engine.url), submission.id, split.board_version, tuple(sorted(wanted)))
    with _memo_lock:
        hit = _submission_memo.get(key)
        if hit is not None:
            return hit
    gold = gold_files.load_gold(split)
    table = statistics.intervals(task, gold, task.decode(submission.predictions, gold.n)[None], wanted,
                                 counts_only=counts_only(split))
    result: dict[str, dict[str, tuple]] = {}
    for (subset, metric), interval in table.items():
        result.setdefault(subset, {})[metric] = (_finite(interval.low[0]), _finite(interval.high[0]))
    with _memo_lock:
        _submission_memo[key] = result
        while len(_submission_memo) > 256:
            _submission_memo.popitem(last=False)
    return result


_submission_memo: OrderedDict[tuple, dict] = OrderedDict()


# --- the home page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """What the home page says of a benchmark: its entries, the best on its landing split, its last change."""

    benchmark: Benchmark
    landing: Split | None
    entries: int  # published, visible entries over every split
    best: Entry | None  # the top entry of the landing split (None while its scores are held)
    last_change: datetime | None  # the latest publication on any of its splits

    @property
    def best_score(self) -> float | None:
        metric = get_task(self.benchmark.task_type).primary_metric
        return None if self.best is None else self.best.scores.get("all", {}).get(metric)

    @property
    def metric_label(self) -> str:
        metric = get_task(self.benchmark.task_type).primary_metric
        return METRIC_LABELS.get(metric, metric)


def summaries() -> list[Summary]:
    begin_reading()
    benchmarks = list(db.session.scalars(select(Benchmark).order_by(Benchmark.name)))
    counts = {
        split_id: (count, latest)
        for split_id, count, latest in db.session.execute(
            select(Submission.split_id, func.count(), func.max(Submission.published_at))
            .where(Submission.status == "scored", Submission.published_at.is_not(None),
                   Submission.hidden_at.is_(None))
            .group_by(Submission.split_id)
        )
    }
    result = []
    for benchmark in benchmarks:
        landing = default_split(benchmark)
        per_split = [counts[s.id] for s in benchmark.splits if s.id in counts]
        moments = [as_utc(latest) for _, latest in per_split if latest is not None]
        best = None
        if landing is not None and scores_are_public(landing):
            top = snapshot(landing).entries
            best = top[0] if top else None
        result.append(Summary(benchmark, landing, sum(count for count, _ in per_split), best,
                              max(moments) if moments else None))
    return result
