"""Synthetic benchmark data: gold files, category annotations and prediction files.

Everything here is made up. Each task family makes files of its own shape (keys, identifier schemes, group
sizes, label balance, image-pair reuse: see each family's synthetic.py under app/evaluation/tasks), so the demo and
the scale tests never need the real data. This module is their public face by task name, and dispatches
through the task type.

Pure module: standard library, numpy and the (pure) scoring domain only. Every function is deterministic
for a given ``seed`` and returns UTF-8 ``bytes`` with ``\\n`` line endings and a final newline (an empty
file is ``b""``).

Public interface
----------------
``nlvr2_gold(n_examples, split="dev", seed=0)``
``nlvr_gold(n_examples, seed=0)``
``vcr_gold(n_questions, seed=0, regions=(...))``
``nlvr2_annotations(gold, n_sentences=100, seed=0)``
``gqa_choices(gold, seed=0)``: the official choices file of a GQA questions file (validity, plausibility)
``predictions(task, gold, accuracy, seed=0, **options)``: options as SyntheticOptions' (app/evaluation/tasks)
``all_true(task, gold, **kw)``
``TASK_NAMES``
"""

from __future__ import annotations

from typing import Any

from app.evaluation.tasks import TASK_TYPES, get_task
from app.evaluation.tasks.gqa.synthetic import choices as gqa_choices
from app.evaluation.tasks.nlvr.synthetic import NLVR2_CATEGORIES, nlvr2_annotations, nlvr2_gold, nlvr_gold
from app.evaluation.tasks.vcr.synthetic import VCR_HEADER, vcr_gold

__all__ = [
    "TASK_NAMES",
    "VCR_HEADER",
    "NLVR2_CATEGORIES",
    "nlvr2_gold",
    "nlvr_gold",
    "vcr_gold",
    "nlvr2_annotations",
    "gqa_choices",
    "predictions",
    "all_true",
]

TASK_NAMES: tuple[str, ...] = tuple(TASK_TYPES)


def predictions(task: str, gold: bytes, accuracy: float, seed: int = 0, **options: Any) -> bytes:
    """A valid prediction file for ``gold`` whose expected accuracy is ``accuracy``: the task type's
    ``synthetic_predictions``, whose options (``header``, ``shuffle``, ``split``, ``group_correlation``, a
    family's own such as VCR's ``rationale_accuracy``) are SyntheticOptions'.

    Binary tasks: each prediction is correct with probability ``accuracy``
    (``nlvr-images``: each image). ``group_correlation`` in [0, 1] makes a
    consistency group (NLVR2 sentence, NLVR sentence) share one draw with that
    probability, keeping the expected accuracy. Output: ``nlvr2`` lines
    ``identifier,True|False``; ``nlvr-structured`` ``n-m,true|false``;
    ``nlvr-images`` ``{split}-n-m-k.png,true|false`` for k = 0..5.
    ``header=True`` prepends ``identifier,prediction``.

    ``vcr``: header plus 21 columns; 4 answer probabilities and 16 rationale
    probabilities (4 per conditioning answer), softmax-like, 4 decimals. The
    answer argmax is right with probability ``accuracy``, the argmax of the
    rationale block conditioned on the gold answer is right with probability
    ``rationale_accuracy`` (default ``accuracy``), independently.
    """
    if task not in TASK_TYPES:
        raise ValueError(f"unknown task {task!r}; expected one of {TASK_NAMES}")
    return get_task(task).synthetic_predictions(gold, accuracy, seed, **options)


def all_true(task: str, gold: bytes, **kw: Any) -> bytes:
    """Predict true for every example (binary tasks only).

    Accepts ``header``, ``shuffle`` (default False here), ``split`` and ``seed`` like
    :func:`predictions`.
    """
    task_type = get_task(task)
    header = kw.pop("header", False)
    shuffle = kw.pop("shuffle", False)
    split = kw.pop("split", "dev")
    seed = kw.pop("seed", 0)
    if kw:
        raise TypeError(f"unexpected keyword arguments: {sorted(kw)}")
    return task_type.synthetic_constant(gold, header=header, shuffle=shuffle, split=split, seed=seed)
