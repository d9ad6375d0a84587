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

from .. import gold as gold_files
from .. import predictions as prediction_files
from ..gold import GoldSet
from . import synthetic_files
from .base import ACCURACY, Metric, register
from .nlvr import BinaryTask

# The released contrast set: 479 originals (contrast sets) of sizes 1 (21), 2 (417), 3 (29), 4 (10), 5 and 7
# (one each); 436 of 994 labels true; member digits numbered from 0 (four sets in five) or from 1; two
# members of a set share their label two times in three (the original itself is not in the file).
_SET_SIZES = ((1, 21), (2, 417), (3, 29), (4, 10), (5, 1), (7, 1))
_P_TRUE = 436 / 994
_P_FROM_ONE = 0.2
_P_FLIP = 0.33
_NUMBERS = ("two", "three", "four", "five")
_NOUNS = ("dogs", "bottles", "knee pads", "paper towel rolls", "birds", "chairs")
_PLACES = ("in the left image", "in the right image", "in total", "in one image")


@register
class NLVR2Contrast(BinaryTask):
    """Binary judgements grouped by the original NLVR2 example (identifier without its last digit)."""

    name = "nlvr2-contrast"
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
        return gold_files.read_nlvr2_contrast(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return prediction_files.parse_binary(data, gold, max_bytes=max_bytes, digits=True)

    def group_of(self, identifier: str) -> str:
        return identifier[:-2]

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "test1") -> bytes:
        """Contrast sets in the official shape: identifiers ``{split}-{set}-{pair}-{sentence}-{digit}``, about the
        official set sizes, label balance and share of sets with one label."""
        return synthetic_gold(size, seed, split)


def synthetic_gold(size: int, seed: int = 0, split: str = "test1") -> bytes:
    n = synthetic_files.check_count("size", size)
    if not isinstance(split, str) or not split or any(c in split for c in ',"\r\n\t '):
        raise ValueError(f"split must be a non-empty string without separators, got {split!r}")
    rng = np.random.default_rng(seed)
    sizes, weights = zip(*_SET_SIZES, strict=True)
    p = np.array(weights, dtype=float) / sum(weights)
    rows: list[str] = []
    originals: set[str] = set()
    while len(rows) < n:
        original = f"{split}-{int(rng.integers(2000))}-{int(rng.integers(4))}-{int(rng.integers(2))}"
        if original in originals:
            continue
        originals.add(original)
        members = min(sizes[int(rng.choice(len(sizes), p=p))], n - len(rows))
        first = int(rng.random() < _P_FROM_ONE)
        label = bool(rng.random() < _P_TRUE)
        number, noun, place = (int(rng.integers(len(choices))) for choices in (_NUMBERS, _NOUNS, _PLACES))
        for digit in range(first, first + members):
            rows.append(
                synthetic_files.dumps(
                    {
                        "sentence": f"There are exactly {_NUMBERS[number]} {_NOUNS[noun]} {_PLACES[place]}.",
                        "left_url": f"https://example.org/contrast/{original}-{digit}-img0.jpg",
                        "right_url": f"https://example.org/contrast/{original}-{digit}-img1.jpg",
                        "identifier": f"{original}-{digit}",
                        "writer": int(rng.integers(20)),
                        "label": label,
                    }
                )
            )
            if rng.random() < _P_FLIP:  # the next perturbation: another number, sometimes the other label
                label = not label
            number = (number + 1) % len(_NUMBERS)
    return synthetic_files.lines(rows)
