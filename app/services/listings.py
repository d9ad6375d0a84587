"""Read-only listings for the JSON API, loaded eagerly so formatting a response issues no further queries."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app.db import db
from app.models import Benchmark, Split
from app.services import catalog, leaderboards


def benchmarks() -> list[Benchmark]:
    """Every benchmark with its splits (in their display order)."""
    return list(
        db.session.scalars(select(Benchmark).options(selectinload(Benchmark.splits)).order_by(Benchmark.name))
    )


def leaderboard(benchmark_slug: str, split_slug: str) -> tuple[Split, bool, list[leaderboards.Entry]]:
    """A split's ranked published entries and whether its scores are public (NotFound for unknown slugs)."""
    split = catalog.get_split(benchmark_slug, split_slug)
    return split, leaderboards.scores_are_public(split), leaderboards.leaderboard(split)
