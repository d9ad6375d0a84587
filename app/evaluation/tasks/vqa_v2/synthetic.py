"""Synthetic VQA v2 files in the official shapes (the demo, the tests, the scale runs): an annotations file with
ten human answers a question that often disagree, in the spellings the official normalisation folds together
("2"/"two", "a dog"/"dog", "Yes"/"yes"), and results files of a chosen accuracy."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

_COLORS = ("red", "blue", "white", "black", "green", "yellow", "brown", "gray", "orange", "pink")
_THINGS = ("dog", "cat", "pizza", "frisbee", "umbrella", "kite", "bus", "train", "surfboard", "laptop")
_PLACES = ("kitchen", "beach", "street", "park", "field", "table", "sky", "water", "snow", "bathroom")
_SPORTS = ("tennis", "baseball", "skiing", "soccer", "surfing", "skateboarding", "frisbee", "snowboarding")
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
# (question_type, answer_type, answers): the official question types' prefixes.
_TYPES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("is the", "yes/no", ("yes", "no")),
    ("are there", "yes/no", ("yes", "no")),
    ("is this", "yes/no", ("yes", "no")),
    ("does the", "yes/no", ("yes", "no")),
    ("how many", "number", tuple(str(i) for i in range(11))),
    ("what color is the", "other", _COLORS),
    ("what is the", "other", _THINGS),
    ("where is the", "other", _PLACES),
    ("what sport is", "other", _SPORTS),
)
_FIRST_ID = 262_148_000


def _spelling(answer: str, rng: np.random.Generator) -> str:
    """Another way a person writes the same answer, which the official normalisation folds back."""
    roll = rng.random()
    if answer.isdigit() and int(answer) <= 10 and roll < 0.3:
        return _NUMBER_WORDS[int(answer)]
    if roll < 0.1:
        return answer.capitalize()
    if roll < 0.15 and not answer.isdigit() and answer not in ("yes", "no"):
        return "a " + answer
    if roll < 0.18:
        return answer + "."
    return answer


def gold(size: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    annotations = []
    for i in range(size):
        question_type, answer_type, pool = _TYPES[int(rng.integers(len(_TYPES)))]
        truth = pool[int(rng.integers(len(pool)))]
        agreement = 1.0 if rng.random() < 0.35 else float(rng.uniform(0.3, 0.95))
        humans = []
        for j in range(10):
            if rng.random() < agreement:
                text = truth if agreement == 1.0 else _spelling(truth, rng)
            else:
                text = pool[int(rng.integers(len(pool)))]
            humans.append({"answer": text, "answer_confidence": "yes", "answer_id": j + 1})
        common = Counter(h["answer"] for h in humans).most_common(1)[0][0]
        annotations.append(
            {
                "question_id": _FIRST_ID + i,
                "image_id": 262_148 + i // 3,
                "question_type": question_type,
                "answer_type": answer_type,
                "answers": humans,
                "multiple_choice_answer": common,
            }
        )
    document: dict[str, Any] = {"info": {"description": "Holdout synthetic VQA v2"}, "data_subtype": "synthetic"}
    document["annotations"] = annotations
    return json.dumps(document).encode()


def predictions(gold_file: bytes, accuracy: float, seed: int = 0, *, shuffle: bool = True) -> bytes:
    rng = np.random.default_rng(seed + 1)
    entries = []
    for annotation in json.loads(gold_file)["annotations"]:
        humans = [h["answer"] for h in annotation["answers"]]
        common = Counter(humans).most_common(1)[0][0]
        if rng.random() < accuracy:
            answer = common if len(set(humans)) == 1 else _spelling(common.strip(".").removeprefix("a "), rng)
        else:
            options = [a for a in _pool_of(annotation) if a not in set(humans)]
            answer = options[int(rng.integers(len(options)))] if options else "unanswerable"
        entries.append({"question_id": annotation["question_id"], "answer": answer})
    order = rng.permutation(len(entries)) if shuffle else np.arange(len(entries))
    return json.dumps([entries[i] for i in order.tolist()]).encode()


def _pool_of(annotation: dict[str, Any]) -> tuple[str, ...]:
    for question_type, _, pool in _TYPES:
        if question_type == annotation["question_type"]:
            return pool
    return _THINGS
