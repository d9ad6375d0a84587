"""NLVR2 contrast sets (Gardner et al. 2020): NLVR2 test examples perturbed by hand (the sentence or an image
changed a little); the perturbations of one original form a contrast set. Scored by accuracy and consistency.

Gold: the official ``nlvr2/contrast_set_nlvr2.jsonl`` of allenai/contrast-sets: ``identifier`` (the original
NLVR2 identifier and one digit, 'test1-769-1-0-1'), ``label`` (a JSON boolean), ``sentence``, ``left_url``,
``right_url``, ``writer``. The file names no original in a field of its own: the official ``eval.py`` groups by
``ex['identifier'][:-2]``, the original's identifier, and so do we (an identifier whose last part is not one
digit is refused, as ``[:-2]`` would then not be the original).

Submission: ``identifier,prediction`` lines, as the official eval.py reads them, the prediction true or false in
any case, or 1 or 0 (the eval.py's own comment asks for "0/1"); an optional header line as for NLVR2.

Metrics as the official eval.py: ``accuracy`` over the gold examples and ``consistency``, the share of contrast
sets whose examples are all right.

One deliberate difference: the official eval.py reads a prediction with ``bool(pred)``, so every non-empty string
is True, "0" and "False" included; only an empty prediction is False. A perfect file written with 0/1 (or
True/False) scores 43.86 accuracy and 25.26 consistency there on the released 994 examples (436 true), the
all-true figures. Here "0" and "false" are False, so a perfect file scores 100/100, and our numbers equal what the
official eval.py gives for the same predictions written "1" and "" (empty). The official's other leniencies are
refusals here, as for NLVR2: a missing identifier (the official counts it wrong), an unknown one (ignored there)
and a repeated one (the last wins there).
"""

from __future__ import annotations

import numpy as np

from app.evaluation.gold import GoldSet
from app.evaluation.tasks.base import ACCURACY, Metric, register
from app.evaluation.tasks.nlvr.family import BinaryTask

from . import formats, synthetic


@register
class NLVR2Contrast(BinaryTask):
    """Binary judgements grouped by the original NLVR2 example (identifier without its last digit)."""

    name = "nlvr2-contrast"
    list_position = 70
    label = "NLVR2 contrast sets"
    unit_noun = "contrast sets"
    declared_metrics = (ACCURACY, Metric("consistency", "Consistency", "Cons.", counts="contrast sets"))
    file_format = (
        "CSV, one line per example: identifier,prediction with prediction true or false (any case) or 1 or 0; "
        "an optional header line. 0 and false are False here, unlike the official eval.py, which reads "
        "bool(prediction) and so counts every non-empty prediction, 0 included, as True"
    )
    example = ("identifier,prediction", "test1-769-1-0-1,0", "test1-769-1-0-2,1")
    words = ("1", "0")  # synthetic files write the official eval.py's 0/1

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_nlvr2_contrast(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_predictions(data, gold, max_bytes=max_bytes)

    def group_of(self, identifier: str) -> str:
        return identifier[:-2]

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "test1") -> bytes:
        """Contrast sets in the official shape: identifiers ``{split}-{set}-{pair}-{sentence}-{digit}``, about the
        official set sizes, label balance and share of sets with one label."""
        return synthetic.gold(size, seed, split)
