"""Synthetic files of GQA: questions files in the official shape and prediction files in the official results format.

Everything here is made up, in the shape of the official release (``testdev_all_questions.json``: one JSON object
keyed by question id) and of the official predictions file (``[{"questionId", "prediction"}]``). Several questions
share an image; about two thirds are balanced; balanced questions entail others of their image (balanced or not);
yes/no questions have no global group, the others one ("color", "place", ...); ``choices`` makes the official
choices file of such a questions file. Pure: standard library and numpy only; deterministic for a given ``seed``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from app.evaluation.tasks import synthetic_files as files

# (structural, semantic, detailed, answers, global group, weight): roughly the shares of GQA's balanced test-dev.
_KINDS: tuple[tuple[str, str, str, tuple[str, ...], str | None, float], ...] = (
    ("verify", "attr", "verifyAttr", ("yes", "no"), None, 8.0),
    ("verify", "rel", "verifyRelS", ("yes", "no"), None, 6.0),
    ("verify", "obj", "exist", ("yes", "no"), None, 5.0),
    ("logical", "obj", "logicOr", ("yes", "no"), None, 5.0),
    ("logical", "attr", "existAttrOr", ("yes", "no"), None, 5.0),
    ("query", "attr", "queryAttr", ("white", "black", "blue", "red", "brown", "green", "gray"), "color", 14.0),
    ("query", "attr", "materialVerify", ("wood", "metal", "plastic", "glass"), "material", 6.0),
    ("query", "cat", "categoryRelS", ("table", "chair", "shelf", "bed", "desk"), "furniture", 10.0),
    ("query", "rel", "relS", ("man", "woman", "shirt", "tree", "dog", "car", "plate"), "thing", 16.0),
    ("query", "global", "placeVerify", ("street", "kitchen", "field", "room", "beach"), "place", 7.0),
    ("choose", "attr", "chooseAttr", ("red", "blue", "large", "small", "white", "black"), "color", 5.0),
    ("choose", "rel", "chooseRel", ("left", "right"), "position", 4.0),
    ("choose", "global", "chooseGlobal", ("street", "kitchen", "field"), "place", 2.0),
    ("compare", "attr", "compare", ("yes", "no"), None, 3.0),
    ("compare", "obj", "diffAnimals", ("dog", "cat", "horse"), "animal", 2.0),
)
_WEIGHTS = np.array([kind[-1] for kind in _KINDS]) / sum(kind[-1] for kind in _KINDS)
_WORDS = {
    "verify": "Is there a {} in the picture?",
    "logical": "Are there either {}s or tables?",
    "query": "What is the {} on the left?",
    "choose": "Is the {} red or blue?",
    "compare": "Do the {} and the chair have the same color?",
}
_OBJECTS = ("chair", "table", "dog", "man", "shirt", "car", "plate", "window")
# Every answer a synthetic question can have: the pool wrong predictions are drawn from.
ANSWERS: tuple[str, ...] = tuple(sorted({answer for kind in _KINDS for answer in kind[3]}))
BALANCED_SHARE = 0.65


def _ids(rng: np.random.Generator, size: int, low: int) -> list[int]:
    """``size`` distinct numbers from ``low`` up (a sample without replacement, never the whole range in memory)."""
    population = max(9 * low, 10 * size)
    return (rng.choice(population, size=size, replace=False) + low).tolist() if size else []


def gqa_gold(size: int, seed: int = 0) -> bytes:
    """A questions file of ``size`` questions on images of 1 to 8 questions each, one question a line."""
    size = files.check_count("size", size)
    rng = np.random.default_rng(seed)
    per_image = rng.integers(1, 9, size=size)  # 1 to 8 questions an image (size images are always enough)
    ends = np.cumsum(per_image)
    images = int(np.searchsorted(ends, size)) + 1 if size else 0
    per_image = per_image[:images]
    if images:
        per_image[-1] -= int(ends[images - 1]) - size
    question_ids = _ids(rng, size, 10_000_000)  # GQA's ids are strings of digits: "20968379"
    image_ids = _ids(rng, images, 100_000)  # test-dev's images: "n161313"
    kinds = rng.choice(len(_KINDS), size=size, p=_WEIGHTS).tolist()
    balanced = (rng.random(size) < BALANCED_SHARE).tolist()
    picks, things, locals_ = (rng.integers(0, bound, size=size).tolist() for bound in (2**31, len(_OBJECTS), 14))
    entails, itself = (rng.random(size) < 0.6).tolist(), (rng.random(size) < 0.05).tolist()
    questions: list[tuple[str, dict[str, Any]]] = []
    at = 0
    for image, count in zip(image_ids, per_image.tolist(), strict=True):
        members = [str(qid) for qid in question_ids[at : at + count]]
        for offset, qid in enumerate(members):
            index = at + offset
            structural, semantic, detailed, answers, group, _ = _KINDS[kinds[index]]
            answer = answers[picks[index] % len(answers)]
            others = [other for other in members if other != qid]
            entailed = (
                [others[int(i)] for i in rng.choice(len(others), size=int(rng.integers(1, len(others) + 1)))]
                if others and entails[index]
                else []
            )
            if itself[index]:
                entailed.append(qid)  # as in the release, a question may list itself (the official eval skips it)
            thing = _OBJECTS[things[index]]
            questions.append(
                (
                    qid,
                    {
                        "semantic": [
                            {"operation": "select", "dependencies": [], "argument": f"{thing} ({index})"},
                            {
                                "operation": f"{'query' if structural == 'query' else structural} {semantic}",
                                "dependencies": [0],
                                "argument": "_",
                            },
                        ],
                        "entailed": entailed,
                        "equivalent": [qid],
                        "question": _WORDS[structural].format(thing),
                        "imageId": f"n{image}",
                        "isBalanced": balanced[index],
                        "groups": {"global": group, "local": f"{locals_[index] + 1}-{detailed}"},
                        "answer": answer,
                        "semanticStr": f"select: {thing} ({index})->{structural} {semantic}: _ [0]",
                        "annotations": {"answer": {}, "question": {}, "fullAnswer": {}},
                        "types": {"detailed": detailed, "semantic": semantic, "structural": structural},
                        "fullAnswer": f"The answer is {answer}.",
                    },
                )
            )
        at += count
    if not questions:
        return b"{}\n"
    body = ",\n".join(f"{json.dumps(qid)}: {files.dumps(question)}" for qid, question in questions)
    return ("{\n" + body + "\n}\n").encode("utf-8")


def predictions(
    gold: bytes, accuracy: float, rng: np.random.Generator, *, shuffle: bool, group_correlation: float
) -> bytes:
    """An official predictions file for a synthetic (or real) questions file: each prediction right with
    probability ``accuracy`` (an image's questions sharing one draw with probability ``group_correlation``); a
    wrong yes/no answer is the other one, any other wrong answer another of the synthetic answers."""
    questions: dict[str, Any] = json.loads(gold)
    ids = list(questions)
    images = [str(question.get("imageId", qid)) for qid, question in questions.items()]
    groups = np.unique(np.array(images, dtype=object), return_inverse=True)[1] if ids else np.zeros(0, np.int64)
    right = files.correct_mask(rng, accuracy, np.asarray(groups, dtype=np.int64), group_correlation)
    picks = rng.integers(0, len(ANSWERS) - 1, size=len(ids)).tolist()
    others = {answer: [other for other in ANSWERS if other != answer] for answer in ANSWERS}
    rows = []
    for qid, ok, pick in zip(ids, right.tolist(), picks, strict=True):
        answer = questions[qid]["answer"]
        if not ok:
            if answer in ("yes", "no"):
                answer = "no" if answer == "yes" else "yes"
            else:
                pool = others.get(answer, ANSWERS)
                answer = pool[pick % len(pool)]
        rows.append(files.dumps({"questionId": qid, "prediction": answer}))
    if shuffle:
        rows = [rows[i] for i in rng.permutation(len(rows)).tolist()]
    return ("[\n" + ",\n".join(rows) + "\n]\n").encode("utf-8")


def _valid_answers() -> dict[str | None, tuple[str, ...]]:
    """A global group's valid answers: every answer of the kinds of that group (yes/no where there is none)."""
    valid: dict[str | None, set[str]] = {}
    for _, _, _, answers, group, _ in _KINDS:
        valid.setdefault(group, set()).update(answers)
    return {group: tuple(sorted(answers)) for group, answers in valid.items()}


def choices(gold: bytes, seed: int = 0) -> bytes:
    """An official choices file (``{tier}_choices.json``) for a synthetic questions file: an entry for every
    question; its valid answers are every answer of its global group (yes and no where it has none), its
    plausible ones its kind's answers less one that is not the gold answer (the world rules some out)."""
    questions: dict[str, Any] = json.loads(gold)
    rng = np.random.default_rng(seed)
    valid = _valid_answers()
    kinds = {kind[2]: kind for kind in _KINDS}
    drops = rng.random(len(questions)).tolist()
    rows = []
    for (qid, question), drop in zip(questions.items(), drops, strict=True):
        kind = kinds.get(question.get("types", {}).get("detailed"))
        group = question.get("groups", {}).get("global")
        answers = kind[3] if kind is not None else (question["answer"],)
        ruled_out = [answer for answer in answers if answer != question["answer"]]
        gone = ruled_out[int(drop * len(ruled_out))] if len(ruled_out) > 1 else None
        entry = {
            "valid": list(valid.get(group, valid[None])),
            "plausible": [answer for answer in answers if answer != gone],
        }
        rows.append(f"{json.dumps(qid)}: {files.dumps(entry)}")
    return ("{\n" + ",\n".join(rows) + "\n}\n").encode("utf-8")
