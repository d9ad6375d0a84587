"""VQA v2: open-ended answers scored by the official soft accuracy against ten human answers.

Exact to the official scorer (GT-Vision-Lab/VQA, PythonEvaluationTools/vqaEvaluation/vqaEval.py at
a013f0043c1e2cdc995922dfe257f7149aa9af06; tests/differential runs it), quirks included:
- answers (the humans' and the prediction) have newlines and tabs turned to spaces and are stripped;
- only when the ten stripped human answers are not all the same are they and the prediction normalised
  (punctuation, then periods, then lowercase, number words, articles, contractions); a unanimous "2" does not
  match a prediction "two", nor "yes" a "Yes";
- the period rule's regex `(?!<=\\d)(\\.)(?!\\d)` is a lookahead typo: every period not followed by a digit
  goes, and `re.UNICODE` lands in `count`, so only the first 32 of them do;
- a question's accuracy is the mean over the ten leave-one-out sets of nine humans of min(1, matches / 3):
  0, 30, 60, 90 and 100% for 0, 1, 2, 3 and 4 or more matching humans. Overall and per type: the mean over
  questions.

A question's accuracy is counted in points, 3m a question for m humans (30 for ten: 0/9/18/27/30), so the
statistics resample exact integer counts; ranks use a paired permutation test on the points
(statistics.paired_view_ranks), not McNemar's test. Predictions are stored as two 64-bit hashes a question,
of the stripped answer and of its normalised form (which one counts depends on the gold, so a corrected gold
file can be scored again); gold answers as hashes of the form that counts.
"""

from __future__ import annotations

import numpy as np

from app.evaluation import layout
from app.evaluation.gold import GoldSet
from app.evaluation.subsets import field_subsets
from app.evaluation.tasks.base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register
from app.evaluation.tasks.synthetic_files import SyntheticOptions

from . import formats, synthetic

_PAPER = "https://arxiv.org/abs/1612.00837"

# --- scoring --------------------------------------------------------------------------------------------------


def points_of(gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
    """(k, n) uint8: each question's accuracy in points of 3m (m humans): k matching humans score
    k min(3, k - 1) + (m - k) min(3, k), the sum of the m leave-one-out min(3, matches) (0/9/18/27/30 of 30).
    Stored results (a (k, n) uint8 matrix of these points: VQAv2.results) are given back as they are."""
    if stacked.ndim == 2 and stacked.dtype == np.uint8:
        return stacked
    answers = gold.labels["answers"]  # (n, m)
    humans = answers.shape[1]
    compared = np.where(gold.labels["normalise"][None, :], stacked[..., 1], stacked[..., 0])  # (k, n)
    out = np.empty(compared.shape, dtype=np.uint8)
    step = max(1, 4_000_000 // max(1, answers.size))  # (rows, n, m) comparisons at a time
    for start in range(0, compared.shape[0], step):
        matches = (answers[None] == compared[start : start + step, :, None]).sum(axis=2)
        left_in = np.minimum(3, np.maximum(matches - 1, 0))  # a matching human left out: the others match
        out[start : start + step] = matches * left_in + (humans - matches) * np.minimum(3, matches)
    return out


@register
class VQAv2(FixedDtypeTask):
    """Open-ended answers, soft accuracy against the humans' answers (see the module's docstring)."""

    name = "vqa-v2"
    list_position = 30
    stored_dtype = np.dtype(np.uint64)
    results_dtype = np.dtype(np.uint8)  # a question's points, 0..3m: what a board reads (see points_of)
    label = "VQA v2"
    unit_noun = "questions"
    default_subset_fields = ("answer_type",)  # the rest of the typed subsets: a visitor's choice
    declared_metrics = (Metric("accuracy", "Accuracy", "Acc.", counts="questions"),)
    # The official board's columns, in its order: Overall, Yes/No, Number, Other.
    subset_labels = {"answer_type:yes/no": "Yes/No", "answer_type:number": "Number", "answer_type:other": "Other"}
    primary_metric = "accuracy"
    tie_break_metric = None
    subset_metrics = ("accuracy",)
    file_format = (
        'The official results JSON: one array of {"question_id": <integer>, "answer": "<text>"}, one object per '
        "question of the split (other keys are ignored). Answers are compared as the official vqaEval.py "
        "compares them: stripped, and normalised (punctuation, number words, articles, case) only where the "
        "humans disagree"
    )
    rank_test = (
        "a paired permutation test on {metric} (each question's difference in points, its sign "
        "flipped at random under the null; normal approximation)"
    )
    file_suffix = "json"
    media_type = "application/json"
    example = (
        '[{"question_id": 262148000, "answer": "down"},',
        ' {"question_id": 262148001, "answer": "2"},',
        ' {"question_id": 262148002, "answer": "yes"}]',
    )

    def column_label(self, subset: str, metric: str, *, short: bool = False) -> str:
        """The official board's headers: Overall, and an answer type's accuracy by its name alone."""
        if subset == "all":
            return "Overall"
        if subset in self.subset_labels:
            return self.subset_labels[subset]
        return super().column_label(subset, metric, short=short)

    def sample(self, gold: GoldSet) -> bytes:
        entries = ",\n".join(f' {{"question_id": {question}, "answer": "yes"}}' for question in gold.ids.tolist())
        return f"[\n{entries}\n]\n".encode()

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_gold(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_results(data, gold, max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, 2)

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        subsets: dict[str, np.ndarray] = {}
        for field in ("answer_type", "question_type"):
            if field in gold.fields:
                subsets.update(field_subsets(gold, field))
        return subsets

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        points = points_of(gold, stacked).astype(np.float64)
        full = 3.0 * gold.labels["answers"].shape[1]
        columns = {"all": {"accuracy": points.mean(axis=1) / full * 100.0}}
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {"accuracy": points[:, indices].mean(axis=1) / full * 100.0}
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        return []  # ten free-text human answers: no label a vote could contradict

    # --- units: a question, scored in points ------------------------------------------------------------------

    def unit_points(self, gold: GoldSet) -> int:
        return 3 * int(gold.labels["answers"].shape[1])

    def unit_scores(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return points_of(gold, stacked)

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """Full credit (enough humans agree): what the probe check compares, a function of each question's
        prediction alone."""
        full: np.ndarray = points_of(gold, stacked) == self.unit_points(gold)
        return full

    def results(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return points_of(gold, stacked)

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """The points by example (no "all_right": no consistency here, and the primary metric is counted)."""
        points = points_of(gold, stacked)
        full = self.unit_points(gold)
        return {"counts": {"accuracy": (layout.by_example(points), full)}, "points": {"accuracy": full}}

    def zero_one_losses(self, gold: GoldSet, predictions: np.ndarray) -> np.ndarray:
        """The Ladder's losses: 1 - a question's accuracy (soft: 0, 0.1, 0.4, 0.7 or 1 with ten humans)."""
        points = points_of(gold, np.asarray(predictions)[None])[0]
        losses: np.ndarray = 1.0 - points / float(self.unit_points(gold))
        return losses

    # --- synthetic data ---------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.gold(size, seed)

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """A results file answering each question with its most common human answer (in one of its spellings)
        with probability ``accuracy``, else with a wrong answer of the same type."""
        return synthetic.predictions(gold, options.accuracy, options.seed, shuffle=options.shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return []
