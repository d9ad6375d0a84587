"""A-OKVQA: multiple choice and direct answers, scored exactly as the official ``eval_predictions.py``.

Official code: allenai/aokvqa @ 83786de0b24c4fef0bfe39420684f6f73d9f3581, evaluation/eval_predictions.py
(what it does, measured, in tests/differential/FINDINGS.md):

- ``mc_accuracy``: over every question, the predicted string equal to ``choices[correct_choice_idx]`` (exact,
  case- and space-sensitive); an answer that is none of the choices is wrong.
- ``da_accuracy``: over the questions whose ``difficult_direct_answer`` is false only, min(1, matches / 3) where
  matches counts the ten ``direct_answers`` equal to the prediction (exact; no normalisation, no leave-one-out).
- A question whose entry lacks one of the two keys scores 0 in that setting, as officially.

Where the app departs from the official script (it scores what it is given): a question absent from the file, an
id not in the gold file, a repeated id (json.load would keep the last), a value that is not an object, a key an
entry repeats and an answer that is not a string are refused, naming the id and its line; a file with neither key
anywhere is refused (the official prints no number at all). A file with no ``direct_answer`` anywhere scores
0 on it, every question's missing answer counting 0 (the official prints no direct-answer number for it).

Gold (``GoldSet.labels``, uint64 (n, 16)): column 0 ``correct_choice_idx``, column 1 ``difficult_direct_answer``
(1 or 0), columns 2-5 the choices' text hashes, columns 6-15 the ten direct answers' text hashes. A text hash is
``encoding.text_hashes`` shifted right by 3 bits (61 bits), 0 moved to 1 so that 0 never names a text.

A prediction is one uint64 a question (8 bytes stored, ``encoding.pack_fixed``): bits 0-2 the multiple-choice
answer, the index 0-3 of the first choice it equals, MC_OUTSIDE (none of the choices) or MC_MISSING (no
``multiple_choice`` key); bits 3-63 the direct answer's text hash, 0 where the entry has no ``direct_answer``.
Stored choice indices refer to the gold file's choices when the file was scored (a label correction that edits a
choice's text leaves them as they were; the direct answers are rescored from their hashes).

A question is one unit and one resampled group. mc_accuracy is right or wrong per question (McNemar ranks, the
Ladder, the probe check); da_accuracy is counted in points, 0-3 of 3 a question in its scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import encoding, json_files, layout
from ..errors import Problem, ProblemList, ValidationError, at
from ..gold import GoldSet, scalar_fields
from ..metrics import accuracy
from ..text_files import show
from . import aokvqa_synthetic as synthetic
from . import synthetic_files
from .base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register

CHOICES = 4
DIRECT_ANSWERS = 10
MC_OUTSIDE = CHOICES  # a multiple-choice answer that is none of the question's choices
MC_MISSING = CHOICES + 1  # no "multiple_choice" key in the question's entry
DA_MISSING = 0  # no "direct_answer" key in the question's entry
DA_POINTS = 3  # min(1, matches / 3): a question scores 0, 1, 2 or 3 thirds
_CODE_BITS = 3
_CODE_MASK = np.uint64((1 << _CODE_BITS) - 1)
# Label columns.
_CORRECT, _DIFFICULT, _CHOICE0, _DIRECT0 = 0, 1, 2, 2 + CHOICES
_LABEL_COLUMNS = _DIRECT0 + DIRECT_ANSWERS
# The prediction file's keys (the official eval_predictions.py reads these two and nothing else).
MC_KEY, DA_KEY = "multiple_choice", "direct_answer"
# JSON values a valid file can hold per question (value_bound: the entry, its two answers, the commas): room for a
# few keys more, and for the document itself.
_VALUES_PER_QUESTION = 8
_VALUES_SPARE = 64
_ROWS = 256  # entries judged at a time: bounds the (rows, n) temporaries of a large board
_REQUIRED = ("question_id", "choices", "correct_choice_idx", "direct_answers", "difficult_direct_answer")


def text_hashes(texts: Sequence[str] | np.ndarray) -> np.ndarray:
    """61-bit hashes of texts (uint64), never 0: how choices and answers are compared and stored. Raises
    UnicodeEncodeError for a text that is not valid Unicode (a lone surrogate escaped in JSON)."""
    hashed = encoding.text_hashes(texts) >> np.uint64(_CODE_BITS)
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


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


# --- gold --------------------------------------------------------------------------------------------------


def _is_strings(value: object, count: int) -> bool:
    return type(value) is list and len(value) == count and all(type(item) is str for item in value)


def _record_problem(record: object) -> str | None:
    """What is wrong with one question of a gold file (its id aside), or None."""
    if type(record) is not dict:
        return f"expected a JSON object (a question), found {_json_type(record)}"
    qid = show(record["question_id"])
    absent = [name for name in _REQUIRED if name not in record]
    if absent:
        return f"question {qid} has no {', '.join(repr(name) for name in absent)}"
    if not _is_strings(record["choices"], CHOICES):
        return f"'choices' of question {qid} is not a list of {CHOICES} strings"
    correct = record["correct_choice_idx"]
    if type(correct) is not int or not 0 <= correct < CHOICES:
        return f"'correct_choice_idx' of question {qid} is not an integer 0-{CHOICES - 1}"
    if not _is_strings(record["direct_answers"], DIRECT_ANSWERS):
        return f"'direct_answers' of question {qid} is not a list of {DIRECT_ANSWERS} strings"
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
            f"expected the official A-OKVQA gold file, a JSON list of questions; found {_json_type(document)}"
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
    labels[:, _CORRECT] = [record["correct_choice_idx"] for record in document]
    labels[:, _DIFFICULT] = [record["difficult_direct_answer"] for record in document]
    labels[:, _CHOICE0:_DIRECT0] = text_hashes(
        np.array([record["choices"] for record in document], dtype=object).reshape(-1, CHOICES)
    )
    labels[:, _DIRECT0:] = text_hashes(
        np.array([record["direct_answers"] for record in document], dtype=object).reshape(-1, DIRECT_ANSWERS)
    )
    if labels[:, _DIFFICULT].all():
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
            f"the prediction for question {show(qid)} is {_json_type(value)}, not an object "
            '{"multiple_choice": ..., "direct_answer": ...}'
        )
    if id(value) in repeating:
        return f"the prediction for question {show(qid)} repeats a key"
    for key in (MC_KEY, DA_KEY):
        if key in value and type(value[key]) is not str:
            return f"{key!r} of question {show(qid)} is {_json_type(value[key])}, not a string"
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
            '{"<question_id>": {"multiple_choice": ..., "direct_answer": ...}, ...}; found ' + _json_type(document)
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
    choices = gold.labels[positions, _CHOICE0:_DIRECT0]
    equal = choices == mc_hashes[:, None]
    codes = np.where(equal.any(axis=1), equal.argmax(axis=1), MC_OUTSIDE).astype(np.uint64)
    codes[mc_hashes == 0] = MC_MISSING
    predictions = np.empty(gold.n, dtype=np.uint64)
    predictions[positions] = (da_hashes << np.uint64(_CODE_BITS)) | codes
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


# --- the task type -----------------------------------------------------------------------------------------


@register
class AOKVQA(FixedDtypeTask):
    """A-OKVQA (Schwenk et al. 2022): multiple-choice accuracy over every question and direct-answer accuracy,
    min(1, matches / 3) over ten answers, over the questions not marked difficult."""

    name = "a-okvqa"
    stored_dtype = np.dtype(np.uint64)
    label = "A-OKVQA"
    unit_noun = "questions"
    default_subset_fields = ()  # the rest of the typed subsets: a visitor's choice
    # DA accuracy leaves out the questions marked difficult for direct answers (counted_units).
    declared_metrics = (
        Metric("mc_accuracy", "MC accuracy", "MC", counts="questions"),
        Metric("da_accuracy", "DA accuracy", "DA", counts="questions not marked difficult"),
    )
    primary_metric = "mc_accuracy"
    tie_break_metric = "da_accuracy"
    subset_metrics = ("mc_accuracy", "da_accuracy")
    file_suffix = "json"
    media_type = "application/json"
    file_format = (
        "JSON, the official A-OKVQA predictions file: one object mapping every question_id of the split to "
        '{"multiple_choice": one of its choices, "direct_answer": an answer}, compared exactly (case and spaces '
        "count); an entry may leave out either key, and then scores 0 in that setting"
    )
    example = (
        '{"22MexNkBPpdZGX6sxbxVBH": {"multiple_choice": "riding a bike", "direct_answer": "bike"},',
        ' "22jbM6gDxdaMaunuzgrsBB": {"multiple_choice": "summer", "direct_answer": "summer"},',
        ' "22kqa3Vg8CK5CEMzCDFVBK": {"multiple_choice": "dog", "direct_answer": "dogs"}}',
    )

    def sample(self, gold: GoldSet) -> bytes:
        entries = ",\n".join(
            f'{synthetic_files.dumps(qid)}: {{"{MC_KEY}": "yes", "{DA_KEY}": "yes"}}' for qid in gold.ids.tolist()
        )
        return ("{\n" + entries + "\n}\n").encode("utf-8")

    def read_gold(self, data: bytes) -> GoldSet:
        return read_gold(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return parse(data, gold, max_bytes=max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    # --- scoring ------------------------------------------------------------------------------------------

    def judged(self, gold: GoldSet, stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mc right: bool (k, n), direct-answer points: uint8 (k, n), 0-3 thirds, for every question, difficult
        or not) of k stacked predictions (k, n); entries a block at a time (the temporaries stay a few MB)."""
        stacked = np.asarray(stacked, dtype=np.uint64)
        labels = gold.labels
        correct = labels[:, _CORRECT].astype(np.uint8)
        choices = labels[:, _CHOICE0:_DIRECT0]
        # right[q, code]: the answer coded `code` is the right choice's text, twins of it included (a question that
        # repeats a choice: the official compares strings); such questions are looked at apart.
        right = np.zeros((gold.n, 1 << _CODE_BITS), dtype=bool)
        right[:, :CHOICES] = choices == choices[np.arange(gold.n), correct.astype(np.intp)][:, None]
        twins = np.flatnonzero(right.sum(axis=1) > 1)
        direct = np.ascontiguousarray(labels[:, _DIRECT0:].T)  # (10, n): one answer of every question a row
        k = stacked.shape[0]
        mc = np.empty((k, gold.n), dtype=bool)
        points = np.zeros((k, gold.n), dtype=np.uint8)
        equal = np.empty((min(k, _ROWS), gold.n), dtype=bool)
        for start in range(0, k, _ROWS):
            block = stacked[start : start + _ROWS]
            codes = (block & _CODE_MASK).astype(np.uint8)
            np.equal(codes, correct, out=mc[start : start + _ROWS])
            if twins.size:
                mc[start : start + _ROWS, twins] = right[twins, codes[:, twins]]
            answers = block >> np.uint64(_CODE_BITS)  # 0 (no answer) equals no gold answer's hash
            counted, same = points[start : start + _ROWS], equal[: block.shape[0]]
            for gold_answers in direct:
                np.equal(answers, gold_answers, out=same)
                counted += same
            np.minimum(counted, DA_POINTS, out=counted)
        return mc, points

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        mc, points = self.judged(gold, stacked)
        in_scope = gold.labels[:, _DIFFICULT] == 0

        def columns_of(indices: np.ndarray | None) -> dict[str, Any]:
            rows = np.arange(gold.n) if indices is None else np.asarray(indices)
            scope = rows[in_scope[rows]]
            found: dict[str, Any] = {"mc_accuracy": accuracy(mc[:, rows])}
            if scope.size:  # a subset of difficult questions alone has no direct-answer accuracy
                found["da_accuracy"] = points[:, scope].sum(axis=1, dtype=np.int64) / (DA_POINTS * scope.size) * 100.0
            return found

        columns = {"all": columns_of(None)}
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = columns_of(indices)
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        """The multiple-choice label: the choice each submission picks (the right one where it picked a twin of its
        text; -1, no class, where it picked none of the choices). The direct answers have no label to vote on."""
        stacked = np.asarray(stacked, dtype=np.uint64)
        correct = gold.labels[:, _CORRECT].astype(np.int8)
        mc, _ = self.judged(gold, stacked)
        codes = (stacked & _CODE_MASK).astype(np.int8)
        votes = np.where(mc, correct[None, :], np.where(codes < CHOICES, codes, -1)).astype(np.int8)
        return [LabelVotes("correct_choice_idx", correct, votes[..., None], tuple(str(c) for c in range(CHOICES)))]

    # --- units: a question, right or wrong on multiple choice ------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return self.judged(gold, stacked)[0]

    def counted_units(self, gold: GoldSet, metric: str, indices: np.ndarray | None = None) -> int:
        """Questions: every one for mc_accuracy, those not marked difficult for da_accuracy."""
        rows = slice(None) if indices is None else np.asarray(indices)
        if metric == "da_accuracy":
            return int(np.count_nonzero(gold.labels[rows, _DIFFICULT] == 0))
        return gold.n if indices is None else len(indices)

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """mc_accuracy one judgement a question; da_accuracy its points, 0-3 of 3 a question in its scope and none
        of a difficult one."""
        mc, points = self.judged(gold, stacked)
        difficult = gold.labels[:, _DIFFICULT] == 1
        points[:, difficult] = 0
        right = layout.by_example(mc)
        return {
            "counts": {
                "mc_accuracy": (right, 1),
                "da_accuracy": (layout.by_example(points), np.where(difficult, 0, DA_POINTS)),
            },
            "all_right": right,
            "points": {"da_accuracy": DA_POINTS},
        }

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.gold(size, seed=seed, split=split)

    def synthetic_predictions(
        self,
        gold: bytes,
        accuracy: float,
        seed: int = 0,
        *,
        header: bool = False,
        shuffle: bool = True,
        split: str = "dev",
        group_correlation: float = 0.0,
        da_accuracy: float | None = None,
        **options: Any,
    ) -> bytes:
        """An official predictions file: the right choice with probability ``accuracy``, a direct answer worth
        full credit with probability ``da_accuracy`` (default ``accuracy``), else one worth nothing. No header (a
        JSON document); a question is its own group, so ``group_correlation`` changes nothing."""
        accuracy = synthetic_files.check_accuracy("accuracy", accuracy)
        synthetic_files.check_accuracy("group_correlation", group_correlation)
        direct = accuracy if da_accuracy is None else synthetic_files.check_accuracy("da_accuracy", da_accuracy)
        return synthetic.predictions(np.random.default_rng(seed), gold, accuracy, direct, shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return []
