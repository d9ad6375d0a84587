"""Task types a maintainer configures instead of coding: the ``task:`` mapping of a benchmark (config.py) and the
TaskType each shape makes of it (classification, multiple choice, short answer), with the whole interface of
app/evaluation/tasks/base.py, so every view, the statistics and the blind test work on them as on a family.

A configured type is not registered in TASK_TYPES: a benchmark names its config, and ``configured_task`` makes
(and keeps) one object per distinct config.

May import: app.evaluation, app.evaluation.tasks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .classification import ClassificationTask
from .config import (
    CONFIGURED_TYPES,
    Classification,
    ConfigError,
    MultipleChoice,
    ShortAnswer,
    TaskConfig,
    canonical_json,
    parse,
    schema,
)
from .configured_task import ConfiguredTask
from .multiple_choice import MultipleChoiceTask
from .short_answer import ShortAnswerTask

_SHAPES = {"classification": ClassificationTask, "multiple-choice": MultipleChoiceTask, "short-answer": ShortAnswerTask}


def configured_task(config: Mapping[str, Any] | str | Classification | MultipleChoice | ShortAnswer) -> ConfiguredTask:
    """The task type of a config (a mapping, its canonical JSON, or a parsed config); ConfigError naming the bad
    keys. Two benchmarks with the same config share one object."""
    if isinstance(config, str):
        return _from_text(config)
    return _task_of(canonical_json(parse(config)))


@lru_cache(maxsize=256)
def _from_text(text: str) -> ConfiguredTask:
    """A stored config (a benchmark's column) to its task, without validating it again on every request."""
    return _task_of(canonical_json(parse(json.loads(text))))


@lru_cache(maxsize=256)
def _task_of(canonical: str) -> ConfiguredTask:
    config = parse(json.loads(canonical))
    shape: Any = _SHAPES[config.type]
    task: ConfiguredTask = shape(config)
    return task


def task_config_schema() -> dict[str, Any]:
    """The JSON Schema of the ``task:`` mapping (for the bundle's schema)."""
    return schema()


__all__ = [
    "CONFIGURED_TYPES",
    "ConfigError",
    "ConfiguredTask",
    "TaskConfig",
    "canonical_json",
    "configured_task",
    "parse",
    "task_config_schema",
]
