"""GQA's files: the official questions JSON (gold) and predictions JSON, read and refused as the official eval.py
needs them (see family.py's docstring); the choices file is choices.py's."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from app.evaluation import encoding, json_files
from app.evaluation.errors import Problem, ProblemList, ValidationError, at
from app.evaluation.gold import GoldSet, object_array
from app.evaluation.text_files import show

from .scoring import LABEL_DTYPE, GQAGold

FIELDS = ("structural", "semantic", "detailed")  # gold.fields: the question's types, for subsets
_VALUES_PER_ENTRY = 16  # JSON values a prediction file may hold per question (json_files.value_bound's count)


# --- the gold file ----------------------------------------------------------------------------------------


def _is_program(value: object) -> bool:
    """A 'semantic' program as the official getStepsNum reads it: a list of objects with operation and argument."""
    return type(value) is list and all(
        type(step) is dict and "operation" in step and "argument" in step for step in value
    )


@dataclass
class _Questions:
    """The gold file's columns, gathered while its questions are checked."""

    ids: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    balanced: list[bool] = field(default_factory=list)
    binary: list[bool] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)  # groups.global of balanced questions ("" for none)
    has_global: list[bool] = field(default_factory=list)
    entailed: list[str] = field(default_factory=list)  # a balanced question's entailed ids, joined
    images: list[str] = field(default_factory=list)
    types: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in FIELDS})
    entail_from: list[int] = field(default_factory=list)
    entail_to: list[int] = field(default_factory=list)


def _question_problem(qid: str, question: object, position: dict[str, int]) -> str | None:
    """What the official script (or the resampling by image) cannot use in one question, or None."""
    if type(question) is not dict:
        return "expected an object"
    if type(question.get("answer")) is not str:
        return "missing or invalid 'answer' (a string)"
    balanced = question.get("isBalanced")
    if type(balanced) is not bool:
        return "missing or invalid 'isBalanced' (true or false)"
    if type(question.get("question")) is not str:
        return "missing or invalid 'question' (a string: the official eval.py counts its words)"
    if not _is_program(question.get("semantic")):
        return (
            "missing or invalid 'semantic' (an array of steps with 'operation' and 'argument': the official eval.py "
            "counts them)"
        )
    if type(question.get("imageId")) is not str:
        return "missing or invalid 'imageId' (a string: questions are resampled by image)"
    if not balanced:
        return None  # the official script reads nothing else of an unbalanced question
    types = question.get("types")
    if type(types) is not dict or type(types.get("structural")) is not str or type(types.get("semantic")) is not str:
        return "missing or invalid 'types' (an object with the strings 'structural' and 'semantic')"
    groups = question.get("groups")
    if type(groups) is not dict or "global" not in groups or not isinstance(groups["global"], (str, type(None))):
        return "missing or invalid 'groups' (an object whose 'global' is a string or null)"
    entailed = question.get("entailed")
    if type(entailed) is not list or not all(type(eid) is str for eid in entailed):
        return "missing or invalid 'entailed' (an array of question ids)"
    absent = next((eid for eid in entailed if eid != qid and eid not in position), None)
    if absent is not None:
        return (
            f"entailed question {show(absent)} is not in the file (the official eval.py fails on it: upload the "
            "*_all_questions.json file, which holds every entailed question)"
        )
    return None


def _gather(qid: str, question: dict[str, Any], row: int, position: dict[str, int], into: _Questions) -> None:
    """One checked question's values into the columns."""
    balanced = question["isBalanced"]
    types = question.get("types")
    types = types if type(types) is dict else {}
    into.ids.append(qid)
    into.answers.append(question["answer"])
    into.balanced.append(balanced)
    into.binary.append(types.get("structural") != "query")
    into.images.append(question["imageId"])
    for name in FIELDS:
        value = types.get(name)
        into.types[name].append(value if type(value) is str else "")
    group = question["groups"]["global"] if balanced else None
    into.groups.append(group or "")
    into.has_global.append(group is not None)
    if balanced:
        entailed = [eid for eid in question["entailed"] if eid != qid]
        into.entailed.append("\x1f".join(entailed))
        into.entail_from.extend([row] * len(entailed))
        into.entail_to.extend(position[eid] for eid in entailed)
    else:
        into.entailed.append("")


def read_questions(data: bytes, task: str = "gqa") -> GQAGold:
    """The official questions file -> a GQAGold, in file order; ValidationError naming each bad question (its id
    and line), a file that is not an object of questions, or one without a balanced question."""
    questions = json_files.load(data, what="gold file")
    if type(questions) is not dict:
        raise ValidationError(
            "a GQA gold file is the official questions JSON: one object keyed by question id "
            '({"20968379": {"answer": ..., "isBalanced": ..., ...}, ...})'
        )
    if not questions:
        raise ValidationError("gold file contains no questions")
    json_files.check_unicode(data, questions, "gold file")  # answers and groups are hashed, types name subsets
    position = {qid: row for row, qid in enumerate(questions)}
    gathered = _Questions()
    bad: list[tuple[int, str, str]] = []
    for row, (qid, question) in enumerate(questions.items()):
        problem = _question_problem(qid, question, position)
        if problem is not None:
            bad.append((row, qid, problem))
            if len(bad) >= json_files.MAX_GOLD_PROBLEMS:
                break
        elif not bad:
            _gather(qid, question, row, position, gathered)
    if bad:
        _refuse(data, list(itertools.islice(questions, bad[-1][0] + 1)), bad)
    if not any(gathered.balanced):
        raise ValidationError(
            "the gold file has no balanced question ('isBalanced': true): the official eval.py scores those alone"
        )
    labels = np.zeros(len(gathered.ids), dtype=LABEL_DTYPE)
    labels["answer"] = encoding.text_hashes(gathered.answers)
    balanced = np.array(gathered.balanced, dtype=bool)
    has_global = np.array(gathered.has_global, dtype=bool)
    labels["global_group"] = np.where(has_global, encoding.text_hashes(gathered.groups), 0)
    labels["entailed"] = np.where(balanced, encoding.text_hashes(gathered.entailed), 0)
    labels["row"] = np.arange(len(gathered.ids))
    labels["balanced"] = balanced
    labels["binary"] = np.array(gathered.binary, dtype=bool)
    labels["has_global"] = has_global
    groups = pd.factorize(pd.Series(gathered.images, dtype=object), sort=False)[0].astype(np.int32)
    return GQAGold(
        task,
        object_array(gathered.ids),
        labels,
        groups,
        {name: object_array(values) for name, values in gathered.types.items()},
        entail_from=np.array(gathered.entail_from, dtype=np.int64),
        entail_to=np.array(gathered.entail_to, dtype=np.int64),
        file_n=len(gathered.ids),
    )


def _refuse(data: bytes, first: list[str], bad: list[tuple[int, str, str]]) -> None:
    """Raise the gold file's problems, each on the line its question starts on (no line where the file repeats a
    question id before the last of them: its entries and its questions then differ; one repeated only after it is
    named where it is first written). ``first``: the questions' ids up to the last bad one, in the parsed object's
    order. Only the entries up to the last bad one are looked at again: a file of millions costs its first ones."""
    keys, lines = json_files.key_lines(data, len(first))
    placed = keys == first
    problems = ProblemList()
    for row, qid, message in bad:
        text = f"question {show(qid)}: {message}"
        problems.add(at(lines[row], text) if placed else Problem(None, text))
    problems.raise_if_any()


# --- the predictions file ---------------------------------------------------------------------------------


def _aligned(entries: list[Any], gold: GoldSet) -> np.ndarray | None:
    """The usual file, checked column-wise: every gold question once, ids and predictions strings; else None."""
    if len(entries) != gold.n:
        return None
    try:
        ids = [entry["questionId"] for entry in entries]
        predicted = [entry["prediction"] for entry in entries]
    except (TypeError, KeyError, IndexError):
        return None
    if set(map(type, ids)) != {str} or set(map(type, predicted)) != {str} or set(map(type, entries)) != {dict}:
        return None
    positions = gold.id_index.get_indexer(pd.Index(ids, dtype=object))
    if (positions < 0).any():
        return None
    seen = np.zeros(gold.n, dtype=bool)
    seen[positions] = True
    if not seen.all():
        return None
    aligned = np.empty(gold.n, dtype=np.uint64)
    aligned[positions] = encoding.text_hashes(predicted)
    return aligned


def _entry_problem(entry: object) -> str | None:
    """What is wrong with one entry of a predictions file itself (its id's place in the gold aside), or None."""
    if type(entry) is not dict:
        return f'expected an object {{"questionId": ..., "prediction": ...}}, found {json_files.json_type(entry)}'
    qid = entry.get("questionId")
    if type(qid) is not str:
        found = "missing" if "questionId" not in entry else f"{json_files.json_type(qid)} {show(json.dumps(qid))}"
        return f"'questionId' must be a string (the gold file's ids are strings): {found}"
    if "prediction" not in entry:
        return f"question {show(qid)}: missing 'prediction'"
    if type(entry["prediction"]) is not str:
        return f"question {show(qid)}: 'prediction' must be a string, not {json_files.json_type(entry['prediction'])}"
    return None


def _refuse_predictions(data: bytes, entries: list[Any], gold: GoldSet) -> None:
    """Every problem of a predictions file that _aligned refused: each bad entry, unknown and repeated question
    (entry and line named), the questions without a prediction."""
    lines = np.asarray(json_files.entry_lines(data), dtype=np.int64)
    problems = ProblemList()
    ids: list[str | None] = []
    bad: list[int] = []
    for row, entry in enumerate(entries):
        qid = entry.get("questionId") if type(entry) is dict else None
        ids.append(qid if type(qid) is str else None)
        if qid is None or type(qid) is not str or type(entry.get("prediction")) is not str:
            bad.append(row)
    # Only the problems shown are put in words (a file may have a million bad entries).
    problems.add_lines(
        lines, np.asarray(bad, dtype=np.int64), lambda row: f"entry {row + 1:,}: {_entry_problem(entries[row])}"
    )
    named = np.flatnonzero(np.array([qid is not None for qid in ids], dtype=bool))
    names = [ids[row] for row in named.tolist()]
    positions = gold.id_index.get_indexer(pd.Index(names, dtype=object)).astype(np.int64)
    if np.bincount(positions[positions >= 0], minlength=gold.n).min(initial=1) == 0:
        problems.hint("the official eval.py needs a prediction for every question of the file, balanced or not")
    json_files.entry_problems(problems, positions, gold.n, lines[named], names, lambda i: str(gold.ids[i]), "question")
    problems.raise_if_any()
    raise AssertionError("unreachable: _aligned refused a file without a problem")


def parse_predictions(data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
    """The official predictions JSON -> (n,) uint64 text hashes of the predictions, aligned to the gold order."""
    entries = json_files.load(
        data, max_bytes=max_bytes, max_values=_VALUES_PER_ENTRY * gold.n + 1024, what="prediction file"
    )
    if type(entries) is not list:
        raise ValidationError(
            'expected a JSON array of {"questionId": ..., "prediction": ...} objects (the official GQA predictions '
            f"format), found {json_files.json_type(entries)}"
        )
    json_files.check_unicode(data, entries, "prediction file")  # a prediction is hashed as UTF-8
    aligned = _aligned(entries, gold)
    if aligned is None:
        _refuse_predictions(data, entries, gold)
    assert aligned is not None
    return aligned
