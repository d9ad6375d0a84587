"""GQA's metrics as the official eval.py computes them (see family.py's docstring), over a GQAGold: the gold set
with the entailment of the whole file, and what the metrics read of it worked out once (_Scoring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from app.evaluation.gold import GoldSet

from .choices import COMMON_SET, Choices, Lookup

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
_CHUNK = 64  # submissions scored at a time by the consistency and the distribution (bounds their (k, m) arrays)
# Reported only where the split has the official choices file (flask splits add ... --choices).
CHOICES_METRICS = ("validity", "plausibility")


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
    choices: Choices | None = None  # the split's choices file, by file row (validity, plausibility)

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
    lookup: Lookup | None = None

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
                picked[common] = COMMON_SET
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
            names = ("accuracy", "binary", "open", "consistency", *(CHOICES_METRICS if self.lookup else ()))
            return dict.fromkeys(names, nothing)
        columns = {
            "accuracy": average(right[:, balanced]),
            "binary": average(right[:, inside(self.binary)]),
            "open": average(right[:, inside(self.open)]),
            "consistency": self._consistency(right, members),
        }
        for metric, belongs in self.choice_outcomes(stacked, balanced).items():
            columns[metric] = average(belongs)
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


def average(right: np.ndarray) -> np.ndarray:
    """The official avg(list) * 100 of each row of a (k, m) bool array: 0 for no columns."""
    if right.shape[1] == 0:
        return np.zeros(right.shape[0])
    averaged: np.ndarray = right.mean(axis=1) * 100.0
    return averaged


def whole(gold: GoldSet) -> GQAGold:
    if not isinstance(gold, GQAGold):
        raise TypeError(f"GQA scores a gold set read by its own read_gold, not {type(gold).__name__}")
    return gold


def scoring_of(gold: GoldSet) -> _Scoring:
    return whole(gold).scoring
