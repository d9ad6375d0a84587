"""What a split's board can tell apart: the resolution a board of N entries would have, for planning a split
(`flask splits power`). The figure is the one every board prints under its table (statistics.resolution), for a
board of the asked size whose pairs are all still undecided (Holm's first threshold: the most a new board asks).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.db import begin_reading
from app.evaluation import statistics
from app.services import catalog
from app.services.blind_test import integrity, visibility
from app.services.boards import board_snapshots
from app.services.catalog import label_files
from app.services.errors import InvalidInput

ASSUMED_DISCORDANCE = 0.25  # two models disagree on a quarter of the units: typical of close entries
MAX_ENTRIES = 10**9  # far past any board (past ~10^154 entries, the pairs overflow a float)


@dataclass(frozen=True)
class Plan:
    benchmark: str
    split: str
    entries: int
    units: int
    spread: float
    measured_on: int | None  # the entries of the current board the spread was measured on (None: assumed)
    discordance: float | None  # the share of units two entries disagree on, where given or assumed
    resolution: float

    @property
    def pairs(self) -> int:
        return self.entries * (self.entries - 1) // 2


def plan(benchmark_slug: str, split_slug: str, entries: int, discordance: float | None = None) -> Plan:
    """The smallest difference in points a board of `entries` entries on the split detects with 80% power.
    The spread of a pair's difference per unit: from `discordance` when given (its square root, as McNemar's
    test sees it), else measured between the current board's neighbours, else ASSUMED_DISCORDANCE."""
    if entries < 2:
        raise InvalidInput("--entries: a board needs at least 2 entries to tell any apart")
    if entries > MAX_ENTRIES:
        raise InvalidInput(f"--entries: at most {MAX_ENTRIES:,} (a board's pairs are counted in floating point)")
    if discordance is not None and not 0.0 < discordance <= 1.0:
        raise InvalidInput("--discordance: a share of the units, greater than 0 and at most 1")
    begin_reading()
    split = catalog.get_split(benchmark_slug, split_slug)
    task = catalog.task_of(split.benchmark)
    gold = label_files.load_gold(split)
    counted = integrity.resolution(task, gold, {}, "all", task.primary_metric)
    units = counted[0] if counted else split.example_count
    measured_on, spread = None, None
    if discordance is None and visibility.scores_are_public(split):
        snapshot = board_snapshots.snapshot(split)
        if len(snapshot.entries) >= 2:
            spread, measured_on = snapshot.spreads.get("entries"), len(snapshot.entries)
    if spread is None:
        discordance = ASSUMED_DISCORDANCE if discordance is None else discordance
        spread = discordance**0.5
    # 0/1 units (McNemar) are floored as on the board (statistics.resolution); VQA's points are not.
    figure = statistics.resolution(units, entries, 0, spread, judgements=task.unit_points(gold) <= 1)
    assert figure is not None  # two entries or more, units and a spread
    return Plan(split.benchmark.slug, split.slug, entries, units, spread, measured_on, discordance, figure)
