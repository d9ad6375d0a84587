"""A demo benchmark as plain data: what ``make run``'s demo creates for a family, written in the family's folder
(``<family>/demo.py``, ``BENCHMARKS``) and turned into rows by app/services/maintenance/demo.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# A file made beside a split's synthetic gold file, from that file and the split's seed (the family's own).
SideFile = Callable[[bytes, int], bytes]


@dataclass(frozen=True)
class DemoSplit:
    slug: str
    name: str
    size: int  # examples of its synthetic gold file
    hidden: bool = False
    annotations: SideFile | None = None  # its category annotations (NLVR2: 100 sentences')
    choices: SideFile | None = None  # its official choices file (GQA: validity and plausibility on the board)


@dataclass(frozen=True)
class DemoBenchmark:
    slug: str
    task: str  # the registered task type's name
    name: str
    description: str
    splits: tuple[DemoSplit, ...]
    subset_field: str | None = None
    sweep: bool = False  # Sweep Lab publishes its whole sweep here
