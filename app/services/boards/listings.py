"""Listings: benchmarks and boards for the JSON API (loaded eagerly so formatting a response issues no further
queries), and where a published entry sits on its board."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app.db import db
from app.models import Benchmark, Submission, User
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots, leaderboards
from app.services.errors import NotFound
from app.services.intake import submissions


def benchmarks() -> list[Benchmark]:
    """Every benchmark with its splits (in their display order)."""
    return list(db.session.scalars(select(Benchmark).options(selectinload(Benchmark.splits)).order_by(Benchmark.name)))


def leaderboard(benchmark_slug: str, split_slug: str | None, view: str | None = None) -> leaderboards.Board:
    """A split's ranked published entries, every one or each team's best (NotFound for unknown slugs,
    InvalidQuery for an unknown view). Without a split: the benchmark's landing split, as on its page."""
    if split_slug is not None:
        catalog.get_split(benchmark_slug, split_slug)  # NotFound names the benchmark or the split
    board = leaderboards.board(benchmark_slug, split_slug, view=view, paginate=False)
    if board.split is None:
        raise NotFound(f"benchmark {benchmark_slug!r} has no splits yet")
    return board


# --- publishing, and where the entry then sits -----------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where a published entry is on its split's board: its row in the default order, or why it is not shown."""

    benchmark: str  # slugs, for the board's address
    split: str
    split_name: str
    row: int | None  # 1-based row in the board's default order; None while it is not on the board
    rows: int  # entries on the board
    page: int  # the board page that holds the row
    held: bool  # a blind test's entry that waits for the reveal
    hidden: bool  # hidden by a maintainer

    @property
    def message(self) -> str:
        board = f"the {self.split_name} board"
        if self.hidden:
            return f"Published, but a maintainer has hidden this entry from {board}."
        if self.held:
            return f"Published: held until the reveal; {board} shows no scores of this blind test before it."
        if self.row is None:
            return f"Published; it will appear on {board} shortly."
        return f"Published: row {self.row:,} of {self.rows:,} on {board}."


def placement(submission: Submission) -> Placement:
    """Where a published submission is on its board now (the board's snapshot, computed once per change)."""
    split = submission.split
    held = not (visibility.scores_are_public(split) and visibility.shown_on_board(split, submission.release_policy))
    entries = [] if held else board_snapshots.leaderboard(split)
    entry = next((e for e in entries if e.submission_id == submission.id), None)
    row = entry.position if entry is not None else None
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
    )


def publish(
    user: User,
    submission_id: int,
    description: str | None = None,
    paper_url: str | None = None,
    code_url: str | None = None,
) -> tuple[Submission, Placement]:
    """Publish a submission (submissions.publish: its checks, its transaction), then say where it now is."""
    submission = submissions.publish(user, submission_id, description, paper_url, code_url)
    return submission, placement(submission)
