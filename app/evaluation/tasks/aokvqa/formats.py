"""A-OKVQA's files: the official gold file (``aokvqa_v1p0_<split>.json``) and predictions file, read into the
arrays family.py scores (see its docstring for their layout)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from app.evaluation import encoding, json_files
from app.evaluation.errors import Problem, ProblemList, ValidationError, at
from app.evaluation.gold import GoldSet, scalar_fields
from app.evaluation.text_files import show

CHOICES = 4
DIRECT_ANSWERS = 10
MC_OUTSIDE = CHOICES  # a multiple-choice answer that is none of the question's choices
MC_MISSING = CHOICES + 1  # no "multiple_choice" key in the question's entry
DA_MISSING = 0  # no "direct_answer" key in the question's entry
DA_POINTS = 3  # min(1, matches / 3): a question scores 0, 1, 2 or 3 thirds
CODE_BITS = 3
CODE_MASK = np.uint64((1 << CODE_BITS) - 1)
# Label columns: the right choice, difficult or not, then the choices' and the direct answers' text hashes.
CORRECT, DIFFICULT, CHOICE0, DIRECT0 = 0, 1, 2, 2 + CHOICES
_LABEL_COLUMNS = DIRECT0 + DIRECT_ANSWERS
# The prediction file's keys (the official eval_predictions.py reads these two and nothing else).
MC_KEY, DA_KEY = "multiple_choice", "direct_answer"
# JSON values a valid file can hold per question (value_bound: the entry, its two answers, the commas): room for a
# few keys more, and for the document itself.
_VALUES_PER_QUESTION = 8
_VALUES_SPARE = 64
_REQUIRED = ("question_id", "choices", "correct_choice_idx", "direct_answers", "difficult_direct_answer")


def text_hashes(texts: Sequence[str] | np.ndarray) -> np.ndarray:
    """61-bit hashes of texts (uint64), never 0: how choices and answers are compared and stored. Raises
    UnicodeEncodeError for a text that is not valid Unicode (a lone surrogate escaped in JSON)."""
    hashed = encoding.text_hashes(texts) >> np.uint64(CODE_BITS)
    hashed[hashed == 0] = 1
    return hashed


def _unencodable(texts: Sequence[str]) -> list[int]:
    """Positions of the texts UTF-8 cannot encode (lone surrogates), for a message."""
    found = []
    for i, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            found.append(i)
    return found


# --- gold --------------------------------------------------------------------------------------------------


def _is_strings(value: object, count: int) -> bool:
    return type(value) is list and len(value) == count and all(type(item) is str for item in value)


def _record_problem(record: object) -> str | None:
    """What is wrong with one question of a gold file (its id aside), or None."""
    if type(record) is not dict:
        return f"expected a JSON object (a question), found {json_files.json_type(record)}"
    qid = show(record["question_id"])
    absent = [name for name in _REQUIRED if name not in record]
    if absent:
        return f"question {qid} has no {', '.join(repr(name) for name in absent)}"
    if not _is_strings(record["choices"], CHOICES):
        return f"'choices' of question {qid} is not an array of {CHOICES} strings"
    correct = record["correct_choice_idx"]
    if type(correct) is not int or not 0 <= correct < CHOICES:
        return f"'correct_choice_idx' of question {qid} is not an integer 0-{CHOICES - 1}"
    if not _is_strings(record["direct_answers"], DIRECT_ANSWERS):
        return f"'direct_answers' of question {qid} is not an array of {DIRECT_ANSWERS} strings"
    if type(record["difficult_direct_answer"]) is not bool:
        return f"'difficult_direct_answer' of question {qid} is not true or false"
    if _unencodable(record["choices"] + record["direct_answers"]):
        return f"a choice or direct answer of question {qid} is not valid Unicode (a lone surrogate)"
    return None


def read_gold(data: bytes, task: str = "a-okvqa") -> GoldSet:
    """The official ``aokvqa_v1p0_<split>.json`` (a list of questions, answers included); ValidationError naming
    the line and question of every malformed one."""
    document = json_files.load(data, what="gold file")
    if type(document) is not list:
        raise ValidationError(
            "expected the official A-OKVQA gold file, a JSON array of questions; found "
            + json_files.json_type(document)
        )
    problems = ProblemList()
    if not document:
        problems.add(Problem(None, "gold file contains no questions"))
    # (row, message, the row a duplicate's id is first on): lines are looked up only when something is wrong
    found: list[tuple[int, str, int | None]] = []
    first: dict[str, int] = {}
    for row, record in enumerate(document):
        if len(found) >= json_files.MAX_GOLD_PROBLEMS:
            break
        qid = record.get("question_id") if type(record) is dict else None
        if type(record) is dict and (type(qid) is not str or not qid):
            found.append((row, "missing or invalid 'question_id' (a non-empty string)", None))
            continue
        message = _record_problem(record)
        if message is not None:
            found.append((row, message, None))
        elif qid in first:
            found.append((row, f"duplicate question_id {show(qid)}", first[qid]))
        else:
            first[str(qid)] = row
    if found:
        lines = json_files.entry_lines(data, limit=found[-1][0] + 1)
        for row, message, earlier in found:
            where = "" if earlier is None else f" (first on line {lines[earlier]})"
            problems.add(at(lines[row], message + where))
    problems.raise_if_any()
    json_files.check_unicode(data, document, "gold file")  # ids are written in sample files and pages
    labels = np.empty((len(document), _LABEL_COLUMNS), dtype=np.uint64)
    labels[:, CORRECT] = [record["correct_choice_idx"] for record in document]
    labels[:, DIFFICULT] = [record["difficult_direct_answer"] for record in document]
    labels[:, CHOICE0:DIRECT0] = text_hashes(
        np.array([record["choices"] for record in document], dtype=object).reshape(-1, CHOICES)
    )
    labels[:, DIRECT0:] = text_hashes(
        np.array([record["direct_answers"] for record in document], dtype=object).reshape(-1, DIRECT_ANSWERS)
    )
    if labels[:, DIFFICULT].all():
        raise ValidationError(
            "every question is difficult_direct_answer: the direct-answer accuracy would count none (the official "
            "eval_predictions.py divides by zero)"
        )
    ids = np.empty(len(document), dtype=object)
    ids[:] = [record["question_id"] for record in document]
    fields = scalar_fields(document, exclude=set(_REQUIRED))
    return GoldSet(task, ids, labels, np.arange(len(document), dtype=np.int32), fields)


# --- predictions -------------------------------------------------------------------------------------------


class _Objects:
    """json.loads's object_pairs_hook: every object as a dict, remembering the ones that repeat a key (json.loads
    keeps the last value) and the document's own key-value pairs (its object is the last made)."""

    def __init__(self) -> None:
        self.repeating: set[int] = set()
        self.pairs: list[tuple[str, Any]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        made = dict(pairs)
        if len(made) != len(pairs):
            self.repeating.add(id(made))
        self.pairs = pairs
        return made


def _entry_problem(qid: str, value: object, repeating: set[int]) -> str | None:
    if type(value) is not dict:
        return (
            f"the prediction for question {show(qid)} is {json_files.json_type(value)}, not an object "
            '{"multiple_choice": ..., "direct_answer": ...}'
        )
    if id(value) in repeating:
        return f"the prediction for question {show(qid)} repeats a key"
    for key in (MC_KEY, DA_KEY):
        if key in value and type(value[key]) is not str:
            return f"{key!r} of question {show(qid)} is {json_files.json_type(value[key])}, not a string"
    return None


def parse(data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
    """An official predictions file -> uint64 (n,) in gold order (see the module docstring); ValidationError
    naming the id and line of every bad entry, and the questions without one."""
    objects = _Objects()
    document = json_files.load(
        data,
        max_bytes=max_bytes,
        max_values=_VALUES_PER_QUESTION * gold.n + _VALUES_SPARE,
        what="predictions file",
        object_pairs_hook=objects,
    )
    if type(document) is not dict:
        raise ValidationError(
            "expected the official A-OKVQA predictions format, one JSON object "
            '{"<question_id>": {"multiple_choice": ..., "direct_answer": ...}, ...}; found '
            + json_files.json_type(document)
        )
    pairs = objects.pairs
    keys = np.empty(len(pairs), dtype=object)
    keys[:] = [key for key, _ in pairs]
    positions = gold.id_index.get_indexer(pd.Index(keys, dtype=object)).astype(np.int64)
    bad = {
        row: message
        for row, (key, value) in enumerate(pairs)
        if (message := _entry_problem(key, value, objects.repeating)) is not None
    }
    if bad or len(document) != len(pairs) or len(pairs) != gold.n or (positions < 0).any():
        problems = ProblemList()
        lines = np.asarray(json_files.entry_lines(data), dtype=np.int64)
        problems.add_lines(lines, np.array(sorted(bad), dtype=np.int64), lambda row: bad[row])
        json_files.entry_problems(problems, positions, gold.n, lines, keys, lambda i: str(gold.ids[i]), "question")
        problems.raise_if_any()
    entries: list[dict[str, Any]] = [value for _, value in pairs]  # every one an object, checked above
    if not any(MC_KEY in entry or DA_KEY in entry for entry in entries):
        raise ValidationError(
            f"no entry has a {MC_KEY!r} or a {DA_KEY!r} key: nothing to score (the official format is "
            '{"<question_id>": {"multiple_choice": ..., "direct_answer": ...}, ...})'
        )
    mc = [entry.get(MC_KEY) for entry in entries]
    da = [entry.get(DA_KEY) for entry in entries]
    mc_hashes = _answer_hashes(mc, MC_KEY, keys, data)
    da_hashes = _answer_hashes(da, DA_KEY, keys, data)
    choices = gold.labels[positions, CHOICE0:DIRECT0]
    equal = choices == mc_hashes[:, None]
    codes = np.where(equal.any(axis=1), equal.argmax(axis=1), MC_OUTSIDE).astype(np.uint64)
    codes[mc_hashes == 0] = MC_MISSING
    predictions = np.empty(gold.n, dtype=np.uint64)
    predictions[positions] = (da_hashes << np.uint64(CODE_BITS)) | codes
    return predictions


def _answer_hashes(answers: list[str | None], key: str, ids: np.ndarray, data: bytes) -> np.ndarray:
    """Text hashes of the answers, 0 where there is none; ValidationError naming an answer that is not valid
    Unicode."""
    present = np.flatnonzero([answer is not None for answer in answers])
    hashes = np.zeros(len(answers), dtype=np.uint64)
    texts = [answers[i] for i in present.tolist()]
    try:
        hashes[present] = text_hashes(texts)
    except UnicodeEncodeError:
        lines = np.asarray(json_files.entry_lines(data), dtype=np.int64)
        problems = ProblemList()
        bad = present[_unencodable(texts)]
        problems.add_lines(
            lines, bad, lambda row: f"{key!r} of question {show(ids[row])} is not valid Unicode (a lone surrogate)"
        )
        problems.raise_if_any()
        raise ValidationError(f"a {key!r} answer is not valid Unicode") from None
    return hashes
