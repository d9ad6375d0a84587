"""Synthetic NLVR2 contrast sets in the official shape: identifiers ``{split}-{set}-{pair}-{sentence}-{digit}``,
about the official set sizes, label balance and share of sets with one label."""

from __future__ import annotations

import numpy as np

from app.evaluation.tasks import synthetic_files

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


def gold(size: int, seed: int = 0, split: str = "test1") -> bytes:
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
