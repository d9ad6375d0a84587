"""Read-only listings for the JSON API, loaded eagerly so formatting a response issues no further queries."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app.db import db
from app.models import Benchmark, Split
from app.services import catalog, leaderboards
from app.services.errors import NotFound


def benchmarks() -> list[Benchmark]:
    """Every benchmark with its splits (in their display order)."""
    return list(
        db.session.scalars(select(Benchmark).options(selectinload(Benchmark.splits)).order_by(Benchmark.name))
    )


def leaderboard(benchmark_slug: str, split_slug: str | None) -> tuple[Split, bool, list[leaderboards.Entry]]:
    """A split's ranked published entries and whether its scores are public (NotFound for unknown slugs).
    Without a split: the benchmark's default one, as on its page."""
    if split_slug is None:
        split = leaderboards.default_split(catalog.get_benchmark(benchmark_slug))
        if split is None:
            raise NotFound(f"benchmark {benchmark_slug!r} has no splits yet")
    else:
        split = catalog.get_split(benchmark_slug, split_slug)
    return split, leaderboards.scores_are_public(split), leaderboards.leaderboard(split)
