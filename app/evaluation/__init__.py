"""The scoring domain, pure (numpy/pandas/stdlib only): gold files, prediction files, metrics, subsets.

Data flows one way: ``task.read_gold`` -> ``task.parse`` (an upload -> array aligned to the gold
order, or ValidationError) -> ``task.score`` / ``task.score_batch`` -> {subset: {metric: percentage}}.
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
