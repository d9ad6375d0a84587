"""Task families, one folder each, found by the registry without a list to edit.

A folder ``app/evaluation/tasks/<family>/`` is a family when it holds ``family.py``: its registered TaskType
subclasses (``@register``) are the family's task types. Beside it: ``formats.py`` (its gold and prediction
files), ``synthetic.py`` (synthetic files of its shape) and ``demo.py`` (``BENCHMARKS``, its demo benchmarks as
plain data). The modules beside the folders are what every family shares: ``base`` (the interface and the
registry), ``synthetic_files`` (SyntheticOptions and the helpers of synthetic files), ``demo`` (DemoBenchmark).
Importing this package imports every family folder (``discover``); the app lists the task types by their
``list_position``, and the demo benchmarks in that order.

May import: app.evaluation.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

from .base import TASK_TYPES, LabelVotes, Outcomes, Scores, TakesChoices, TaskType, get_task, read_gold, register
from .demo import DemoBenchmark, DemoSplit
from .synthetic_files import SyntheticOptions

_DEMO_BENCHMARKS: dict[str, DemoBenchmark] = {}  # by slug, from every family's demo.py


def discover() -> None:
    """Import every family folder on this package's path (its family.py registers its task types, its demo.py
    names its demo benchmarks), then put the registry in the order the app lists the families. Idempotent: a
    folder already imported is not imported again, and a new one (a test's toy family) is added."""
    for found in pkgutil.iter_modules(__path__):
        if not found.ispkg or importlib.util.find_spec(f"{__name__}.{found.name}.family") is None:
            continue  # a shared module (base, demo, ...), not a family
        importlib.import_module(f"{__name__}.{found.name}.family")
        if importlib.util.find_spec(f"{__name__}.{found.name}.demo") is not None:
            demo = importlib.import_module(f"{__name__}.{found.name}.demo")
            _DEMO_BENCHMARKS.update((spec.slug, spec) for spec in demo.BENCHMARKS)
    ordered = sorted(TASK_TYPES.values(), key=lambda task: (task.list_position, task.name))
    TASK_TYPES.clear()
    TASK_TYPES.update((task.name, task) for task in ordered)


def demo_benchmarks() -> tuple[DemoBenchmark, ...]:
    """Every family's demo benchmarks, in the order the app lists their task types (a family's own in the
    order its demo.py writes them); one of a task type not registered is left out."""
    position = {name: number for number, name in enumerate(TASK_TYPES)}
    known = [spec for spec in _DEMO_BENCHMARKS.values() if spec.task in position]
    return tuple(sorted(known, key=lambda spec: position[spec.task]))


discover()

__all__ = [
    "TASK_TYPES",
    "DemoBenchmark",
    "DemoSplit",
    "LabelVotes",
    "Outcomes",
    "Scores",
    "SyntheticOptions",
    "TakesChoices",
    "TaskType",
    "demo_benchmarks",
    "discover",
    "get_task",
    "read_gold",
    "register",
]
