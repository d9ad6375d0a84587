"""A team's public page, /teams/<slug>: its name, the members who chose to be named, and its entries as the
public boards show them.

Nothing here is decided anew: the entries are the team's rows of each split's board (board_snapshots.leaderboard,
which holds a blind test's board until its reveal by visibility.scores_are_public, and shows only what the board
admits), so an entry unpublished, hidden by a maintainer, withdrawn, published anonymously or held never appears,
and every figure is the one its board shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import contains_eager

from app.db import begin_reading, db
from app.models import Benchmark, Split, Submission, Team
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.boards.board_snapshots import Entry
from app.services.boards.leaderboards import Column, columns
from app.services.catalog import entry_fields
from app.services.catalog.entry_fields import FieldSpec
from app.services.people import teams


@dataclass(frozen=True)
class TeamBoard:
    """The team's entries on one split's public board, in the board's ranking order."""

    benchmark_slug: str
    benchmark_name: str
    split_slug: str
    split_name: str
    # The board's default columns, as the board shows them (the family's order, its subsets, each metric's n).
    columns: tuple[Column, ...]
    primary_metric: str
    entries: tuple[Entry, ...]
    board_entries: int  # entries on the whole board (a rank reads "3 of 40")
    field_columns: tuple[FieldSpec, ...] = ()  # the entry fields the board shows as columns, after the scores

    @property
    def primary_label(self) -> str:
        return next(c.label for c in self.columns if c.subset == "all" and c.metric == self.primary_metric)

    def points(self) -> list[tuple[datetime, float, Entry]]:
        """(submitted at, primary score, entry) of every entry with a primary score on the whole split."""
        return [
            (entry.submitted_at, entry.scores["all"][self.primary_metric], entry)
            for entry in self.entries
            if self.primary_metric in entry.scores.get("all", {})
        ]


@dataclass(frozen=True)
class TeamPage:
    name: str
    slug: str
    members: teams.PublicMembers
    boards: tuple[TeamBoard, ...]  # by benchmark name, then the splits' order

    @property
    def entries(self) -> int:
        return sum(len(board.entries) for board in self.boards)


def _candidate_splits(team: Team) -> list[Split]:
    """Splits where the team has a published, visible entry under its own name (the boards decide the rest)."""
    with_entries = (
        select(Submission.split_id)
        .where(
            Submission.team_id == team.id,
            Submission.status == "scored",
            Submission.published_at.is_not(None),
            Submission.hidden_at.is_(None),
            Submission.anonymous.is_(False),
        )
        .distinct()
    )
    return list(
        db.session.scalars(
            select(Split)
            .join(Split.benchmark)
            .options(contains_eager(Split.benchmark))
            .where(Split.id.in_(with_entries))
            .order_by(Benchmark.name, Split.position, Split.id)
        )
    )


def team_page(slug: str) -> TeamPage:
    """The public page of the team with this slug (NotFound for any other)."""
    begin_reading()
    team = teams.get_team_by_slug(slug)
    key = f"team:{team.id}"
    boards = []
    for split in _candidate_splits(team):
        board = board_snapshots.leaderboard(split)  # empty while the split's scores are held
        mine = tuple(entry for entry in board if entry.team_key == key and entry.team is not None)
        if not mine:
            continue
        task = catalog.task_of(split.benchmark)
        boards.append(
            TeamBoard(
                split.benchmark.slug,
                split.benchmark.name,
                split.slug,
                split.name,
                tuple(columns(split)),
                task.primary_metric,
                mine,
                len(board),
                tuple(spec for spec in entry_fields.specs(split.benchmark_id) if spec.column),
            )
        )
    return TeamPage(team.name, team.slug, teams.public_members(team), tuple(boards))
