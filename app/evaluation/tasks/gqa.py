"""GQA: open answers to compositional questions about real images, scored as the official eval.py (of GQA 1.2).

Gold: the official questions JSON (``{tier}_all_questions.json``, or a balanced file), one object keyed by
question id. Submission: the official predictions JSON, ``[{"questionId": ..., "prediction": ...}]``, one entry
for every question of the gold file (the official script needs them all: unbalanced questions count only as
entailed questions in the consistency).

What the official script does (measured by running it: tests/differential/FINDINGS.md), and so this module:
- a prediction is right when it equals the gold answer exactly (case and spaces count, nothing is normalised);
- every metric is over the BALANCED questions alone; ``binary`` and ``open`` split them by structural type
  (``open``: "query", ``binary``: every other type, whatever the answer); ``accuracy``, ``binary``, ``open`` and
  the ``consistency`` are ``avg(list) * 100`` with ``avg([]) == 0``;
- ``consistency``: for every balanced question answered right whose ``entailed`` list (less its own id) is not
  empty, the share of those entailed questions (balanced or not; repeats count) answered right; their mean;
- ``distribution``: the chi-square of the predicted against the gold answer counts of each global group (over
  the group's gold answers only), averaged weighted by the group's questions, divided by 100; lower is better.
  A file with no balanced question in a global group has no distribution (the official script divides by zero
  there): it is left out of the scores rather than the file refused;
- ``validity`` and ``plausibility`` (only on a split with the official choices file: gqa_choices.py): the share of
  the balanced questions whose prediction is in the question's ``valid`` (``plausible``) list exactly, by
  ``belongs``: a question whose detailed type contains "Common" takes ``["color", "material", "shape"]`` as its
  list instead; ``avg(list) * 100``. A split without a choices file has neither metric (the official script
  would report 0 for both with the empty file it then needs).

Units: the balanced questions, each right or wrong on the primary metric (accuracy): the ranks' McNemar tests,
the Ladder's losses and the probe check count them alone. A bootstrap resamples images (a question's group is
its image): the questions of one image are not independent, and GQA asks many questions of each image.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .. import encoding, json_files, layout
from ..errors import Problem, ProblemList, ValidationError, at
from ..gold import GoldSet
from ..subsets import PARTS
from ..text_files import show
from . import gqa_choices, synthetic_files
from . import gqa_synthetic as synthetic
from .base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register

_PAPER = "https://arxiv.org/abs/1902.09506"

# One gold question, as the scoring reads it. A structured array, so that ``labels[indices]`` (a blind test's
# part: sealed.restrict) keeps every per-question value; the entailment of the whole file stays on the gold set
# (GQAGold), found again through "row".
LABEL_DTYPE = np.dtype(
    [
        ("answer", "<u8"),  # encoding.text_hashes of the gold answer
        ("global_group", "<u8"),  # text hash of groups.global (0 where none, or the question is not balanced)
        ("entailed", "<u8"),  # a hash of a balanced question's entailed ids (a correction of them is a change)
        ("row", "<i8"),  # the question's position in the gold file
        ("balanced", "?"),  # isBalanced: counted by every metric
        ("binary", "?"),  # structural type other than "query" (read on balanced questions alone)
        ("has_global", "?"),  # balanced with a global group: counted by the distribution
    ]
)
FIELDS = ("structural", "semantic", "detailed")  # gold.fields: the question's types, for subsets
SUBSET_FIELDS = ("structural", "semantic")  # the subsets every split gets, as the official per-type accuracies
_CHUNK = 64  # submissions scored at a time by the consistency and the distribution (bounds their (k, m) arrays)
_VALUES_PER_ENTRY = 16  # JSON values a prediction file may hold per question (json_files.value_bound's count)


def _no_rows() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


@dataclass(eq=False, repr=False)
class GQAGold(GoldSet):
    """A GQA gold set: the questions (labels: LABEL_DTYPE), and the entailment of the whole file as pairs of file
    rows (a balanced question, one of its entailed questions; its own id left out, repeats kept). A part made by
    ``dataclasses.replace`` (sealed.restrict) shares the pairs: those with both questions in the part count."""

    entail_from: np.ndarray = field(default_factory=_no_rows)
    entail_to: np.ndarray = field(default_factory=_no_rows)
    file_n: int = 0
    choices: gqa_choices.Choices | None = None  # the split's choices file, by file row (validity, plausibility)

    @cached_property
    def scoring(self) -> _Scoring:
        return _Scoring.of(self)


@dataclass(frozen=True)
class _Cells:
    """The distribution's (global group, gold answer) cells of the counted questions, sorted by group then answer."""

    rows: np.ndarray  # (m,) positions of the questions counted (balanced, with a global group)
    row_group: np.ndarray  # (m,) int64 group code of each
    answers: np.ndarray  # (A,) sorted distinct gold answer hashes of the cells
    keys: np.ndarray  # (C,) int64 sorted: group code * A + answer's position in `answers`
    expected: np.ndarray  # (C,) int64 gold count of each cell
    group_starts: np.ndarray  # (G,) where each group's cells start
    group_totals: np.ndarray  # (G,) float64 gold questions of each group

    @classmethod
    def of(cls, rows: np.ndarray, groups: np.ndarray, answers: np.ndarray) -> _Cells | None:
        if rows.size == 0:
            return None
        codes = pd.factorize(groups[rows])[0].astype(np.int64)
        pairs = np.stack([codes.astype(np.uint64), answers[rows]], axis=1)
        cells, counts = np.unique(pairs, axis=0, return_counts=True)  # sorted by (group, answer)
        distinct = np.unique(cells[:, 1])
        cell_group = cells[:, 0].astype(np.int64)
        keys = cell_group * distinct.size + np.searchsorted(distinct, cells[:, 1])
        starts = np.flatnonzero(np.r_[True, cell_group[1:] != cell_group[:-1]])
        totals = np.add.reduceat(counts, starts).astype(np.float64)
        return cls(rows, codes, distinct, keys, counts.astype(np.int64), starts, totals)

    def values(self, predicted: np.ndarray) -> np.ndarray:
        """The official distribution (chiSquare / 100) of k submissions' predictions on `rows` (k, m)."""
        k, size = predicted.shape[0], self.keys.size
        result = np.empty(k)
        for start in range(0, k, _CHUNK):
            block = predicted[start : start + _CHUNK]
            found = np.minimum(np.searchsorted(self.answers, block), self.answers.size - 1)
            known = self.answers[found] == block
            keys = self.row_group[None, :] * self.answers.size + found
            cell = np.minimum(np.searchsorted(self.keys, keys), size - 1)
            known &= self.keys[cell] == keys  # a predicted answer that is no gold answer of its group: not counted
            flat = (np.arange(block.shape[0])[:, None] * size + cell)[known]
            observed = np.bincount(flat, minlength=block.shape[0] * size).reshape(block.shape[0], size)
            # score += float(o - e) ** 2 / e over the group's gold answers; sumScore += score * overall
            chi = (observed - self.expected) ** 2 / self.expected
            per_group = np.add.reduceat(chi, self.group_starts, axis=1)
            result[start : start + _CHUNK] = (per_group * self.group_totals).sum(axis=1) / self.group_totals.sum() / 100
        return result


@dataclass(frozen=True)
class _Scoring:
    """What the metrics read of a gold set, worked out once per gold set (or part of one)."""

    answer: np.ndarray  # (n,) uint64
    balanced: np.ndarray  # (n,) bool
    binary: np.ndarray  # (n,) bool: balanced, structural type not "query"
    open: np.ndarray  # (n,) bool: balanced, structural type "query"
    global_group: np.ndarray  # (n,) uint64
    has_global: np.ndarray  # (n,) bool
    entail_from: np.ndarray  # (P,) positions, sorted (stable): balanced questions with entailed ones
    entail_to: np.ndarray  # (P,) positions of their entailed questions
    # With a choices file: each balanced question's valid and plausible set (belongs()'s list), -1 elsewhere.
    valid_set: np.ndarray | None = None
    plausible_set: np.ndarray | None = None
    lookup: gqa_choices.Lookup | None = None

    @classmethod
    def of(cls, gold: GQAGold) -> _Scoring:
        labels = gold.labels
        balanced = labels["balanced"].copy()
        position = np.full(max(gold.file_n, 1), -1, dtype=np.int64)
        position[labels["row"]] = np.arange(gold.n)
        source, target = position[gold.entail_from], position[gold.entail_to]
        kept = (source >= 0) & (target >= 0)  # a part keeps the pairs of its own questions
        order = np.argsort(source[kept], kind="stable")
        sets: dict[str, Any] = {}
        if gold.choices is not None:
            rows = labels["row"]
            # belongs(): a "Common" question's list is ["color", "material", "shape"] whatever the file says.
            detailed = pd.Series(gold.fields["detailed"], dtype=object)
            common = balanced & detailed.str.contains("Common", regex=False).to_numpy(dtype=bool, na_value=False)
            for name, by_row in (("valid_set", gold.choices.valid), ("plausible_set", gold.choices.plausible)):
                picked = np.where(balanced, by_row[rows], -1).astype(np.int32)
                picked[common] = gqa_choices.COMMON_SET
                sets[name] = picked
            sets["lookup"] = gold.choices.lookup
        return cls(
            answer=labels["answer"].copy(),
            balanced=balanced,
            binary=balanced & labels["binary"],
            open=balanced & ~labels["binary"],
            global_group=labels["global_group"].copy(),
            has_global=balanced & labels["has_global"],
            entail_from=source[kept][order],
            entail_to=target[kept][order],
            **sets,
        )

    def metrics(self, stacked: np.ndarray, right: np.ndarray, members: np.ndarray | None) -> dict[str, np.ndarray]:
        """Every metric of k submissions on the questions `members` (a bool mask; None: all), as the official
        script computes them on a questions file of those questions alone (entailed questions outside it left
        out, which only a part of a split can have)."""

        def inside(mask: np.ndarray) -> np.ndarray:
            rows: np.ndarray = np.flatnonzero(mask if members is None else mask & members)
            return rows

        k = stacked.shape[0]
        balanced = inside(self.balanced)
        if balanced.size == 0:
            nothing = np.full(k, np.nan)
            names = ("accuracy", "binary", "open", "consistency", *(GQA.choices_metrics if self.lookup else ()))
            return dict.fromkeys(names, nothing)
        columns = {
            "accuracy": _average(right[:, balanced]),
            "binary": _average(right[:, inside(self.binary)]),
            "open": _average(right[:, inside(self.open)]),
            "consistency": self._consistency(right, members),
        }
        for metric, belongs in self.choice_outcomes(stacked, balanced).items():
            columns[metric] = _average(belongs)
        cells = _Cells.of(inside(self.has_global), self.global_group, self.answer)
        if cells is not None:
            columns["distribution"] = cells.values(stacked[:, cells.rows])
        return columns

    def choice_outcomes(self, stacked: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        """{"validity": (k, m) bool, "plausibility": ...}: each prediction on the balanced questions `rows` in the
        question's valid (plausible) list, as the official belongs(); empty without a choices file."""
        if self.lookup is None or self.valid_set is None or self.plausible_set is None:
            return {}
        found = {}
        for metric, sets in (("validity", self.valid_set), ("plausibility", self.plausible_set)):
            inside = np.empty((stacked.shape[0], rows.size), dtype=bool)
            for start in range(0, stacked.shape[0], _CHUNK):  # bounds the (chunk, m) int64 keys of the search
                inside[start : start + _CHUNK] = self.lookup.belongs(sets[rows], stacked[start : start + _CHUNK, rows])
            found[metric] = inside
        return found

    def _consistency(self, right: np.ndarray, members: np.ndarray | None) -> np.ndarray:
        source, target = self.entail_from, self.entail_to
        if members is not None:
            kept = members[source] & members[target]
            source, target = source[kept], target[kept]
        k = right.shape[0]
        if source.size == 0:
            return np.zeros(k)  # avg([]) * 100
        starts = np.flatnonzero(np.r_[True, source[1:] != source[:-1]])
        heads = source[starts]
        sizes = np.diff(np.r_[starts, source.size]).astype(np.float64)
        result = np.empty(k)
        for start in range(0, k, _CHUNK):
            block = right[start : start + _CHUNK]
            # avg(scores of the entailed questions) for each question answered right...
            shares = np.add.reduceat(block[:, target].view(np.uint8), starts, axis=1, dtype=np.int64) / sizes
            chosen = block[:, heads]
            count = chosen.sum(axis=1)
            total = np.where(chosen, shares, 0.0).sum(axis=1)
            # ... and avg() of those, * 100 (0 when no question qualifies)
            result[start : start + _CHUNK] = np.where(count > 0, total / np.maximum(count, 1) * 100, 0.0)
        return result


def _average(right: np.ndarray) -> np.ndarray:
    """The official avg(list) * 100 of each row of a (k, m) bool array: 0 for no columns."""
    if right.shape[1] == 0:
        return np.zeros(right.shape[0])
    averaged: np.ndarray = right.mean(axis=1) * 100.0
    return averaged


AUDIT_CLASSES = ("no", "yes", "another answer")  # a label audit's classes (label_votes)
_NO_YES = encoding.text_hashes(["no", "yes"])


def _audit_class(hashes: np.ndarray) -> np.ndarray:
    """0 for "no", 1 for "yes", 2 for any other answer (int8, the shape of `hashes`)."""
    hashes = np.asarray(hashes)
    classes: np.ndarray = np.where(hashes == _NO_YES[0], 0, np.where(hashes == _NO_YES[1], 1, 2)).astype(np.int8)
    return classes


def _whole(gold: GoldSet) -> GQAGold:
    if not isinstance(gold, GQAGold):
        raise TypeError(f"GQA scores a gold set read by its own read_gold, not {type(gold).__name__}")
    return gold


def _scoring(gold: GoldSet) -> _Scoring:
    return _whole(gold).scoring


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
            "missing or invalid 'semantic' (a list of steps with 'operation' and 'argument': the official eval.py "
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
        return "missing or invalid 'entailed' (a list of question ids)"
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


def _object_array(values: Sequence[str]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


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
        _object_array(gathered.ids),
        labels,
        groups,
        {name: _object_array(values) for name, values in gathered.types.items()},
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


def _json_type(value: object) -> str:
    names = {
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "an array",
        dict: "an object",
    }
    return "null" if value is None else names.get(type(value), type(value).__name__)


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
        return f'expected an object {{"questionId": ..., "prediction": ...}}, found {_json_type(entry)}'
    qid = entry.get("questionId")
    if type(qid) is not str:
        found = "missing" if "questionId" not in entry else f"{_json_type(qid)} {show(json.dumps(qid))}"
        return f"'questionId' must be a string (the gold file's ids are strings): {found}"
    if "prediction" not in entry:
        return f"question {show(qid)}: missing 'prediction'"
    if type(entry["prediction"]) is not str:
        return f"question {show(qid)}: 'prediction' must be a string, not {_json_type(entry['prediction'])}"
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
            f"format), found {_json_type(entries)}"
        )
    json_files.check_unicode(data, entries, "prediction file")  # a prediction is hashed as UTF-8
    aligned = _aligned(entries, gold)
    if aligned is None:
        _refuse_predictions(data, entries, gold)
    assert aligned is not None
    return aligned


# --- the family -------------------------------------------------------------------------------------------


@register
class GQA(FixedDtypeTask):
    """GQA (Hudson and Manning 2019), scored exactly as its official eval.py: see the module docstring."""

    name = "gqa"
    stored_dtype = np.dtype(np.uint64)
    label = "GQA"
    unit_noun = "images"
    default_subset_fields = ()  # the rest of the typed subsets: a visitor's choice
    # As eval.py prints them. Binary and open count their balanced questions, accuracy all balanced ones; the
    # distribution is a chi-square (no percentage, lower is better), shown to four decimals and never ranked.
    declared_metrics = (
        Metric("accuracy", "Accuracy", "Acc.", counts="balanced questions"),
        Metric("binary", "Binary", "Bin.", counts="balanced binary questions"),
        Metric("open", "Open", counts="balanced open questions"),
        Metric("consistency", "Consistency", "Cons.", counts="entailed questions"),
        Metric("validity", "Validity", "Valid.", counts="balanced questions"),
        Metric("plausibility", "Plausibility", "Plaus.", counts="balanced questions"),
        Metric("distribution", "Distribution", "Distr.", unit="plain", lower_is_better=True, decimals=4, ranks=False),
    )
    # Reported only where the split has the official choices file (flask splits add ... --choices).
    choices_metrics = ("validity", "plausibility")
    # The paper's names of the structural and semantic types (eval.py prints the raw ones).
    subset_labels = {
        **{f"structural:{t}": t.capitalize() for t in ("verify", "query", "choose", "logical", "compare")},
        "semantic:rel": "Relation",
        "semantic:attr": "Attribute",
        "semantic:obj": "Object",
        "semantic:cat": "Category",
        "semantic:global": "Global",
    }
    # The consistency is a mean over the questions answered right (a ratio of sums over images only once the
    # right answers are known) and the distribution a chi-square: no group sums a bootstrap can resample.
    estimate_only_metrics = ("consistency", "distribution")
    primary_metric = "accuracy"
    # None: binary (or open) would favour one kind of question arbitrarily; GQA's own boards rank by accuracy.
    tie_break_metric = None
    subset_metrics = ("accuracy",)
    file_format = (
        'JSON, the official GQA predictions format: one array of {"questionId": "...", "prediction": "..."} '
        "objects, one for every question of the split (balanced or not: unbalanced ones count in the "
        "consistency), the prediction a string compared exactly with the answer (case and spaces count)"
    )
    file_suffix = "json"
    media_type = "application/json"
    example = (
        '[{"questionId": "20968379", "prediction": "no"},',
        '{"questionId": "20968380", "prediction": "left"},',
        '{"questionId": "201307251", "prediction": "table"}]',
    )

    def sample(self, gold: GoldSet) -> bytes:
        rows = ",\n".join(json.dumps({"questionId": qid, "prediction": "yes"}) for qid in gold.ids.tolist())
        return ("[\n" + rows + "\n]\n").encode("utf-8")

    def read_gold(self, data: bytes) -> GoldSet:
        return read_questions(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return parse_predictions(data, gold, max_bytes)

    def read_choices(self, gold: GoldSet, data: bytes, max_bytes: int | None = None) -> bytes:
        """The official choices file, checked against the gold set (ValidationError), in its compact stored
        form: the lists of the balanced questions alone, aligned to the gold rows."""
        questions = _whole(gold)
        balanced = _scoring(questions).balanced
        return gqa_choices.read_choices(data, questions.ids, balanced, max_bytes=max_bytes).to_bytes()

    def with_choices(self, gold: GoldSet, compact: bytes) -> GoldSet:
        """The gold set with the stored choices (read_choices' bytes) attached; ValidationError when they miss a
        balanced question of it (a corrected gold file may make one balanced)."""
        questions = _whole(gold)
        choices = gqa_choices.Choices.from_bytes(compact)
        gqa_choices.check_covers(choices, questions.ids, _scoring(questions).balanced)
        return replace(questions, choices=choices)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        """'structural:<type>' and 'semantic:<type>': the balanced questions of each type, as the official
        per-type accuracies (their sizes are its question counts)."""
        balanced = _scoring(gold).balanced
        subsets = {}
        for name in SUBSET_FIELDS:
            values = gold.fields[name]
            for value in sorted(set(values[balanced].tolist())):
                subsets[f"{name}:{value}"] = np.flatnonzero(balanced & (values == value)).astype(np.int32)
        return subsets

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        scoring = _scoring(gold)
        right = stacked == scoring.answer
        columns: Columns = {"all": scoring.metrics(stacked, right, None)}
        for name, indices in subsets.items():
            indices = np.asarray(indices, dtype=np.intp)
            counted = indices[scoring.balanced[indices]]
            if counted.size == 0:
                continue  # no balanced question: the official script reports no such type
            if name in PARTS:  # a blind test's queried and sealed parts: every metric
                members = np.zeros(gold.n, dtype=bool)
                members[indices] = True
                columns[name] = scoring.metrics(stacked, right, members)
            else:
                columns[name] = {"accuracy": _average(right[:, counted])}
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        """The answer as yes, no or another answer: a yes/no label the submissions contradict (about half of GQA's
        questions are yes/no) is found; open answers have no fixed classes, so they are one class here."""
        return [
            LabelVotes("answer", _audit_class(_scoring(gold).answer), _audit_class(stacked)[..., None], AUDIT_CLASSES)
        ]

    # --- units: the balanced questions ----------------------------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """(k, balanced questions) bool, in gold order: what accuracy counts."""
        scoring = _scoring(gold)
        rows = np.flatnonzero(scoring.balanced)
        correct: np.ndarray = np.asarray(stacked)[:, rows] == scoring.answer[rows]
        return correct

    def counted_units(self, gold: GoldSet, metric: str, indices: np.ndarray | None = None) -> int:
        """The balanced questions among `indices` (binary, open: of that kind). The consistency and the distribution
        count no units (estimate-only): the balanced questions are returned for them."""
        scoring = _scoring(gold)
        mask = {"binary": scoring.binary, "open": scoring.open}.get(metric, scoring.balanced)
        return int(np.count_nonzero(mask if indices is None else mask[np.asarray(indices)]))

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """Accuracy, binary and open (and with a choices file validity and plausibility) counted per question:
        right (1 or 0) where the metric counts the question, with one judgement a counted question and none
        another."""
        scoring = _scoring(gold)
        stacked = np.asarray(stacked)
        right = layout.by_example(stacked == scoring.answer)  # (n, k) uint8
        counts = {}
        for metric, mask in (("accuracy", scoring.balanced), ("binary", scoring.binary), ("open", scoring.open)):
            counted = mask.view(np.uint8)
            counts[metric] = (right * counted[:, None], counted)
        rows = np.flatnonzero(scoring.balanced)
        for metric, inside in scoring.choice_outcomes(stacked, rows).items():
            full = np.zeros(stacked.shape, dtype=bool)
            full[:, rows] = inside
            counts[metric] = (layout.by_example(full), scoring.balanced.view(np.uint8))
        return {"counts": counts, "all_right": right}

    def probe_distances(self, new: np.ndarray, stacked: np.ndarray) -> np.ndarray:
        """Without the gold set: the share of every question on which each earlier file differs. The probe check
        asks split_probe_distances, which counts the balanced questions alone (the units)."""
        return super().probe_distances(new, stacked)

    def split_probe_distances(self, gold: GoldSet, new: np.ndarray, blobs: Sequence[bytes]) -> np.ndarray:
        """The share of the balanced questions on which each stored file differs from the new one: a change to an
        unbalanced prediction moves no released figure, so it neither hides a probe nor makes one."""
        rows = np.flatnonzero(_scoring(gold).balanced)
        mine = np.asarray(new)[rows]
        distances = np.empty(len(blobs))
        for i, blob in enumerate(blobs):  # one blob at a time, read in place: a stack of all-questions files is large
            if len(blob) != 8 * gold.n:
                raise ValueError(f"stored predictions have {len(blob)} bytes; expected {8 * gold.n}")
            distances[i] = np.count_nonzero(np.frombuffer(blob, dtype="<u8")[rows] != mine) / max(rows.size, 1)
        return distances

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.gqa_gold(size, seed=seed)

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
        **options: Any,
    ) -> bytes:
        """Each prediction right with probability ``accuracy`` (an image's questions sharing one draw with
        probability ``group_correlation``); JSON has no header line."""
        accuracy = synthetic_files.check_accuracy("accuracy", accuracy)
        group_correlation = synthetic_files.check_accuracy("group_correlation", group_correlation)
        return synthetic.predictions(
            gold, accuracy, np.random.default_rng(seed), shuffle=shuffle, group_correlation=group_correlation
        )

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        """The paper's abstract: humans 89.3%, a blind LSTM 42.1% (accuracy)."""
        return [
            ("Human (Hudson and Manning 2019)", {"all": {"accuracy": 89.3}}, _PAPER),
            ("Blind LSTM (Hudson and Manning 2019)", {"all": {"accuracy": 42.1}}, _PAPER),
        ]
