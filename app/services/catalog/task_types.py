"""A benchmark's task type: a built-in family by its name, or the configured type its config makes. Its own
module: every catalog module that scores (label_files, rescoring, references) asks it, and benchmarks.py
imports them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.evaluation import TASK_TYPES, TaskType, get_task
from app.evaluation.configured import CONFIGURED_TYPES, ConfigError, canonical_json, configured_task, parse
from app.models import Benchmark
from app.services.errors import InvalidInput


def task_of(benchmark: Benchmark | Any) -> TaskType:
    """The task type that scores ``benchmark``'s splits: a Benchmark row, or any object with its task_type and,
    for a configured type, its task_config (the boards' BenchmarkInfo)."""
    config = getattr(benchmark, "task_config", None)
    if config:
        return configured_task(config)
    return get_task(benchmark.task_type)


def checked_config(task_type: str, config: Mapping[str, Any] | None) -> str | None:
    """The canonical JSON of a benchmark's task config (None for a built-in family); InvalidInput naming the key
    path of what is wrong (``task.labels: ...``)."""
    if config is None:
        if task_type not in TASK_TYPES:
            configured = (
                f"; a configured type ({', '.join(CONFIGURED_TYPES)}) needs its config"
                if (task_type in CONFIGURED_TYPES)
                else ""
            )
            raise InvalidInput(f"unknown task type {task_type!r}; choose one of {', '.join(TASK_TYPES)}{configured}")
        return None
    if task_type not in CONFIGURED_TYPES:
        raise InvalidInput(
            f"task type {task_type!r} takes no config; a config is for a configured type: {', '.join(CONFIGURED_TYPES)}"
        )
    try:
        parsed = parse(config)
    except ConfigError as exc:
        raise InvalidInput("; ".join(exc.problems)) from None
    if parsed.type != task_type:
        raise InvalidInput(f"task.type: {parsed.type!r} does not match the task type {task_type!r}")
    return canonical_json(parsed)
