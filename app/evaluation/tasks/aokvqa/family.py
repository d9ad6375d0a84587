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

from typing import Any

import numpy as np

from app.evaluation import layout
from app.evaluation.gold import GoldSet
from app.evaluation.metrics import accuracy
from app.evaluation.tasks.base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register
from app.evaluation.tasks.synthetic_files import SyntheticOptions, dumps

from . import formats, synthetic
from .formats import (
    CHOICE0,
    CHOICES,
    CODE_BITS,
    CODE_MASK,
    CORRECT,
    DA_KEY,
    DA_POINTS,
    DIFFICULT,
    DIRECT0,
    MC_KEY,
)

_ROWS = 256  # entries judged at a time: bounds the (rows, n) temporaries of a large board


# --- the task type -----------------------------------------------------------------------------------------


@register
class AOKVQA(FixedDtypeTask):
    """A-OKVQA (Schwenk et al. 2022): multiple-choice accuracy over every question and direct-answer accuracy,
    min(1, matches / 3) over ten answers, over the questions not marked difficult."""

    name = "a-okvqa"
    list_position = 50
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
        entries = ",\n".join(f'{dumps(qid)}: {{"{MC_KEY}": "yes", "{DA_KEY}": "yes"}}' for qid in gold.ids.tolist())
        return ("{\n" + entries + "\n}\n").encode("utf-8")

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_gold(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse(data, gold, max_bytes=max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    # --- scoring ------------------------------------------------------------------------------------------

    def judged(self, gold: GoldSet, stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mc right: bool (k, n), direct-answer points: uint8 (k, n), 0-3 thirds, for every question, difficult
        or not) of k stacked predictions (k, n); entries a block at a time (the temporaries stay a few MB)."""
        stacked = np.asarray(stacked, dtype=np.uint64)
        labels = gold.labels
        correct = labels[:, CORRECT].astype(np.uint8)
        choices = labels[:, CHOICE0:DIRECT0]
        # right[q, code]: the answer coded `code` is the right choice's text, twins of it included (a question that
        # repeats a choice: the official compares strings); such questions are looked at apart.
        right = np.zeros((gold.n, 1 << CODE_BITS), dtype=bool)
        right[:, :CHOICES] = choices == choices[np.arange(gold.n), correct.astype(np.intp)][:, None]
        twins = np.flatnonzero(right.sum(axis=1) > 1)
        direct = np.ascontiguousarray(labels[:, DIRECT0:].T)  # (10, n): one answer of every question a row
        k = stacked.shape[0]
        mc = np.empty((k, gold.n), dtype=bool)
        points = np.zeros((k, gold.n), dtype=np.uint8)
        equal = np.empty((min(k, _ROWS), gold.n), dtype=bool)
        for start in range(0, k, _ROWS):
            block = stacked[start : start + _ROWS]
            codes = (block & CODE_MASK).astype(np.uint8)
            np.equal(codes, correct, out=mc[start : start + _ROWS])
            if twins.size:
                mc[start : start + _ROWS, twins] = right[twins, codes[:, twins]]
            answers = block >> np.uint64(CODE_BITS)  # 0 (no answer) equals no gold answer's hash
            counted, same = points[start : start + _ROWS], equal[: block.shape[0]]
            for gold_answers in direct:
                np.equal(answers, gold_answers, out=same)
                counted += same
            np.minimum(counted, DA_POINTS, out=counted)
        return mc, points

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        mc, points = self.judged(gold, stacked)
        in_scope = gold.labels[:, DIFFICULT] == 0

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
        correct = gold.labels[:, CORRECT].astype(np.int8)
        mc, _ = self.judged(gold, stacked)
        codes = (stacked & CODE_MASK).astype(np.int8)
        votes = np.where(mc, correct[None, :], np.where(codes < CHOICES, codes, -1)).astype(np.int8)
        return [LabelVotes("correct_choice_idx", correct, votes[..., None], tuple(str(c) for c in range(CHOICES)))]

    # --- units: a question, right or wrong on multiple choice ------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return self.judged(gold, stacked)[0]

    def counted_units(self, gold: GoldSet, metric: str, indices: np.ndarray | None = None) -> int:
        """Questions: every one for mc_accuracy, those not marked difficult for da_accuracy."""
        rows = slice(None) if indices is None else np.asarray(indices)
        if metric == "da_accuracy":
            return int(np.count_nonzero(gold.labels[rows, DIFFICULT] == 0))
        return gold.n if indices is None else len(indices)

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """mc_accuracy one judgement a question; da_accuracy its points, 0-3 of 3 a question in its scope and none
        of a difficult one."""
        mc, points = self.judged(gold, stacked)
        difficult = gold.labels[:, DIFFICULT] == 1
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

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """An official predictions file: the right choice with probability ``accuracy``, a direct answer worth
        full credit with probability ``da_accuracy`` (default ``accuracy``), else one worth nothing. No header (a
        JSON document); a question is its own group, so ``group_correlation`` changes nothing."""
        rng = np.random.default_rng(options.seed)
        return synthetic.predictions(rng, gold, options.accuracy, options.share("da_accuracy"), options.shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return []
