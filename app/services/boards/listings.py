"""Listings: benchmarks and boards for the JSON API (loaded eagerly so formatting a response issues no further
queries), a team's submissions a page at a time with what each shows its team, and where a published entry
sits on its board."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import joinedload, selectinload

from app.db import db
from app.models import Benchmark, Split, Submission, User
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots, leaderboards
from app.services.boards.board_snapshots import Entry
from app.services.boards.leaderboards import Listed
from app.services.errors import NotFound
from app.services.intake import submissions

SUBMISSIONS_PER_PAGE = 50


def benchmarks() -> list[Benchmark]:
    """Every benchmark with its splits (in their display order)."""
    return list(db.session.scalars(select(Benchmark).options(selectinload(Benchmark.splits)).order_by(Benchmark.name)))


def benchmark_list(limit: str | None = None, offset: str | None = None) -> Listed[Benchmark]:
    """The benchmarks in name order, the window asked for (InvalidQuery naming a bad limit or offset)."""
    window = leaderboards.window(limit, offset)
    found = benchmarks()  # a handful: counted and cut here
    return Listed(window.of(found), len(found), window)


def leaderboard(
    benchmark_slug: str,
    split_slug: str | None,
    view: str | None = None,
    *,
    q: str | None = None,
    limit: str | None = None,
    offset: str | None = None,
    verified: str | None = None,
    track: str | None = None,
    where: Sequence[str] | None = None,
) -> tuple[leaderboards.Board, Listed[Entry]]:
    """A split's ranked published entries, every one or each team's best, those whose model or team name
    holds `q`, and the window asked for of them; each entry keeps its rank on the board asked for (NotFound for
    unknown slugs, InvalidQuery for an unknown view or a bad q, limit or offset); `verified` "1": the verified
    entries alone, `track` a named track's and `where` those meeting each condition, ranked among themselves
    (leaderboards.board). Without a split: the benchmark's landing split, as on its page."""
    window = leaderboards.window(limit, offset)
    if split_slug is not None:
        catalog.get_split(benchmark_slug, split_slug)  # NotFound names the benchmark or the split
    board = leaderboards.board(
        benchmark_slug, split_slug, view=view, paginate=False, q=q, verified=verified, track=track, where=where
    )
    if board.split is None:
        raise NotFound(f"benchmark {benchmark_slug!r} has no splits yet")
    found = board.found
    return board, Listed(window.of(found), len(found), window)


def submission_list(
    user: User, q: str | None = None, limit: str | None = None, offset: str | None = None
) -> Listed[Submission]:
    """The submissions of every team the user belongs to, newest first, those whose model name or description
    holds `q` (ignoring case: SQL's ILIKE, which folds ASCII letters alone on SQLite), the window asked for
    (InvalidQuery naming a bad q, limit or offset). One query counts them and one reads the window."""
    window = leaderboards.window(limit, offset)
    needle = leaderboards.search_text(q)
    team_ids = [membership.team_id for membership in user.memberships]
    if not team_ids:
        return Listed([], 0, window)
    conditions: list[ColumnElement[bool]] = [Submission.team_id.in_(team_ids)]
    if needle is not None:
        conditions.append(_holds(needle))
    total = db.session.scalar(select(func.count()).select_from(Submission).where(*conditions)) or 0
    query = (
        select(Submission)
        .where(*conditions)
        .options(joinedload(Submission.split).joinedload(Split.benchmark), joinedload(Submission.team))
        .order_by(Submission.id.desc())
        .offset(window.offset)
    )
    if window.limit is not None:
        query = query.limit(window.limit)
    return Listed(list(db.session.scalars(query)), total, window)


def _holds(needle: str) -> ColumnElement[bool]:
    """A submission's search (?q=, API and page alike): its model name or description holds the text, ignoring
    case (SQL's ILIKE, which folds ASCII letters alone on SQLite)."""
    return Submission.model_name.icontains(needle, autoescape=True) | Submission.description.icontains(
        needle, autoescape=True
    )


# --- a team's submissions ------------------------------------------------------------------------------


@dataclass
class SubmissionRow:
    submission: Submission
    metric: str | None  # the split's primary metric
    score: float | None  # its figure as the team may see it (None: held, rejected, or no figure yet)
    held: bool  # scored, and the split's feedback policy withholds its figure
    verdict: submissions.Verdict


@dataclass
class SubmissionList:
    rows: list[SubmissionRow]
    page: int
    pages: int
    total: int  # submissions matching the filter, on every page
    benchmark: str | None  # the filter as applied (slugs)
    split: str | None
    q: str | None  # the search as applied: model name or description holds it
    benchmarks: list[Benchmark]  # what the filter offers

    @property
    def split_slugs(self) -> list[str]:
        """Every split slug once ("dev" of every benchmark is one choice: without a benchmark, all of them)."""
        return list(dict.fromkeys(split.slug for benchmark in self.benchmarks for split in benchmark.splits))


def _page_number(raw: str | int | None) -> int:
    if raw in (None, ""):
        return 1
    try:
        number = int(raw)
    except (TypeError, ValueError):
        raise leaderboards.InvalidQuery(f"page must be a whole number of at least 1, got {raw!r}") from None
    if number < 1:
        raise leaderboards.InvalidQuery(f"page must be a whole number of at least 1, got {raw!r}")
    return number


def _filtered_splits(known: list[Benchmark], benchmark: str | None, split: str | None) -> list[int] | None:
    """Ids of the splits the filter keeps (None: no filter); InvalidQuery (400) naming an unknown slug."""
    if not benchmark and not split:
        return None
    chosen = known
    if benchmark:
        chosen = [b for b in known if b.slug == benchmark]
        if not chosen:
            raise leaderboards.InvalidQuery(f"benchmark: there is no benchmark {benchmark!r}")
    ids = [s.id for b in chosen for s in b.splits if not split or s.slug == split]
    if not ids:
        where = f" of benchmark {benchmark!r}" if benchmark else ""
        raise leaderboards.InvalidQuery(f"split: there is no split {split!r}{where}")
    return ids


def team_submissions(
    user: User,
    benchmark: str | None = None,
    split: str | None = None,
    page: str | int | None = None,
    q: str | None = None,
) -> SubmissionList:
    """The submissions of the user's teams, newest first, SUBMISSIONS_PER_PAGE a page, optionally on one
    benchmark or split and those whose model name or description holds `q` (InvalidQuery for an unknown slug,
    a bad q or a bad page). One query counts them and one reads the page (LIMIT, in the order of the
    (team_id, id) index), however many the teams have sent."""
    number = _page_number(page)
    needle = leaderboards.search_text(q)
    known = benchmarks()
    benchmark, split = (benchmark or "").strip() or None, (split or "").strip() or None
    split_ids = _filtered_splits(known, benchmark, split)
    team_ids = [membership.team_id for membership in user.memberships]
    conditions: list[ColumnElement[bool]] = [Submission.team_id.in_(team_ids)]
    if split_ids is not None:
        conditions.append(Submission.split_id.in_(split_ids))
    if needle is not None:
        conditions.append(_holds(needle))
    total = db.session.scalar(select(func.count()).select_from(Submission).where(*conditions)) if team_ids else 0
    pages = max(1, math.ceil((total or 0) / SUBMISSIONS_PER_PAGE))
    if number > pages:
        raise leaderboards.InvalidQuery(f"page {number} is past the last page ({pages})")
    found: list[Submission] = []
    if team_ids:
        found = list(
            db.session.scalars(
                select(Submission)
                .where(*conditions)
                .options(
                    joinedload(Submission.split).joinedload(Split.benchmark),
                    joinedload(Submission.team),
                    selectinload(Submission.scores),
                )
                .order_by(Submission.id.desc())
                .limit(SUBMISSIONS_PER_PAGE)
                .offset((number - 1) * SUBMISSIONS_PER_PAGE)
            )
        )
    return SubmissionList(
        [_row(submission) for submission in found], number, pages, total or 0, benchmark, split, needle, known
    )


def _row(submission: Submission) -> SubmissionRow:
    """One line of the list: the figure the team may see now (visibility decides), the split's primary metric."""
    primary = catalog.task_of(submission.split.benchmark).primary_metric
    shown = visibility.released_scores(submission)
    score = (shown or {}).get("all", {}).get(primary)
    held = submission.status == "scored" and score is None
    return SubmissionRow(submission, primary, score, held, submissions.verdict(submission, shown))


# --- where a published entry sits -----------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where a published entry is on its split's board: its row in the default order, or why it is not shown."""

    benchmark: str  # slugs, for the board's address
    split: str
    split_name: str
    row: int | None  # 1-based row in the board's default order; None while its last snapshot does not hold it
    rows: int  # entries on the board
    page: int  # the board page that holds the row
    held: bool  # a blind test's entry that waits for the reveal
    hidden: bool  # hidden by a maintainer
    rebuild_seconds: float  # BOARD_REBUILD_SECONDS: how soon a board that is being updated may be rebuilt

    @property
    def message(self) -> str:
        board = f"the {self.split_name} board"
        if self.hidden:
            return f"Published, but a maintainer has hidden this entry from {board}."
        if self.held:
            return f"Published: held until the reveal; the entry appears on {board} once the maintainers reveal it."
        if self.row is None:
            # Not on the last snapshot: the change that put it on the board queued the board's job, to run a rebuild
            # window after its last build (in-process, the board's first reader after that window builds it).
            window = f" (at most once every {self.rebuild_seconds:g} seconds)" if self.rebuild_seconds > 0 else ""
            return f"Published; {board} is being updated and shows the entry once it is rebuilt{window}."
        return f"Published: row {self.row:,} of {self.rows:,} on {board}."


def placement(submission: Submission) -> Placement:
    """Where a published submission is on its board's last stored snapshot (board_snapshots.last_entries): a read,
    so a publish is answered without building the board; an entry that snapshot does not hold yet has no row."""
    split = submission.split
    held = not (visibility.scores_are_public(split) and visibility.shown_on_board(split, submission.release_policy))
    entries = [] if held else board_snapshots.last_entries(split)
    # Its row as the board lists them now: a snapshot's position, less entries taken off the board since it was built.
    row = next((i for i, e in enumerate(entries, start=1) if e.submission_id == submission.id), None)
    page = 1 if row is None else (row - 1) // leaderboards.PER_PAGE + 1
    return Placement(
        split.benchmark.slug,
        split.slug,
        split.name,
        row,
        len(entries),
        page,
        held,
        submission.hidden_at is not None,
        board_snapshots.rebuild_seconds(),
    )
