"""Synthetic files of A-OKVQA: gold files in the shape of the official ``aokvqa_v1p0_<split>.json`` and prediction
files in the official ``{question_id: {"multiple_choice": ..., "direct_answer": ...}}`` format.

Everything here is made up. A question has four distinct choices and ten direct answers: its most given answer
is given by 3 to 10 of the ten annotators, the rest spread over a few others; about a tenth of the questions are
marked ``difficult_direct_answer``, their ten answers spread thin (at most two alike), as the release marks the
questions its annotators disagreed on. Pure: standard library and numpy only; deterministic for a given
``seed``. Files are UTF-8 with one question (one prediction) a line and a final newline.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from app.evaluation.tasks import synthetic_files as files

# Short answers of the kinds A-OKVQA's are (objects, activities, places, seasons, colours, reasons).
WORDS: tuple[str, ...] = (
    "bus",
    "train",
    "bicycle",
    "motorcycle",
    "skateboard",
    "surfboard",
    "frisbee",
    "kite",
    "umbrella",
    "pizza",
    "sandwich",
    "cake",
    "coffee",
    "dog",
    "cat",
    "horse",
    "elephant",
    "giraffe",
    "zebra",
    "bird",
    "surfing",
    "skiing",
    "snowboarding",
    "skateboarding",
    "playing tennis",
    "eating",
    "sleeping",
    "waiting",
    "reading",
    "cooking",
    "summer",
    "winter",
    "spring",
    "fall",
    "beach",
    "kitchen",
    "airport",
    "farm",
    "park",
    "street",
    "red",
    "blue",
    "green",
    "white",
    "black",
    "yellow",
    "safety",
    "warmth",
    "shade",
    "fun",
    "exercise",
    "transportation",
    "celebration",
    "rain",
    "sunny",
    "cold",
    "hot",
    "old",
    "new",
    "wooden",
)
_SUBJECTS = ("man", "woman", "dog", "child", "bus", "people", "cat", "player", "boy", "girl")
_QUESTIONS = (
    "What is the {} about to do?",
    "Why is the {} here?",
    "What season is it likely to be for the {}?",
    "What is the {} most likely used for?",
    "Where is the {} probably going?",
    "What will the {} need next?",
    "What color is the {} likely to be?",
    "What is the {} protecting against?",
)
# Letters of the release's 22-character question ids (no 0, 1, I, O, l).
_ID_LETTERS = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
DIFFICULT_SHARE = 0.1


def _question_ids(rng: np.random.Generator, size: int) -> list[str]:
    letters = np.array(list(_ID_LETTERS))
    ids: list[str] = []
    seen: set[str] = set()
    while len(ids) < size:
        for row in rng.integers(0, letters.size, size=(size - len(ids), 22)):
            qid = "".join(letters[row].tolist())
            if qid not in seen:
                seen.add(qid)
                ids.append(qid)
    return ids


def _direct_answers(rng: np.random.Generator, top: str, difficult: bool) -> list[str]:
    """Ten annotators' answers: ``top`` given 3 to 10 times and the rest spread over a few others; for a difficult
    question, no answer more than twice."""
    others = [word for word in WORDS if word != top]
    if difficult:
        spread = rng.choice(len(others), size=6, replace=False).tolist()
        answers = [top, top] + [others[i] for i in spread[:2] for _ in range(2)] + [others[i] for i in spread[2:6]]
    else:
        count = 3 + int(rng.binomial(7, 0.55))
        pool = rng.choice(len(others), size=3, replace=False).tolist()
        answers = [top] * count + [others[pool[int(rng.integers(0, 3))]] for _ in range(10 - count)]
    rng.shuffle(answers)
    return answers


def gold(size: int, seed: int = 0, *, split: str = "val") -> bytes:
    """A gold file of ``size`` questions: a JSON list, one question a line."""
    size = files.check_count("size", size)
    rng = np.random.default_rng(seed)
    rows = []
    for qid in _question_ids(rng, size):
        choices = [WORDS[i] for i in rng.choice(len(WORDS), size=4, replace=False).tolist()]
        correct = int(rng.integers(0, 4))
        # The direct answers mostly agree with the right choice; sometimes the annotators say it otherwise.
        top = choices[correct] if rng.random() < 0.8 else str(rng.choice([w for w in WORDS if w not in choices]))
        difficult = bool(rng.random() < DIFFICULT_SHARE)
        subject = str(rng.choice(_SUBJECTS))
        rows.append(
            {
                "split": split,
                "image_id": int(rng.integers(1, 600_000)),
                "question_id": qid,
                "question": str(rng.choice(_QUESTIONS)).format(subject),
                "choices": choices,
                "correct_choice_idx": correct,
                "direct_answers": _direct_answers(rng, top, difficult),
                "difficult_direct_answer": difficult,
                "rationales": [
                    f"The {subject} is near the {rng.choice(WORDS)}.",
                    f"It looks like {choices[correct]}.",
                    f"People often see {rng.choice(WORDS)} there.",
                ],
            }
        )
    return _document(rows, "[", "]", files.dumps)


def _document(items: list[Any], opening: str, closing: str, write: Any) -> bytes:
    if not items:
        return f"{opening}{closing}\n".encode()
    return (opening + "\n" + ",\n".join(write(item) for item in items) + "\n" + closing + "\n").encode("utf-8")


def _most_given(answers: list[str]) -> str:
    return max(answers, key=lambda answer: (answers.count(answer), answer))


def predictions(
    rng: np.random.Generator, gold_file: bytes, mc_accuracy: float, da_accuracy: float, shuffle: bool
) -> bytes:
    """A prediction for every question of ``gold_file``: the right choice with probability ``mc_accuracy`` (else
    another choice, now and then a word that is none of them), the most given direct answer with probability
    ``da_accuracy`` (else a word none of the ten annotators gave), so that both expected accuracies are as asked
    (the most given answer of a question in the direct-answer metric's scope is given at least three times)."""
    rows = json.loads(gold_file)
    entries = []
    for row in rows:
        choices, correct, answers = row["choices"], row["correct_choice_idx"], row["direct_answers"]
        if rng.random() < mc_accuracy:
            choice = choices[correct]
        elif rng.random() < 0.1:
            choice = choices[correct].upper() if choices[correct].upper() not in choices else "none of these"
        else:
            choice = choices[(correct + int(rng.integers(1, len(choices)))) % len(choices)]
        if rng.random() < da_accuracy:
            direct = _most_given(answers)
        else:
            unused = [word for word in WORDS if word not in answers]
            direct = unused[int(rng.integers(0, len(unused)))]
        entries.append((row["question_id"], {"multiple_choice": choice, "direct_answer": direct}))
    if shuffle:
        entries = [entries[i] for i in rng.permutation(len(entries)).tolist()]
    return _document(entries, "{", "}", lambda item: f"{files.dumps(item[0])}: {files.dumps(item[1])}")


def constant(gold_file: bytes, answer: str) -> bytes:
    """The same answer, in both settings, for every question of ``gold_file`` (in its order)."""
    rows = json.loads(gold_file)
    entries = [(row["question_id"], {"multiple_choice": answer, "direct_answer": answer}) for row in rows]
    return _document(entries, "{", "}", lambda item: f"{files.dumps(item[0])}: {files.dumps(item[1])}")
