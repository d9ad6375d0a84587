"""The models view: one row per model across a benchmark's splits, as the NLVR/NLVR2 papers and boards show.

A model is a team plus its model name (trimmed, case-insensitive); each anonymous entry is its own model.
Each row holds the model's latest published entry on each split whose scores are public: the primary metric
of every split, and every default column of the ranking split (the benchmark's landing split, or the first
split whose scores are public when the landing split's are held). Rows are ordered by the ranking split's
board order and ranked among the models' latest entries there, a board of its own (its own N, its own pair
decisions: Entry.model_rank); models without an entry there follow, by name. Reference rows
(human performance, baselines) of the public splits are rows too, one per name, unranked, standing where their
score on the ranking split's primary metric falls, as on the boards. Everything is read from the split boards'
snapshots (board_snapshots.snapshot), so it agrees with them number for number.

A track (?track=, ?where=, ?verified=1, tracks.selection) reads each split's board of the entries it keeps
(board_snapshots.selected_snapshot) instead: the models those entries belong to, ranked among themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from app.db import begin_reading, db
from app.evaluation import rank_method
from app.models import Split
from app.names import name_key
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots, leaderboards
from app.services.boards.board_snapshots import Entry, ReferenceRow, Snapshot
from app.services.boards.leaderboards import BenchmarkInfo, Board, Column, SplitInfo
from app.services.catalog import entry_fields, tracks


@dataclass(frozen=True)
class ModelColumn(Column):
    """A board column of one split: its key names the split too ("test-p/all:accuracy")."""

    split_slug: str = ""

    @property
    def key(self) -> str:
        return f"{self.split_slug}/{self.subset}:{self.metric}"

    @property
    def board_key(self) -> str:
        return f"{self.subset}:{self.metric}"


def _on_split(column: Column, label: str, split_slug: str) -> ModelColumn:
    """A board's column as a models-view column of its split."""
    return ModelColumn(
        column.subset,
        column.metric,
        label,
        column.size,
        column.decimals,
        column.unit,
        column.direction,
        column.ranks,
        None,  # the split's name leads the label: no short form of its own
        column.counts,
        split_slug=split_slug,
    )


@dataclass(frozen=True)
class Cell:
    submission_id: int
    value: float | None
    low: float | None
    high: float | None


@dataclass
class ModelRow:
    """One model: its latest published entry per split (split slug -> Entry)."""

    model_key: str
    model_name: str
    team: str | None
    latest: dict[str, Entry] = field(default_factory=dict)
    rank: int | None = None
    rank_low: int | None = None
    rank_high: int | None = None

    kind = "entry"

    def entry(self, column: ModelColumn) -> Entry | None:
        return self.latest.get(column.split_slug)

    @property
    def team_slug(self) -> str | None:
        """The team's public page (None for an anonymous entry): a model's entries are all its team's."""
        return self.newest.team_slug if self.team is not None else None

    def cell(self, column: ModelColumn) -> Cell | None:
        entry = self.entry(column)
        if entry is None:
            return None
        plain = Column(column.subset, column.metric, column.label)
        low, high = entry.interval(plain)
        return Cell(entry.submission_id, entry.value(plain), low, high)

    def value(self, column: ModelColumn) -> float | None:
        cell = self.cell(column)
        return None if cell is None else cell.value

    def interval(self, column: ModelColumn) -> tuple[float | None, float | None]:
        cell = self.cell(column)
        return (None, None) if cell is None else (cell.low, cell.high)

    @property
    def newest(self) -> Entry:
        return max(self.latest.values(), key=lambda e: (e.submitted_at, e.submission_id))

    @property
    def submitted_at(self) -> datetime:
        return self.newest.submitted_at

    @property
    def paper_url(self) -> str | None:
        return self.newest.paper_url

    @property
    def fields(self) -> dict[str, bool | int | str]:
        """The fact sheet of its latest entry (what its team states of the model last), as its links are."""
        return self.newest.fields

    @property
    def verified(self) -> dict[str, str | None] | None:
        """Its latest entry's verified mark (a maintainer checked that entry's code and weights)."""
        return self.newest.verified

    @property
    def code_url(self) -> str | None:
        return self.newest.code_url

    @property
    def rank_interval(self) -> str:
        if self.rank_low is None or self.rank_high is None:
            return ""
        return str(self.rank_low) if self.rank_low == self.rank_high else f"{self.rank_low}–{self.rank_high}"


@dataclass
class ReferenceModelRow:
    """A reference row across splits: the public splits' reference rows of one name (as names are compared)."""

    name: str
    by_split: dict[str, ReferenceRow] = field(default_factory=dict)  # split slug -> that split's row

    kind = "reference"
    rank = rank_low = rank_high = None  # never ranked

    def value(self, column: ModelColumn) -> float | None:
        row = self.by_split.get(column.split_slug)
        return None if row is None else row.scores.get(column.subset, {}).get(column.metric)

    def interval(self, column: ModelColumn) -> tuple[float | None, float | None]:
        return (None, None)

    @property
    def _first(self) -> ReferenceRow:
        return next(iter(self.by_split.values()))

    @property
    def source_url(self) -> str | None:
        return self._first.source_url

    @property
    def published_on(self) -> date | None:
        """The latest date its rows give (a paper's figures on several splits share one)."""
        days = [row.published_on for row in self.by_split.values() if row.published_on is not None]
        return max(days) if days else None


@dataclass(frozen=True)
class _Title:
    slug: str
    name: str


@dataclass
class ModelsTable:
    benchmark: BenchmarkInfo
    splits: list[SplitInfo]  # the splits whose scores are public, in display order
    ranking_split: SplitInfo | None
    columns: list[ModelColumn]
    entries: list[ModelRow]  # ranked (named like a board's entries, so the exports take either)
    held: list[SplitInfo] = field(default_factory=list)  # splits whose scores are held
    references: list[ReferenceModelRow] = field(default_factory=list)
    rows: list = field(default_factory=list)  # entries and reference rows in display order (references in place)
    primary: ModelColumn | None = None  # the ranking split's primary column: what the rows are ordered by
    # The smallest difference in points the models' own pair decisions detect with 80% power (None: fewer than 2).
    resolution: float | None = None
    # ?track=, ?where=, ?verified=1: the models of the entries a selection keeps, ranked among themselves; None: all.
    selection: tracks.Selection | None = None
    track_tabs: list[tracks.TrackSpec] = field(default_factory=list)  # the benchmark's named tracks
    field_specs: tuple[entry_fields.FieldSpec, ...] = ()  # the benchmark's entry fields

    @property
    def field_columns(self) -> list[entry_fields.FieldSpec]:
        """The entry fields shown as columns, as on a board."""
        return [spec for spec in self.field_specs if spec.column]

    @property
    def selection_words(self) -> str:
        """What the selection keeps, as the page says it ("" for every entry)."""
        return "" if self.selection is None else self.selection.words(self.field_specs)

    selection_params = Board.selection_params  # the query parameters that ask for the same selection
    verified_only = Board.verified_only

    @property
    def ranked_models(self) -> int:
        return sum(1 for row in self.entries if row.rank is not None)

    @property
    def resolution_text(self) -> str | None:
        value = None if self.resolution is None else round(float(self.resolution), 1)
        return rank_method.resolution_text(value, self.ranked_models)

    @property
    def split(self) -> _Title:
        """What an export's title and label name in place of a split."""
        return _Title("models", "models across splits")

    best = Board.best  # each column's best value, as on a board (shown bold)
    is_best = Board.is_best


def models_table(
    benchmark_slug: str,
    *,
    track: str | None = None,
    where: str | Sequence[str] | None = None,
    verified: str | bool | None = None,
) -> ModelsTable:
    """NotFound for an unknown benchmark; BadSelection (400) naming an unknown track or a field that cannot be
    filtered by, InvalidQuery for a bad `verified`. With a selection, the models of the entries it keeps alone."""
    begin_reading()
    benchmark = leaderboards.benchmark_info(benchmark_slug)
    selection = tracks.selection(benchmark.id, track, where, leaderboards.parse_verified(verified))
    task = catalog.task_of(benchmark)
    public = [split for split in benchmark.splits if visibility.scores_are_public(split)]
    held = [split for split in benchmark.splits if not visibility.scores_are_public(split)]
    landing = leaderboards.default_split(benchmark)
    ranking = landing if landing in public else (public[0] if public else None)
    snapshots = {split.slug: _split_snapshot(split, selection) for split in public}

    rows = _model_rows(public, snapshots)
    columns = _model_columns(task, public, ranking)

    def order(row: ModelRow):
        entry = row.latest.get(ranking.slug) if ranking else None
        if entry is None:
            return (1, 0, row.model_name.casefold(), row.model_key)
        return (0, entry.position, "", "")

    ranked = sorted(rows.values(), key=order)
    for row in ranked:
        latest = row.latest.get(ranking.slug) if ranking else None
        if latest is not None:  # ranked among the models' latest entries: a board of its own (board_snapshots)
            row.rank, row.rank_low, row.rank_high = latest.model_rank, latest.model_rank_low, latest.model_rank_high
    references = _reference_rows(public, snapshots)
    primary = next((c for c in columns if ranking is not None and c.split_slug == ranking.slug), None)
    shown = leaderboards.interleave(ranked, references, primary)
    resolution = snapshots[ranking.slug].resolutions.get("models") if ranking else None
    return ModelsTable(
        benchmark,
        public,
        ranking,
        columns,
        ranked,
        held,
        references,
        shown,
        primary,
        resolution,
        selection,
        tracks.specs(benchmark.id),
        tuple(entry_fields.specs(benchmark.id)),
    )


def _split_snapshot(split: SplitInfo, selection: tracks.Selection | None) -> Snapshot:
    """A public split's board: of every entry, or of those the selection keeps, ranked among themselves."""
    full = db.session.get_one(Split, split.id)
    return board_snapshots.snapshot(full) if selection is None else board_snapshots.selected_snapshot(full, selection)


def _reference_rows(public: list[SplitInfo], snapshots: dict[str, Snapshot]) -> list[ReferenceModelRow]:
    """A row a reference name, with its reference row on each public split, in first-seen order."""
    rows: dict[str, ReferenceModelRow] = {}
    for split in public:
        for reference in snapshots[split.slug].references:
            row = rows.setdefault(name_key(reference.name), ReferenceModelRow(reference.name))
            row.by_split.setdefault(split.slug, reference)
    return list(rows.values())


def _model_rows(public: list[SplitInfo], snapshots: dict[str, Snapshot]) -> dict[str, ModelRow]:
    """A row a model (team and model name), with its latest entry on each public split, in first-seen order."""
    rows: dict[str, ModelRow] = {}
    for split in public:
        for entry in snapshots[split.slug].entries:
            row = rows.setdefault(entry.model_key, ModelRow(entry.model_key, entry.model_name, entry.team))
            current = row.latest.get(split.slug)
            if current is None or (entry.submitted_at, entry.submission_id) > (
                current.submitted_at,
                current.submission_id,
            ):
                row.latest[split.slug] = entry
    for row in rows.values():  # the name as the team wrote it last
        row.model_name = row.newest.model_name
    return rows


def _model_columns(task, public: list[SplitInfo], ranking: SplitInfo | None) -> list[ModelColumn]:
    """Each public split's primary metric, then the ranking split's other columns: labels, order, n and decimals
    as each split's board has them (leaderboards.available_columns, from the family's declaration)."""
    columns = []
    for split in public:
        board_columns = leaderboards.available_columns(db.session.get_one(Split, split.id))
        primary = leaderboards.primary_column(board_columns, task)
        assert primary is not None  # every family's primary metric is a column of the whole split
        label = primary.label.lower() if primary.label in ("Accuracy", "Consistency") else primary.label
        columns.append(_on_split(primary, f"{split.name} {label}", split.slug))
    if ranking is not None:
        for column in leaderboards.columns(db.session.get_one(Split, ranking.id)):
            if column.subset == "all" and column.metric == task.primary_metric:
                continue
            columns.append(_on_split(column, f"{ranking.name} {column.label}", ranking.slug))
    return columns
