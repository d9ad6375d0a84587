"""Task types, one module per benchmark family, behind the interface in ``base`` (see README, "Adding a task
family"). Importing a family module registers it: the lines below are the registry, in the order the app
lists the task types.

May import: app.evaluation.
"""

# The registry, in the order the app lists the families (isort: split keeps it).
from . import nlvr, vcr  # noqa: F401  (registers nlvr2, nlvr-structured, nlvr-images; vcr)

# isort: split
from . import vqa_v2  # noqa: F401  (registers vqa-v2)

# isort: split
from . import gqa  # noqa: F401  (registers gqa)

# isort: split
from . import aokvqa  # noqa: F401  (registers a-okvqa)

# isort: split
from . import winoground  # noqa: F401  (registers winoground)

# isort: split
from . import nlvr2_contrast  # noqa: F401  (registers nlvr2-contrast)

# isort: split
from .aokvqa import AOKVQA
from .base import TASK_TYPES, LabelVotes, Outcomes, Scores, TaskType, get_task, read_gold, register
from .gqa import GQA, GQAGold
from .gqa_choices import TakesChoices
from .nlvr import NLVR2, BinaryTask, NLVRImages, NLVRStructured
from .nlvr2_contrast import NLVR2Contrast
from .vcr import VCR
from .vqa_v2 import VQAv2
from .winoground import Winoground

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
    "VQAv2",
    "AOKVQA",
    "Winoground",
    "NLVR2Contrast",
    "GQA",
    "GQAGold",
    "TakesChoices",
]
