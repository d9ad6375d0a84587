"""Task types, one module per benchmark family, behind the interface in ``base`` (see README, "Adding a task
family"). Importing a family module registers it: the lines below are the registry, in the order the app
lists the task types.
"""

from . import nlvr, vcr  # noqa: F401  (registers nlvr2, nlvr-structured, nlvr-images; vcr)
from .base import TASK_TYPES, LabelVotes, Outcomes, Scores, TaskType, get_task, read_gold, register
from .nlvr import NLVR2, BinaryTask, NLVRImages, NLVRStructured
from .vcr import VCR

# isort: split
# Families registered after the four above, in the order the app lists them.
from . import aokvqa  # noqa: F401  (registers a-okvqa)
from .aokvqa import AOKVQA

__all__ = [
    "TASK_TYPES",
    "LabelVotes",
    "Outcomes",
    "Scores",
    "TaskType",
    "get_task",
    "read_gold",
    "register",
    "BinaryTask",
    "NLVR2",
    "NLVRStructured",
    "NLVRImages",
    "VCR",
    "AOKVQA",
]
