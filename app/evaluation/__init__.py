"""The scoring domain, pure (numpy, pandas, scipy and the standard library; no Flask, no database): gold files,
prediction files, metrics, subsets, ranks and their statistics.

Data flows one way: ``task.read_gold`` -> ``task.parse`` (an upload -> array aligned to the gold
order, or ValidationError) -> ``task.score`` / ``task.score_batch`` -> {subset: {metric: percentage}}.

May import: nothing of the app.
"""

from .errors import Problem, ValidationError
from .gold import GoldSet
from .tasks import TASK_TYPES, Scores, TakesChoices, TaskType, get_task, read_gold

__all__ = [
    "Problem",
    "ValidationError",
    "GoldSet",
    "read_gold",
    "TASK_TYPES",
    "Scores",
    "TakesChoices",
    "TaskType",
    "get_task",
]
