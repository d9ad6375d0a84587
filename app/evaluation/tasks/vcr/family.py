"""VCR: multiple choice in two stages, Q->A, QA->R (given the gold answer) and Q->AR (both right)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.evaluation import encoding, layout
from app.evaluation.gold import GoldSet
from app.evaluation.metrics import accuracy
from app.evaluation.tasks.base import Columns, LabelVotes, Metric, Outcomes, Scores, TaskType, register
from app.evaluation.tasks.synthetic_files import SyntheticOptions

from . import formats, scoring, synthetic

_PAPER = "https://arxiv.org/abs/1811.10830"


@register
class VCR(TaskType):
    """Multiple choice in two stages: Q->A, QA->R (given the gold answer), Q->AR (both).

    A question is one unit and one resampled group, whichever of its five predicted choices is looked at."""

    name = "vcr"
    list_position = 20
    label = "VCR"
    unit_noun = "questions"
    file_format = (
        "CSV with a header naming annot_id, answer_0..answer_3 and rationale_conditioned_on_a0_0.."
        "rationale_conditioned_on_a3_3 (21 columns, any order); one line per question with a score "
        "per choice (the highest wins)"
    )
    example = (
        ",".join(formats.VCR_COLUMNS),
        "val-0," + ",".join(["0.7", "0.1", "0.1", "0.1"] + ["0.25"] * 16),
        "val-1," + ",".join(["0.1", "0.6", "0.2", "0.1"] + ["0.25"] * 16),
    )

    def sample(self, gold: GoldSet) -> bytes:
        scores = ",".join(["1"] + ["0"] * (len(formats.VCR_SCORE_COLUMNS) - 1))
        header = ",".join(formats.VCR_COLUMNS)
        return (header + "\n" + "".join(f"{key},{scores}\n" for key in gold.ids.tolist())).encode()

    # The order and names of the VCR paper and leaderboard.
    declared_metrics = (
        Metric("q_a", "Q→A", counts="questions"),
        Metric("qa_r", "QA→R", counts="questions"),
        Metric("q_ar", "Q→AR", counts="questions"),
    )
    primary_metric = "q_ar"
    tie_break_metric = None
    subset_metrics = ("q_a", "qa_r", "q_ar")

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_vcr(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_vcr(data, gold, max_bytes=max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, 5)

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        staged = dict(zip(self.metrics, scoring.staged(stacked, gold.labels), strict=True))  # each (k, n)
        columns = {"all": {metric: accuracy(correct) for metric, correct in staged.items()}}
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {metric: accuracy(staged[metric][:, indices]) for metric in self.subset_metrics}
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        answer = gold.labels[:, 0].astype(np.intp)
        # The rationale each submission picks given the gold answer, as QA->R scores it.
        rationale = np.take_along_axis(
            stacked[..., 1:], np.broadcast_to(answer[None, :, None], stacked.shape[:-1] + (1,)), axis=-1
        )
        choices = ("0", "1", "2", "3")
        return [
            LabelVotes("answer_label", gold.labels[:, 0], stacked[..., 0:1], choices),
            LabelVotes("rationale_label", gold.labels[:, 1], rationale, choices),
        ]

    def encode(self, predictions: np.ndarray) -> bytes:
        return encoding.pack_int8(predictions)

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        return encoding.unpack_int8(blob, self.prediction_shape(gold_n))

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        return encoding.unpack_int8_many(blobs, self.prediction_shape(gold_n))

    # --- units: a question, right when Q->AR is --------------------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return scoring.staged(stacked, gold.labels)[2]

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """Every stage counted, one judgement a question; all right when Q->AR is."""
        staged = [layout.by_example(outcome) for outcome in scoring.staged(stacked, gold.labels)]
        return {
            "counts": {m: (o, 1) for m, o in zip(self.metrics, staged, strict=True)},
            "all_right": staged[2],
        }

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.vcr_gold(size, seed=seed)

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """A score file (always with its header): the answer argmax right with probability ``accuracy``, the
        rationale given the gold answer with ``rationale_accuracy`` (default ``accuracy``), independently."""
        rng = np.random.default_rng(options.seed)
        return synthetic.predictions(rng, gold, options.accuracy, options.share("rationale_accuracy"), options.shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return [
            ("Human (Zellers et al. 2019)", {"all": {"q_a": 91.0, "qa_r": 93.0, "q_ar": 85.0}}, _PAPER),
            ("Chance", {"all": {"q_a": 25.0, "qa_r": 25.0, "q_ar": 6.25}}, _PAPER),
        ]
