"""Read-only listings for the JSON API, loaded eagerly so formatting a response issues no further queries."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app.db import db
from app.models import Benchmark
from app.services import catalog
from app.services.boards import leaderboards
from app.services.errors import NotFound


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
