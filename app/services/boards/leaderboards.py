"""Leaderboard pages: a split's board as a visitor asked for it (columns, sort, page, view), the landing
split, the home page's summaries. The entries come from services/boards/board_snapshots.py; what may be shown,
from services/blind_test/visibility.py; the page's links, chart and caches are made on the web side."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Generic, TypeVar, overload

from sqlalchemy import bindparam, func, select

from app.db import begin_reading, db
from app.evaluation import TASK_TYPES, TaskType, rank_method, sealed
from app.evaluation.display import score_text
from app.lru import LRU
from app.models import Benchmark, LeaderboardCache, Split, Submission, as_utc, utcnow
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards.board_snapshots import (
    GAP,
    ChangelogLine,
    Entry,
    ReferenceRow,
    Snapshot,
    built_lately,
    changelog,
    final_snapshot,
    memo_get,
    selected_snapshot,
    snapshot,
    standing_at,
)
from app.services.catalog import entry_fields, phases, tracks
from app.services.errors import NotFound, ServiceError
from app.services.jobs import transport

PER_PAGE = 100
# For pages that list several families' scores at once (a team's submissions): each family's declared labels.
# A page about one family asks its task (TaskType.metric), which wins where two families' labels differ.
METRIC_LABELS = {
    metric.name: metric.label for task in reversed(TASK_TYPES.values()) for metric in task.declared_metrics
}


# Every published entry, each team's best (anonymous entries count apart), or the final board: the entries as
# they stood when the split closed (a split whose closing time has passed: board_snapshots.final_snapshot).
FINAL = "final"
VIEWS = ("entries", "teams", FINAL)
MAX_LIMIT = 1000  # items one page of an API list may ask for (?limit=)
MAX_OFFSET = 2**31 - 1  # an offset a database's OFFSET takes on every backend
MAX_QUERY = 200  # characters of a search (?q=)
T = TypeVar("T")


class InvalidQuery(ServiceError):
    """A malformed sort, order, page, view or columns parameter."""

    status = 400


# --- what a board holds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    subset: str
    metric: str
    label: str
    size: int | None = None  # units the column's metric counts (TaskType.metric_units; shown in its header)
    # As the family declares the metric (tasks.base.Metric): None decimals, a percentage's own.
    decimals: int | None = None
    unit: str = "percent"
    direction: str = "higher is better"
    ranks: bool = True  # may decide a rank or a column's bold best
    short: str | None = None  # the header where room is short (LaTeX): the metric's short label; None: label
    counts: str = "examples"  # what its n counts, in words ("balanced questions")

    @property
    def key(self) -> str:
        return f"{self.subset}:{self.metric}"

    def text(self, value: float | None) -> str:
        """A value of this column as every view writes it: a plain number with its declared decimals."""
        return score_text(value, self.decimals)


def metric_column(task: TaskType, subset: str, metric: str, size: int | None, label: str | None = None) -> Column:
    """The column of (subset, metric) as the family declares the metric."""
    declared = task.metric(metric)
    return Column(
        subset,
        metric,
        task.column_label(subset, metric) if label is None else label,
        size,
        declared.decimals,
        declared.unit,
        declared.direction,
        declared.ranks,
        task.column_label(subset, metric, short=True) if label is None else None,
        declared.counts,
    )


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
    # Everything the rendered table depends on; pages with the same key render the same HTML.
    cache_key: tuple | None = None
    view: str = "entries"
    available: list[Column] = field(default_factory=list)  # every column a visitor may choose
    chosen: tuple[str, ...] | None = None  # the columns parameters as given (None: the default columns)
    changelog: list[ChangelogLine] = field(default_factory=list)
    snapshot: Snapshot | None = None  # every entry of the board, whatever the view (None while held)
    held: Held | None = None  # what a held board tells instead of its entries (None: scores public)
    q: str | None = None  # the search (?q=) as applied: entries whose model or team name holds it
    # The entries the search keeps, in ranking order (None: every entry); each keeps its rank on the board.
    matching: list[Entry] | None = None
    examples: int | None = None  # the examples its figures count over (a blind test's queried part's, till the reveal)
    # ?track=, ?where=, ?verified=1: the entries a selection keeps alone, ranked among themselves
    # (board_snapshots.selected_snapshot); None: every entry.
    selection: tracks.Selection | None = None
    track_tabs: list[tracks.TrackSpec] = field(default_factory=list)  # the benchmark's named tracks

    @property
    def verified_only(self) -> bool:
        return self.selection is not None and self.selection.verified

    @property
    def selection_params(self) -> dict[str, str | list[str] | None]:
        """The query parameters that ask for this board's selection again (a link keeps them; every key present,
        None where not asked): a named track by its name, anything else by its conditions."""
        chosen = self.selection
        if chosen is None:
            return {"track": None, "where": None, "verified": None}
        if chosen.track is not None:
            return {"track": chosen.track, "where": None, "verified": None}
        return {
            "track": None,
            "where": [condition.written for condition in chosen.conditions] or None,
            "verified": "1" if chosen.verified else None,
        }

    @property
    def selection_words(self) -> str:
        """What the selection keeps, as the page says it ("" for every entry)."""
        if self.selection is None:
            return ""
        return self.selection.words(self.snapshot.field_specs if self.snapshot else ())

    @property
    def field_columns(self) -> list[entry_fields.FieldSpec]:
        """The entry fields its table shows as columns, after the scores (the benchmark's choice)."""
        return [spec for spec in self.snapshot.field_specs if spec.column] if self.snapshot else []

    @property
    def found(self) -> list[Entry]:
        """The entries the search keeps (every entry without a search), in ranking order, on every page."""
        return self.entries if self.matching is None else self.matching

    @property
    def phase(self) -> phases.Phase | None:
        """The split's phase as the board was asked for (its SplitInfo's); None without a split."""
        if self.split is None:
            return None
        found = self.split.phase if isinstance(self.split, SplitInfo) else None
        return found or phases.of(self.split)

    @property
    def resolution(self) -> float | None:
        """The smallest difference in points this view's own pair decisions detect with 80% power (None: fewer
        than two entries, or a held board)."""
        if self.snapshot is None or self.held is not None:
            return None
        value = self.snapshot.resolutions.get("teams" if self.view == "teams" else "entries")
        return None if value is None else round(float(value), 1)

    @property
    def resolution_text(self) -> str | None:
        return rank_method.resolution_text(self.resolution, len(self.entries))

    @property
    def primary_name(self) -> str:
        """The ranking metric as the board's sentences name it (rank_method.primary_name)."""
        return rank_method.primary_name(catalog.task_of(self.benchmark))

    @property
    def rank_method(self) -> str | None:
        """How this board's ranks are made, in one sentence (rank_method: the one place that writes it)."""
        if self.split is None:
            return None
        task = catalog.task_of(self.benchmark)
        return rank_method.sentence(task.rank_test, visibility.counts_only(self.split), self.primary_name)

    @property
    def primary(self) -> Column | None:
        """The column the default ranking uses (NLVR, NLVR2: accuracy; VCR: Q→AR)."""
        return primary_column(self.available or self.columns, catalog.task_of(self.benchmark))

    @cached_property
    def best(self) -> dict[str, float]:
        """Each column's best value among the ranked entries (shown bold)."""
        found: dict[str, float] = {}
        lower = catalog.task_of(self.benchmark).lower_is_better
        for column in self.columns:
            if not column.ranks:
                continue  # never bold: it decides nothing (the distribution)
            values = [v for v in (entry.value(column) for entry in self.entries) if v is not None]
            if values:
                found[column.key] = min(values) if column.metric in lower else max(values)
        return found

    def is_best(self, row, column: Column) -> bool:
        value = row.value(column)
        return row.kind == "entry" and value is not None and value == self.best.get(column.key)

    def sorted_by(self, column: Column) -> str | None:
        """'descending'/'ascending' for the column the table is sorted by (aria-sort), else None."""
        if self.sort == column:
            return "descending" if self.order == "desc" else "ascending"
        return None


@dataclass(frozen=True)
class Held:
    """What a board whose scores are held tells before the reveal: counts, never anything per entry."""

    entries: int  # published entries the reveal will show
    teams: int  # the teams they come from (an anonymous entry's team is counted, never named)
    feedback: str
    policy: str  # the feedback policy in one sentence
    opens: str = "when the maintainers reveal them"  # no reveal date is kept: the maintainers decide

    @property
    def waiting(self) -> str:
        """'16 entries from 5 teams are waiting'."""
        if not self.entries:
            return "No published entries are waiting yet"
        entries = f"{self.entries:,} entr{'y' if self.entries == 1 else 'ies'}"
        teams = f"{self.teams:,} team{'' if self.teams == 1 else 's'}"
        return f"{entries} from {teams} {'is' if self.entries == 1 else 'are'} waiting"


# The policies that hold a board (a hidden split under `full` shows its counts' scores), one sentence each.
HELD_POLICIES = {
    "ladder": "Feedback policy ladder: each team is told only its best accuracy so far, and a new figure only "
    "when a file clearly beats it (the Ladder of Blum and Hardt, 2015); every other score stays with the "
    "maintainers until the split is revealed.",
    "none": "Feedback policy none: every file is scored when it arrives, but no score is shown to anyone but the "
    "maintainers, not even to the team that sent it, until the split is revealed.",
}


def held_facts(split: SplitInfo | Split, until: datetime | None = None) -> Held:
    """How many published entries, from how many teams, a held board's reveal will show (one query); `until`
    (the closing time, for the final view): those its final board will show (board_snapshots.standing_at)."""
    entries, teams = db.session.execute(
        select(func.count(), func.count(Submission.team_id.distinct())).where(
            Submission.split_id == split.id,
            Submission.status == "scored",
            Submission.published_at.is_not(None),
            Submission.hidden_at.is_(None),
            *standing_at(until),
        )
    ).one()
    return Held(entries, teams, split.feedback, HELD_POLICIES[split.feedback])


# --- columns ------------------------------------------------------------------------------


# A split's columns by what they depend on: the columns' n are counted on the gold set, which a page view should
# not read again (the gold cache holds 16 splits; a deployment of more would parse a gold file per page).
_available: LRU[list[Column]] = LRU(1024)


def available_columns(split: Split) -> list[Column]:
    """Every column a visitor may choose: each metric on the whole split, then the task's subset metrics
    on every subset the public may see (derived bias subsets first, in the family's order), each with the
    units its metric counts (TaskType.metric_units: GQA's balanced questions, not every question). Worked out
    once per board version (a new subset, a policy change or a reveal bumps it) and gold file."""
    key = (
        str(db.engine.url),
        split.id,
        split.board_version,
        split.gold_sha256,
        split.choices_sha256,
        split.feedback,
        split.revealed_at,
        split.sealed_fraction,
    )
    found = _available.get(key)
    if found is None:
        found = _available.put(key, _available_columns(split))
    return list(found)


def _available_columns(split: Split) -> list[Column]:
    task = catalog.task_of(split.benchmark)
    gold = catalog.gold_for(split)
    shown_part = visibility.queried_indices(split)
    result = [
        metric_column(task, "all", metric, task.metric_units(gold, metric, shown_part))
        for metric in catalog.split_metrics(split)
    ]
    visible = [s for s in split.subsets if not visibility.is_breakdown(split, s.source)]
    parts = [s for s in visible if s.source == "sealed"]
    for subset in sorted(parts, key=lambda s: s.name != sealed.QUERIED):  # after the reveal: both parts, the gap
        for metric in visibility.subset_metrics(task, subset.source, split):
            result.append(metric_column(task, subset.name, metric, task.metric_units(gold, metric, subset.indices)))
    if parts:
        gap = f"Gap (queried − sealed {_metric_word(task, task.primary_metric)})"
        result.append(metric_column(task, GAP, task.primary_metric, None, gap))
    others = (s for s in visible if s.source != "sealed")
    for subset in sorted(others, key=lambda s: (s.source != "derived", task.subset_order(s.name))):
        # A blind test's bias subsets are derived from its labels: their sizes are not shown before the reveal.
        sized = visibility.sizes_shown(split)
        for metric in task.subset_metrics:
            size = task.metric_units(gold, metric, subset.indices) if sized else None
            result.append(metric_column(task, subset.name, metric, size))
    return result


def _metric_word(task: TaskType, metric: str) -> str:
    label = task.metric(metric).label
    return label.lower() if label in ("Accuracy", "Consistency") else label


def columns(split: Split) -> list[Column]:
    """The default columns: those the benchmark's maintainers chose (a bundle's `columns`, in their order, those
    this split has), else every metric on the whole split and accuracy on the derived subsets the task type shows
    by default; either way the primary metric on a revealed sealed split's two parts and their gap."""
    task = catalog.task_of(split.benchmark)
    if split.benchmark.board_columns:
        by_key = {column.key: column for column in available_columns(split)}
        chosen = [by_key[key] for key in json.loads(split.benchmark.board_columns) if key in by_key]
        blind = [
            c
            for c in by_key.values()
            if c.subset == GAP or (c.subset in sealed.PARTS and c.metric == task.primary_metric)
        ]
        return chosen + [c for c in blind if c not in chosen]
    fields = task.default_subset_fields
    derived = {
        s.name for s in split.subsets if s.source == "derived" and (fields is None or s.name.split(":", 1)[0] in fields)
    }
    return [
        c
        for c in available_columns(split)
        if c.subset in ("all", GAP)
        or c.subset in derived
        or (c.subset in sealed.PARTS and c.metric == task.primary_metric)
    ]


def choose_columns(available: list[Column], defaults: list[Column], chosen: str | Sequence[str] | None) -> list[Column]:
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


def primary_column(cols: list[Column], task: TaskType) -> Column | None:
    metric = task.primary_metric
    return next((c for c in cols if c.subset == "all" and c.metric == metric), None)


@overload
def default_split(benchmark: Benchmark) -> Split | None: ...


@overload
def default_split(benchmark: BenchmarkInfo) -> SplitInfo | None: ...


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


@dataclass(frozen=True)
class Window:
    """The part of a list an API caller asked for (?limit=&offset=): `limit` items from `offset` on, every
    item from `offset` on when no limit was given (as the lists answered before they were paged)."""

    limit: int | None = None
    offset: int = 0

    def of(self, items: Sequence[T]) -> list[T]:
        end = None if self.limit is None else self.offset + self.limit
        return list(items[self.offset : end])


@dataclass(frozen=True)
class Listed(Generic[T]):
    """One window of a list, with the number of items the whole list holds (after any search)."""

    items: list[T]
    total: int
    window: Window


def _whole_number(name: str, raw: str | int | None, largest: int) -> int | None:
    if raw is None or raw == "":
        return None
    text = str(raw)
    # ASCII digits only: int() would also take " 5", "+5", "5_000" and other scripts' digits.
    if not (text.isascii() and text.isdigit()) or int(text) > largest:
        raise InvalidQuery(f"{name} must be a whole number from 0 to {largest:,}, got {text[:40]!r}")
    return int(text)


def window(limit: str | int | None = None, offset: str | int | None = None) -> Window:
    """?limit=&offset= checked: InvalidQuery (400) naming the parameter for a negative, non-integer or too
    large value (limit at most MAX_LIMIT)."""
    return Window(_whole_number("limit", limit, MAX_LIMIT), _whole_number("offset", offset, MAX_OFFSET) or 0)


def search_text(q: str | None) -> str | None:
    """?q= checked: None when empty (no search); InvalidQuery (400) when over MAX_QUERY characters."""
    text = (q or "").strip()
    if len(text) > MAX_QUERY:
        raise InvalidQuery(f"q must be at most {MAX_QUERY} characters, got {len(text):,}")
    return text or None


def matches(needle: str, model_name: str, team: str | None) -> bool:
    """Whether a board row's model name or team name, as the board shows them ("Anonymous" for an anonymous
    entry, never its team's name), holds the search, ignoring case."""
    needle = needle.casefold()
    return needle in model_name.casefold() or needle in (team if team is not None else "Anonymous").casefold()


def _ordered(rows: list, column: Column, order: str) -> list:
    """Entries and reference rows sorted by a column: rows without a value last, ties in ranking order."""
    present = [row for row in rows if row.value(column) is not None]
    missing = [row for row in rows if row.value(column) is None]
    present.sort(key=lambda row: row.value(column), reverse=order == "desc")  # stable, also reversed
    return present + missing


def interleave(entries: Sequence, references: Sequence, primary: Column | None) -> list:
    """Reference rows where their primary score falls among the ranked entries (last if they have none): the
    order of every view of a board, its exports and the models view."""
    rows: list = list(entries)
    if primary is None:
        return [*rows, *references]
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
    sealed_fraction: float | None = None  # a blind test's sealed part (its share of groups), if any
    # The board version of the last finished snapshot (None: none yet): a page served while a newer one is
    # being built changes when it is done, so it is part of what the page depends on (its ETag).
    snapshot_version: int | None = None
    opens_at: datetime | None = None  # the phase's bounds (services/catalog/phases.py)
    closes_at: datetime | None = None
    # The phase when the page was asked for: it changes with time alone, so it is part of the ETag and of the
    # keys the page is kept under.
    phase: phases.Phase | None = None


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
    task_config: str | None = None  # a configured type's config (catalog.task_of reads it)


# What a page shows of a benchmark and of each split: also what versions.catalog reads for the ETags.
BENCHMARK_FIELDS = (
    Benchmark.id,
    Benchmark.slug,
    Benchmark.name,
    Benchmark.description,
    Benchmark.paper_url,
    Benchmark.task_type,
)
SPLIT_FIELDS = (
    Split.id,
    Split.slug,
    Split.name,
    Split.hidden,
    Split.example_count,
    Split.board_version,
    Split.feedback,
    Split.revealed_at,
    Split.per_day,
    Split.per_month,
    Split.total,
    Split.rejected_per_day,
    Split.is_open,
)
# Built once: SQLAlchemy then reuses its compiled form and result metadata (a fresh select costs more to
# build than the query takes to run).
_BENCHMARK_QUERY = (
    select(
        *BENCHMARK_FIELDS,
        *SPLIT_FIELDS,
        Benchmark.default_split_id,
        Split.sealed_fraction,
        LeaderboardCache.version,
        Split.opens_at,
        Split.closes_at,
        LeaderboardCache.computed_at,
        Benchmark.task_config,  # set once, when the benchmark is added: no page's version depends on it
        Split.reveal_planned_at,
    )
    .outerjoin(Split, Split.benchmark_id == Benchmark.id)
    .outerjoin(LeaderboardCache, LeaderboardCache.split_id == Split.id)
    .where(Benchmark.slug == bindparam("slug"))
    .order_by(Split.position, Split.id)
)


def behind_marker(snapshot_version: int | None, built_at: datetime | None, board_version: int) -> int | None:
    """What a page depends on of its board's last finished snapshot: its version where workers build boards
    (a page served while the next one is built changes when that is done). In-process (JOB_QUEUE=inline) the
    reader builds an out-of-date board itself, and its page is at the board's version (nothing), except within
    the board's rebuild window (BOARD_REBUILD_SECONDS), when it is served the last board: its version then."""
    if not transport.inline():
        return snapshot_version
    if snapshot_version is None or built_at is None or snapshot_version >= board_version:
        return None
    return snapshot_version if built_lately(built_at) else None


def benchmark_info(slug: str) -> BenchmarkInfo:
    """The benchmark and its splits in one plain query; NotFound for an unknown slug."""
    rows = db.session.connection().execute(_BENCHMARK_QUERY, {"slug": slug}).all()
    if not rows:
        raise catalog.unknown_benchmark(slug)
    first = rows[0]
    now = utcnow()
    splits = tuple(
        SplitInfo(
            row[6],
            row[7],
            row[8],
            bool(row[9]),
            row[10],
            row[11] or 0,
            row[12],
            row[13],
            row[14],
            row[15],
            row[16],
            row[17],
            bool(row[18]),
            row[20],
            behind_marker(row[21], row[24], row[11] or 0),
            as_utc(row[22]) if row[22] is not None else None,
            as_utc(row[23]) if row[23] is not None else None,
            phases.phase_of(row[22], row[23], now, row[26] if row[13] is None else None),
        )
        for row in rows
        if row[6] is not None
    )
    return BenchmarkInfo(first[0], first[1], first[2], first[3] or "", first[4], first[5], splits, first[19], first[25])


def _given(chosen: str | Sequence[str] | None) -> tuple[str, ...] | None:
    values = (chosen,) if isinstance(chosen, str) else tuple(chosen or ())
    return tuple(value for value in values if value) or None


def _parse_selection(
    split: SplitInfo, benchmark: BenchmarkInfo, track: str | None, where: str | Sequence[str] | None, verified: bool
) -> tuple[tracks.Selection | None, list[tracks.TrackSpec]]:
    """The selection asked for (tracks.selection: BadSelection, a 400 naming the track or field at fault) and the
    benchmark's named tracks, kept per board version (a track's or field's change bumps it)."""
    written = tuple(_given(where) or ())
    key = (str(db.engine.url), split.id, split.board_version, track or None, written, verified)
    hit = _selections.get(key)
    if hit is not None:
        return hit
    found = (tracks.selection(benchmark.id, track, written, verified), tracks.specs(benchmark.id))
    return _selections.put(key, found)


_selections: LRU[tuple[tracks.Selection | None, list[tracks.TrackSpec]]] = LRU(256)


def parse_verified(verified: str | bool | None) -> bool:
    """?verified=: 1 (only verified entries), 0 or nothing (InvalidQuery for anything else)."""
    if isinstance(verified, bool):
        return verified
    if verified in (None, "", "0"):
        return False
    if verified == "1":
        return True
    raise InvalidQuery(f"verified must be 1 (only verified entries) or 0, got {verified!r}")


def _parse_view(view: str | None) -> str:
    if view in (None, ""):
        return "entries"
    if view not in VIEWS:
        raise InvalidQuery(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    return view


def board(
    benchmark_slug: str,
    split_slug: str | None = None,
    *,
    sort: str | None = None,
    order: str | None = None,
    page: str | int | None = None,
    view: str | None = None,
    chosen: str | Sequence[str] | None = None,
    paginate: bool = True,
    q: str | None = None,
    verified: str | bool | None = None,
    track: str | None = None,
    where: str | Sequence[str] | None = None,
) -> Board:
    """A leaderboard page: NotFound for unknown slugs, InvalidQuery (400) for bad sort, order, page, view,
    columns or search. `view="teams"` keeps each team's best entry (ranked among those); `chosen` names the
    columns; `paginate=False` puts every row on one page (exports); `q` keeps the entries whose model or
    team name holds it (`matches`), paged among themselves, each with its rank on the board asked for; `verified`
    ("1") keeps the verified entries alone, `track` a named track's entries, `where` ("field:value",
    "parameters<=1e9") those meeting each condition: ranked among themselves (a board of their own, never the
    whole board's ranks filtered; a 400 naming an unknown track or a field that cannot be filtered by).

    Once the split's snapshot is in memory this is one query (the benchmark and its splits).
    """
    begin_reading()
    benchmark = benchmark_info(benchmark_slug)
    split = _chosen_split(benchmark, benchmark_slug, split_slug)
    if split is None:
        return Board(benchmark, None, [], True)
    selection, named = _parse_selection(split, benchmark, track, where, parse_verified(verified))
    asked = _Asked(
        _parse_page(page), _parse_view(view), chosen, sort, order, paginate, search_text(q), selection, named
    )
    if asked.view == FINAL:
        _check_final(benchmark, split)
    if not visibility.scores_are_public(split):  # a held board stays held, its final view too
        return _held_board(benchmark, split, asked)
    return _public_board(benchmark, split, asked)


@dataclass(frozen=True)
class _Asked:
    """What the visitor asked of a board: the page and view (checked), the columns and sort (checked against
    the split's columns)."""

    page: int
    view: str
    chosen: str | Sequence[str] | None
    sort: str | None
    order: str | None
    paginate: bool
    q: str | None = None
    selection: tracks.Selection | None = None
    track_tabs: list[tracks.TrackSpec] = field(default_factory=list)


def _chosen_split(benchmark: BenchmarkInfo, benchmark_slug: str, split_slug: str | None) -> SplitInfo | None:
    """The split named (NotFound for an unknown slug), else the benchmark's default one (None: no split)."""
    if not split_slug:
        return default_split(benchmark)
    split = next((s for s in benchmark.splits if s.slug == split_slug), None)
    if split is None:
        raise catalog.unknown_split(benchmark_slug, split_slug, [s.slug for s in benchmark.splits])
    return split


def _check_final(benchmark: BenchmarkInfo, split: SplitInfo) -> None:
    """NotFound unless the split's closing time has passed (only then has it a final board)."""
    phase = split.phase or phases.phase_of(split.opens_at, split.closes_at)
    if phase.has_final_board:
        return
    where = f"{benchmark.name} {split.name}"
    if split.closes_at is None:
        raise NotFound(f"{where} has no final board (view=final): it has no closing time")
    raise NotFound(
        f"{where} has no final board (view=final) yet: uploads close at {phases.moment_text(split.closes_at)}"
    )


def _held_board(benchmark: BenchmarkInfo, split: SplitInfo, asked: _Asked) -> Board:
    """A board whose scores are not public yet: its columns and changelog, no rows, one page."""
    full = db.session.get_one(Split, split.id)
    available, defaults, examples = _columns_of(full)
    cols = choose_columns(available, defaults, asked.chosen)
    column, direction = _parse_sort(cols, asked.sort, asked.order)
    if asked.page > 1:
        raise InvalidQuery(f"page {asked.page} is past the last page (1)")
    return Board(
        benchmark,
        split,
        [],
        False,
        cols,
        sort=column,
        order=direction,
        view=asked.view,
        available=available,
        chosen=_given(asked.chosen),
        changelog=changelog(full),
        # The final view counts the entries as they stood at closing, as its board will show them.
        held=held_facts(split, as_utc(split.closes_at) if asked.view == FINAL and split.closes_at else None),
        q=asked.q,
        examples=examples,
        selection=asked.selection,
        track_tabs=asked.track_tabs,
    )


def _public_board(benchmark: BenchmarkInfo, split: SplitInfo, asked: _Asked) -> Board:
    """A board with its scores: one page of its snapshot's rows, in the order asked for."""
    snap, (available, defaults, examples) = _snapshot_and_columns(
        split, final=asked.view == FINAL, selection=asked.selection
    )
    cols = choose_columns(available, defaults, asked.chosen)
    column, direction = _parse_sort(cols, asked.sort, asked.order)
    number, shown_view, paginate = asked.page, asked.view, asked.paginate
    entries = snap.rows(shown_view)
    key = (
        str(db.engine.url),
        split.id,
        snap.version,
        # Served while the next snapshot is built: marked as updating, less the entries taken off the board since,
        # which change with every change of the board (two different sets of the same size included).
        snap.updating_since,
        split.board_version if snap.updating_since is not None else None,
        column.key if column else None,
        direction,
        number,
        shown_view,
        tuple(c.key for c in cols),
        paginate,
        split.closes_at if shown_view == FINAL else None,  # the final board's entries are those at closes_at
        asked.q,
        asked.selection.key if asked.selection else None,
        # A named track and its conditions written ad hoc keep the same entries, but their pages say and link apart.
        asked.selection.track if asked.selection else None,
        tuple(spec.name for spec in asked.track_tabs),
    )

    def arrange() -> tuple[list, int, list[Entry]]:
        needle = asked.q
        kept = entries if needle is None else [e for e in entries if matches(needle, e.model_name, e.team)]
        task = catalog.task_of(benchmark)
        shown, pages = _arrange(kept, snap.references, available, task, column, direction, number, paginate)
        return shown, pages, kept

    shown, pages, kept = _arranged.get_or_make(key, arrange)
    facts = (benchmark.slug, split.slug, split.name, split.hidden, split.example_count)
    return Board(
        benchmark,
        split,
        entries,
        True,
        cols,
        snap.references,
        shown,
        column,
        direction,
        number,
        pages,
        key + facts,
        shown_view,
        available,
        _given(asked.chosen),
        snap.changelog,
        snap,
        q=asked.q,
        matching=kept,
        examples=examples,
        selection=asked.selection,
        track_tabs=asked.track_tabs,
    )


def _snapshot_and_columns(
    split: SplitInfo, final: bool = False, selection: tracks.Selection | None = None
) -> tuple[Snapshot, _Columns]:
    """The split's snapshot (computed when not in memory; `final`: its final board's; `selection`: the board of
    the entries it keeps) and its available and default columns, with the examples its public figures count
    over."""
    if selection is not None:
        snap = selected_snapshot(db.session.get_one(Split, split.id), selection, final=final)
    elif final:
        snap = final_snapshot(db.session.get_one(Split, split.id))
    else:
        snap = memo_get(split.id, split.board_version) or snapshot(db.session.get_one(Split, split.id))
    found = _columns_memo.get((str(db.engine.url), split.id, snap.version)) or _columns_of(
        db.session.get_one(Split, split.id), snap.version
    )
    return snap, found


def _arrange(
    entries: list[Entry],
    references: list[ReferenceRow],
    available: list[Column],
    task: TaskType,
    column: Column | None,
    direction: str,
    number: int,
    paginate: bool,
) -> tuple[list, int]:
    """The rows in display order (the default ranking with the references between, or sorted by a column),
    and this page of them with the number of pages (every row on one page unless `paginate`)."""
    primary = primary_column(available, task)
    rows = (
        interleave(entries, references, primary)
        if column is None
        else _ordered([*entries, *references], column, direction)
    )
    return _paginate(rows, number) if paginate else (rows, 1)


# Rows in display order per board version, sort, page, view and search, and the entries the search keeps.
_arranged: LRU[tuple[list, int, list[Entry]]] = LRU(128)
# Every column a visitor may choose, the default ones, and the examples the split's public figures count over
# (its queried part's while only that is shown): a column's n is what its metric counts, which may be fewer.
_Columns = tuple[list[Column], list[Column], int]
_columns_memo: LRU[_Columns] = LRU(64)


def _columns_of(split: Split, version: int | None = None) -> _Columns:
    """Every column a visitor may choose and the default ones (kept per board version when given one)."""
    found = (available_columns(split), columns(split), visibility.examples_shown(split))
    if version is not None:
        _columns_memo.put((str(db.engine.url), split.id, version), found)
    return found


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
        metric = catalog.task_of(self.benchmark).primary_metric
        return None if self.best is None else self.best.scores.get("all", {}).get(metric)

    @property
    def metric_label(self) -> str:
        task = catalog.task_of(self.benchmark)
        return task.metric(task.primary_metric).label


def summaries() -> list[Summary]:
    begin_reading()
    benchmarks = list(db.session.scalars(select(Benchmark).order_by(Benchmark.name)))
    counts = {
        split_id: (count, latest)
        for split_id, count, latest in db.session.execute(
            select(Submission.split_id, func.count(), func.max(Submission.published_at))
            .where(Submission.status == "scored", Submission.published_at.is_not(None), Submission.hidden_at.is_(None))
            .group_by(Submission.split_id)
        )
    }
    result = []
    for benchmark in benchmarks:
        landing = default_split(benchmark)
        per_split = [counts[s.id] for s in benchmark.splits if s.id in counts]
        moments = [as_utc(latest) for _, latest in per_split if latest is not None]
        best = None
        if landing is not None and visibility.scores_are_public(landing):
            top = snapshot(landing).entries
            best = top[0] if top else None
        result.append(
            Summary(benchmark, landing, sum(count for count, _ in per_split), best, max(moments) if moments else None)
        )
    return result
