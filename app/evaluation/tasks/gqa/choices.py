"""GQA's choices file (``{tier}_choices.json``): per question id, the answers the official eval.py counts as
valid and as plausible, read into a compact form aligned to the gold file's rows.

The official file is one JSON object keyed by question id, ``{"<qid>": {"valid": [...], "plausible": [...]}}``,
with an entry for every question of the tier (the val file is hundreds of MB). The official script reads
``choices[qid]["valid"]`` and ``["plausible"]`` for the balanced questions alone, so only those are read here:
the file is walked one entry at a time (never parsed whole) and the other entries are skipped unread. What is
kept is the distinct answer lists (questions of one kind share one list), as sorted 64-bit hashes, and for each
gold row the list its valid and its plausible answers are (-1 where no list was kept).

What the official ``belongs(element, group, question)`` does, and so ``Choices.belongs``: the prediction is in
the list exactly (``element in group``: case and spaces count), except that for a question whose detailed type
contains "Common" the list is ``["color", "material", "shape"]`` whatever the file says.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from app.evaluation import encoding
from app.evaluation.errors import ProblemList, ValidationError, at
from app.evaluation.text_files import read_text, show

FORMAT = 1  # of the compact form (to_bytes); stored beside the gold file
COMMON = ("color", "material", "shape")  # belongs()'s list for a "Common" question, as the official script has it
COMMON_SET = 0  # the set id of COMMON in every Choices
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_MAX_PROBLEMS = 1000  # problems gathered before the reader stops looking


@dataclass(frozen=True)
class Choices:
    """The valid and plausible answer lists of a gold file's questions.

    valid, plausible: (n,) int32 set ids per gold row (-1: none kept; the row's question is not balanced);
    offsets: (S + 1,) int64 where each set's members start; members: each set's distinct answer hashes, sorted.
    Set COMMON_SET is COMMON."""

    valid: np.ndarray
    plausible: np.ndarray
    offsets: np.ndarray
    members: np.ndarray

    @property
    def n(self) -> int:
        return int(self.valid.size)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            format=np.array([FORMAT], dtype=np.int64),
            valid=self.valid,
            plausible=self.plausible,
            offsets=self.offsets,
            members=self.members,
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Choices:
        """The compact form to_bytes wrote; ValueError for anything else (it is not a maintainer's file)."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as stored:
                if int(stored["format"][0]) != FORMAT:
                    raise ValueError(f"stored choices of format {int(stored['format'][0])}; this code reads {FORMAT}")
                choices = cls(
                    valid=stored["valid"].astype(np.int32),
                    plausible=stored["plausible"].astype(np.int32),
                    offsets=stored["offsets"].astype(np.int64),
                    members=stored["members"].astype(np.uint64),
                )
        except (OSError, KeyError, IndexError) as exc:
            raise ValueError(f"not stored GQA choices: {exc}") from exc
        sets = choices.offsets.size - 1
        if choices.valid.shape != choices.plausible.shape or sets < 1 or choices.offsets[-1] != choices.members.size:
            raise ValueError("stored GQA choices are inconsistent")
        if max(int(choices.valid.max(initial=-1)), int(choices.plausible.max(initial=-1))) >= sets:
            raise ValueError("stored GQA choices are inconsistent")
        return choices

    @cached_property  # a gold set (and so its choices) is cached per process: the search is built once
    def lookup(self) -> Lookup:
        return Lookup.of(self)


@dataclass(frozen=True)
class Lookup:
    """Membership of (set, answer hash) pairs in one sorted search: each distinct member hash gets a code, each
    (set, member) pair the key set * codes + code."""

    codes: np.ndarray  # (V,) sorted distinct member hashes
    keys: np.ndarray  # (M,) int64 sorted keys of every (set, member)

    @classmethod
    def of(cls, choices: Choices) -> Lookup:
        codes = np.unique(choices.members)
        sets = np.repeat(np.arange(choices.offsets.size - 1, dtype=np.int64), np.diff(choices.offsets))
        keys = np.sort(sets * max(codes.size, 1) + np.searchsorted(codes, choices.members))
        return cls(codes, keys)

    def belongs(self, sets: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """(k, m) bool: each hash of `hashes` (k, m) in the set `sets` (m,) of its column (a set id >= 0)."""
        if self.codes.size == 0:
            return np.zeros(hashes.shape, dtype=bool)
        found = np.minimum(np.searchsorted(self.codes, hashes), self.codes.size - 1)
        known = self.codes[found] == hashes
        keys = sets.astype(np.int64)[None, :] * self.codes.size + found
        place = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        inside: np.ndarray = known & (self.keys[place] == keys)
        return inside


class _Sets:
    """Distinct answer lists, numbered as first met (COMMON first)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, ...], int] = {}
        self.lists: list[tuple[str, ...]] = []
        self.id_of(COMMON)

    def id_of(self, answers: list[str] | tuple[str, ...]) -> int:
        key = tuple(answers)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.lists)
            self.lists.append(key)
        return found

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        distinct = [np.unique(encoding.text_hashes(list(answers))) for answers in self.lists]
        sizes = np.array([members.size for members in distinct], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        members = np.concatenate(distinct).astype(np.uint64) if distinct else np.zeros(0, dtype=np.uint64)
        return offsets, members


def _entry_problem(value: object) -> str | None:
    if type(value) is not dict:
        return 'expected an object {"valid": [...], "plausible": [...]}'
    for key in ("valid", "plausible"):
        if key not in value:
            return f"missing '{key}' (the official eval.py reads it for every balanced question)"
        answers = value[key]
        if type(answers) is not list:
            return f"'{key}' must be an array of answers (strings)"
        bad = [answer for answer in answers if type(answer) is not str][:1]
        if bad:
            return f"'{key}' must hold strings only, found {json.dumps(bad[0])[:40]}"
        try:  # answers are hashed as UTF-8
            "".join(answers).encode("utf-8")
        except UnicodeEncodeError:
            return f"'{key}' holds text no UTF-8 can (a lone surrogate escape such as \\ud800)"
    return None


def read_choices(data: bytes, ids: np.ndarray, needed: np.ndarray, *, max_bytes: int | None = None) -> Choices:
    """The official choices file -> Choices aligned to the gold rows `ids`; the entries of the questions
    `needed` (the balanced ones: a bool mask over the rows) are kept and checked, every other entry skipped.

    ValidationError naming the line and question of each bad entry, a question repeated, a needed question
    without an entry, or a file that is not one JSON object."""
    text = read_text(data, max_bytes).decode("utf-8", errors="strict")
    n = int(ids.size)
    wanted = np.flatnonzero(needed)
    # Only the needed questions are looked up: a val file's 2 million ids would cost hundreds of MB as a dict.
    row_of = dict(zip(map(str, ids[wanted].tolist()), wanted.tolist(), strict=True))
    sets = _Sets()
    valid = np.full(n, -1, dtype=np.int32)
    plausible = np.full(n, -1, dtype=np.int32)
    seen_at = np.zeros(n, dtype=np.int64)  # the line each needed question's entry is on (0: not yet)
    problems = ProblemList()
    stopped = False  # at _MAX_PROBLEMS: the entries after it were not looked at
    position = _skip(text, 0)
    line, counted = 1, 0

    def line_at(offset: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, offset)
        counted = offset
        return line

    try:
        if not text.startswith("{", position):
            raise ValidationError(
                "a GQA choices file is the official {tier}_choices.json: one JSON object keyed by question id "
                '({"20968379": {"valid": [...], "plausible": [...]}, ...})'
            )
        position = _skip(text, position + 1)
        while not text.startswith("}", position):
            start = position
            key, position = _DECODER.raw_decode(text, position)
            position = _skip(text, position)
            if type(key) is not str or not text.startswith(":", position):
                raise _syntax(text, start, "expected a question id (a string) and a colon")
            position = _skip(text, position + 1)
            row = row_of.get(key, -1)
            if row >= 0:
                value, position = _DECODER.raw_decode(text, position)
                where = line_at(start)
                if seen_at[row]:  # json.load would keep the last silently: refused, as a repeated prediction is
                    problems.add(at(where, f"question {show(key)} is repeated (first on line {int(seen_at[row])})"))
                else:
                    seen_at[row] = where
                problem = _entry_problem(value)
                if problem is not None:
                    problems.add(at(where, f"question {show(key)}: {problem}"))
                else:
                    valid[row] = sets.id_of(value["valid"])
                    plausible[row] = sets.id_of(value["plausible"])
                del value
            else:
                _, position = _DECODER.raw_decode(text, position)  # not read by the official script: skipped
            position = _skip(text, position)
            if text.startswith(",", position):
                position = _skip(text, position + 1)
                if text.startswith("}", position):
                    raise _syntax(text, position, "a comma before the closing brace")
            elif not text.startswith("}", position):
                raise _syntax(text, position, "expected a comma or the closing brace")
            if problems.count >= _MAX_PROBLEMS:
                stopped = True
                break
        else:
            if _skip(text, position + 1) != len(text):
                raise _syntax(text, _skip(text, position + 1), "text after the object")
    except json.JSONDecodeError as exc:
        raise ValidationError(at(exc.lineno, f"invalid JSON ({exc.msg} at column {exc.colno})")) from None
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"the choices file is not valid JSON ({str(exc)[:200]})") from None
    missing = np.flatnonzero(needed & (seen_at == 0)) if not stopped else np.zeros(0, dtype=np.int64)
    for row in missing[:_MISSING_SHOWN].tolist():
        problems.add(
            f"no entry for balanced question {show(str(ids[row]))} (the official eval.py reads the choices of every "
            "balanced question)"
        )
    if missing.size > _MISSING_SHOWN:
        problems.add(f"... and {missing.size - _MISSING_SHOWN:,} more balanced questions without an entry")
    problems.raise_if_any()
    offsets, members = sets.table()
    return Choices(valid=valid, plausible=plausible, offsets=offsets, members=members)


_MISSING_SHOWN = 10


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match is not None else position


def _syntax(text: str, offset: int, message: str) -> ValidationError:
    return ValidationError(at(text.count("\n", 0, offset) + 1, f"invalid JSON: {message}"))


def check_covers(choices: Choices, ids: np.ndarray, needed: np.ndarray) -> None:
    """ValidationError unless `choices` has lists for every `needed` row of a gold file of these `ids` (a
    corrected gold file that makes a question balanced the stored choices did not keep)."""
    if choices.n != needed.size:
        raise ValidationError(f"the split's choices are for {choices.n:,} questions; the gold file has {needed.size:,}")
    missing = np.flatnonzero(needed & ((choices.valid < 0) | (choices.plausible < 0)))
    if missing.size:
        shown = ", ".join(show(str(ids[row])) for row in missing[:_MISSING_SHOWN].tolist())
        raise ValidationError(
            f"{missing.size:,} balanced questions have no entry in the split's choices file ({shown}): the official "
            "eval.py reads the choices of every balanced question"
        )
