"""Synthetic Winoground files in the official shapes: examples with word-order swaps for captions and the official
tag vocabulary in about the official proportions, and model_scores files of a chosen group score."""

from __future__ import annotations

import json

import numpy as np

from app.evaluation.tasks import synthetic_files

from .formats import KEYS
from .scoring import outcomes

# The official tag vocabulary by collapsed tag, and about the official shares (400 examples: Relation 233,
# Object 141, Both 26; secondary tags on a quarter, some combined; num_main_preds 2 on a quarter).
_TAGS = {
    "Relation": ("Adjective-Color", "Preposition", "Determiner-Numeral", "Adjective-Size", "Verb-Intransitive"),
    "Object": ("Noun", "Noun Phrase", "Determiner-Numeral, Noun Phrase", "Pronoun, Noun Phrase"),
    "Both": ("Altered POS", "Noun, Verb-Intransitive", "Scope, Noun, Preposition"),
}
_COLLAPSED = (("Relation", 0.58), ("Object", 0.35), ("Both", 0.07))
_SECONDARY = (
    ("", 0.75),
    ("Symbolic", 0.07),
    ("Series", 0.06),
    ("Morpheme-Level", 0.04),
    ("Pragmatics", 0.04),
    ("Symbolic, Series", 0.02),
    ("Symbolic, Pragmatics", 0.02),
)
_TWO_MAIN_PREDS = {"Relation": 0.41, "Object": 0.08, "Both": 0.04}
_ADJECTIVES = ("old", "young", "tall", "short", "red", "blue", "large", "small", "wet", "dry")
_NOUNS = ("person", "dog", "cat", "cup", "plant", "car", "child", "bird", "chair", "book")
_VERBS = ("is left of", "is on top of", "looks at", "is behind", "is bigger than")


def _choice(rng: np.random.Generator, table: tuple[tuple[str, float], ...], size: int) -> list[str]:
    values, weights = zip(*table, strict=True)
    p = np.array(weights) / sum(weights)
    return [values[i] for i in rng.choice(len(values), size=size, p=p).tolist()]


def gold(size: int, seed: int = 0) -> bytes:
    n = synthetic_files.check_count("size", size)
    rng = np.random.default_rng(seed)
    collapsed = _choice(rng, _COLLAPSED, n)
    secondary = _choice(rng, _SECONDARY, n)
    two_preds = rng.random(n)
    rows = []
    for i in range(n):
        a, b = rng.choice(len(_ADJECTIVES), size=2, replace=False).tolist()
        x, y = rng.choice(len(_NOUNS), size=2, replace=False).tolist()
        verb = _VERBS[int(rng.integers(len(_VERBS)))]
        tags = _TAGS[collapsed[i]]
        rows.append(
            synthetic_files.dumps(
                {
                    "id": i,
                    "caption_0": f"a {_ADJECTIVES[a]} {_NOUNS[x]} {verb} a {_ADJECTIVES[b]} {_NOUNS[y]}",
                    "caption_1": f"a {_ADJECTIVES[b]} {_NOUNS[x]} {verb} a {_ADJECTIVES[a]} {_NOUNS[y]}",
                    "image_0": f"ex_{i}_img_0",
                    "image_1": f"ex_{i}_img_1",
                    "tag": tags[int(rng.integers(len(tags)))],
                    "secondary_tag": secondary[i],
                    "num_main_preds": 2 if two_preds[i] < _TWO_MAIN_PREDS[collapsed[i]] else 1,
                    "collapsed_tag": collapsed[i],
                }
            )
        )
    return synthetic_files.lines(rows)


def predictions(gold: bytes, accuracy: float, rng: np.random.Generator, shuffle: bool) -> bytes:
    ids = [str(row["id"]) for row in synthetic_files.json_lines(gold)]
    n = len(ids)
    right = rng.random(n) < accuracy
    scores = np.round(rng.random((n, 4)), 4)  # c0_i0, c0_i1, c1_i0, c1_i1
    # Group-right examples: the matching pairs above both others.
    high = np.round(0.6 + 0.4 * rng.random((n, 2)), 4)
    low = np.round(0.5 * rng.random((n, 2)), 4)
    scores[right] = np.stack([high[:, 0], low[:, 0], low[:, 1], high[:, 1]], axis=1)[right]
    # The others: random scores, made group-wrong where the draw happened to be right (c0_i0 no longer above
    # c0_i1 makes the image judgement wrong).
    lucky = ~right & outcomes(scores)[2]
    scores[lucky, 0], scores[lucky, 1] = scores[lucky, 1], scores[lucky, 0]
    lines = [
        f'{{"label": "{ids[i]}_{key}", "score": {json.dumps(float(scores[i, j]))}}}'
        for i in range(n)
        for j, key in enumerate(KEYS)
    ]
    order = rng.permutation(len(lines)) if shuffle else np.arange(len(lines))
    return synthetic_files.lines([lines[i] for i in order.tolist()])
