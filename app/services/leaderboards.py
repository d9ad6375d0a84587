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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

import numpy as np
from flask import current_app
from markupsafe import Markup
from sqlalchemy import bindparam, event, exists, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from app.db import begin_reading, db, write_transaction
from app.evaluation import get_task, statistics
from app.models import Benchmark, LeaderboardCache, Reference, Split, Submission, Team, as_utc, utcnow
from app.services import catalog, gold_files, progress_chart
from app.services.errors import NotFound, ServiceError

log = logging.getLogger(__name__)

PER_PAGE = 100
PAYLOAD_FORMAT = 1  # bump when the stored payload's shape changes: older rows are then recomputed
METRIC_LABELS = {
    "accuracy": "Accuracy", "consistency": "Consistency", "q_a": "Q→A", "qa_r": "QA→R", "q_ar": "Q→AR",
}


class InvalidQuery(ServiceError):
    """A malformed sort, order or page parameter."""

    status = 400


# --- what a board holds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    subset: str
    metric: str
    label: str

    @property
    def key(self) -> str:
        return f"{self.subset}:{self.metric}"


@dataclass
class Entry:
    rank: int  # significance-aware: shared with the entry above unless significantly better (see statistics)
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

    kind = "entry"

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


@dataclass
class Snapshot:
    version: int
    entries: list[Entry]
    references: list[ReferenceRow]
    chart: str = ""
    columns: list[Column] = field(default_factory=list)


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

    @property
    def primary(self) -> Column | None:
        """The column the default ranking uses (NLVR, NLVR2: accuracy; VCR: Q→AR)."""
        return primary_column(self.columns, self.benchmark.task_type)

    def sort_link(self, column: Column) -> str:
        """?sort=<subset>:<metric>&order=desc|asc: descending first, toggled when already sorted by it."""
        order = "asc" if self.sort == column and self.order == "desc" else "desc"
        return f"?sort={column.key}&order={order}"

    def page_link(self, page: int) -> str:
        params = {"page": page}
        if self.sort is not None:
            return f"?sort={self.sort.key}&order={self.order}&" + urlencode(params)
        return "?" + urlencode(params)

    def sorted_by(self, column: Column) -> str | None:
        """'descending'/'ascending' for the column the table is sorted by (aria-sort), else None."""
        if self.sort == column:
            return "descending" if self.order == "desc" else "ascending"
        return None


# --- columns and visibility ------------------------------------------------------------------------------


def scores_are_public(split: Split | SplitInfo) -> bool:
    """Hidden splits under a withholding policy keep scores private until a maintainer reveals them."""
    return not split.hidden or split.feedback == "full" or split.revealed_at is not None


def columns(split: Split) -> list[Column]:
    """Every metric on the whole split, then accuracy on the derived bias subsets (NLVR2)."""
    task = get_task(split.benchmark.task_type)
    result = [Column("all", metric, METRIC_LABELS.get(metric, metric)) for metric in task.metrics]
    for subset in split.subsets:
        if subset.source == "derived":
            for metric in task.subset_metrics:
                label = f"{subset.name.capitalize()} {METRIC_LABELS.get(metric, metric).lower()}"
                result.append(Column(subset.name, metric, label))
    return result


def primary_column(cols: list[Column], task_type: str) -> Column | None:
    metric = get_task(task_type).primary_metric
    return next((c for c in cols if c.subset == "all" and c.metric == metric), None)


def is_breakdown(split: Split, subset_source: str) -> bool:
    """Per-category, per-field and maintainers' id subsets of a hidden split are for maintainers only:
    small subsets of a blind test tell too much about its labels."""
    return split.hidden and subset_source != "derived"


def public_subsets(split: Split) -> dict[str, np.ndarray]:
    """Subsets whose scores anyone may see on this split: all of them on public splits, the derived
    bias subsets on hidden ones."""
    return {s.name: s.indices for s in split.subsets if not is_breakdown(split, s.source)}


def default_split(benchmark: Benchmark) -> Split | None:
    """The blind test (the last hidden split) where there is one, else the last split added."""
    hidden = [split for split in benchmark.splits if split.hidden]
    if hidden:
        return hidden[-1]
    return benchmark.splits[-1] if benchmark.splits else None


# --- computing a snapshot --------------------------------------------------------------------------------


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _compute(split: Split, version: int) -> Snapshot:
    """Scores, intervals and rank tiers of every published entry, from the stored predictions."""
    task = get_task(split.benchmark.task_type)
    rows = db.session.execute(
        select(Submission.id, Submission.model_name, Submission.anonymous, Team.name, Submission.created_at,
               Submission.paper_url, Submission.code_url, Submission.description, Submission.predictions)
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
        table = statistics.intervals(task, gold, stacked, wanted)
        primary = table[("all", task.primary_metric)].values
        tie = table[("all", task.tie_break_metric)].values if task.tie_break_metric else np.zeros(len(rows))
        times = np.array([as_utc(row.created_at).timestamp() for row in rows])
        ids = np.array([row.id for row in rows])
        # Primary metric (descending), tie-break metric (descending), then submission time and id.
        order = np.lexsort((ids, times, -np.nan_to_num(tie, nan=-1.0), -np.nan_to_num(primary, nan=-1.0)))
        ranks = statistics.tiers(statistics.primary_correctness(task, gold, stacked)[order]).ranks
        for position, (i, rank) in enumerate(zip(order.tolist(), ranks), start=1):
            row = rows[i]
            scores: dict[str, dict[str, float]] = {}
            intervals: dict[str, dict[str, tuple[float | None, float | None]]] = {}
            for (subset, metric), interval in table.items():
                value = _finite(interval.values[i])
                if value is None:
                    continue  # an empty subset has no score
                scores.setdefault(subset, {})[metric] = value
                intervals.setdefault(subset, {})[metric] = (_finite(interval.low[i]), _finite(interval.high[i]))
            entries.append(Entry(
                rank=rank, submission_id=row.id, model_name=row.model_name,
                team=None if row.anonymous else row.name, submitted_at=as_utc(row.created_at),
                paper_url=row.paper_url, code_url=row.code_url, description=row.description or "",
                scores=scores, intervals=intervals, position=position,
            ))
    return Snapshot(version, entries, _references(split))


def _references(split: Split) -> list[ReferenceRow]:
    rows = db.session.scalars(select(Reference).where(Reference.split_id == split.id).order_by(Reference.id))
    return [ReferenceRow(r.id, r.name, r.source_url, as_utc(r.created_at), json.loads(r.scores)) for r in rows]


def _chart(split: Split, snapshot: Snapshot) -> str:
    task = get_task(split.benchmark.task_type)
    metric = task.primary_metric
    points = [
        progress_chart.Point(e.submitted_at, e.scores["all"][metric],
                             progress_chart.tooltip(e.model_name, e.team, e.scores["all"][metric], e.submitted_at))
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
             e.position]
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
              position=position)
        for rank, sid, model, team, moment, paper, code, text, scores, bounds, position in body["entries"]
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
        found = _compute(split, version)
        _store(split.id, version, _encode(found))
    found.chart = _chart(split, found)
    found.columns = columns(split)
    with _memo_lock:
        _memo[key] = found
        _memo.move_to_end(key)
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return found


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


# Built once: SQLAlchemy then reuses its compiled form and result metadata (a fresh select costs more to
# build than the query takes to run).
_BENCHMARK_QUERY = (
    select(Benchmark.id, Benchmark.slug, Benchmark.name, Benchmark.description, Benchmark.paper_url,
           Benchmark.task_type, Split.id, Split.slug, Split.name, Split.hidden, Split.example_count,
           Split.board_version, Split.feedback, Split.revealed_at, Split.per_day, Split.per_month, Split.total,
           Split.rejected_per_day, Split.is_open)
    .outerjoin(Split, Split.benchmark_id == Benchmark.id)
    .where(Benchmark.slug == bindparam("slug"))
    .order_by(Split.position, Split.id)
)


def _benchmark(slug: str) -> BenchmarkInfo:
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
    return BenchmarkInfo(first[0], first[1], first[2], first[3] or "", first[4], first[5], splits)


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


def board(benchmark_slug: str, split_slug: str | None = None, *, sort: str | None = None,
          order: str | None = None, page: str | int | None = None) -> Board:
    """A leaderboard page: NotFound for unknown slugs, InvalidQuery (400) for bad sort/order/page.

    Once the split's snapshot is in memory this is one query (the benchmark and its splits).
    """
    begin_reading()
    benchmark = _benchmark(benchmark_slug)
    if split_slug:
        split = next((s for s in benchmark.splits if s.slug == split_slug), None)
        if split is None:
            raise catalog.unknown_split(benchmark_slug, split_slug, [s.slug for s in benchmark.splits])
    else:
        split = default_split(benchmark)
    if split is None:
        return Board(benchmark, None, [], True)
    number = _parse_page(page)
    if not scores_are_public(split):
        cols = columns(db.session.get(Split, split.id))
        column, direction = _parse_sort(cols, sort, order)
        if number > 1:
            raise InvalidQuery(f"page {number} is past the last page (1)")
        return Board(benchmark, split, [], False, cols, sort=column, order=direction)
    snap = _memo_get(split.id, split.board_version) or snapshot(db.session.get(Split, split.id))
    column, direction = _parse_sort(snap.columns, sort, order)
    key = (str(db.engine.url), split.id, snap.version, column.key if column else None, direction, number)

    def arrange() -> tuple[list, int]:
        primary = primary_column(snap.columns, benchmark.task_type)
        rows = _interleave(snap.entries, snap.references, primary) if column is None else _ordered(
            [*snap.entries, *snap.references], column, direction)
        return _paginate(rows, number)

    shown, pages = _remember(_views, key, arrange)
    facts = (benchmark.slug, split.slug, split.name, split.hidden, split.example_count)
    return Board(benchmark, split, snap.entries, True, snap.columns, snap.references, shown, column, direction,
                 number, pages, Markup(snap.chart), key + facts)


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
    """(ci_low, ci_high) of one scored submission on the named subsets, on the same resamples as its
    leaderboard (so the intervals agree). The caller decides which subsets the viewer may see."""
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
    table = statistics.intervals(task, gold, task.decode(submission.predictions, gold.n)[None], wanted)
    result: dict[str, dict[str, tuple]] = {}
    for (subset, metric), interval in table.items():
        result.setdefault(subset, {})[metric] = (_finite(interval.low[0]), _finite(interval.high[0]))
    with _memo_lock:
        _submission_memo[key] = result
        while len(_submission_memo) > 256:
            _submission_memo.popitem(last=False)
    return result


_submission_memo: OrderedDict[tuple, dict] = OrderedDict()
