"""Task types: one class per benchmark family, registered by name.

A task type knows its gold format, its prediction format, its metrics and subsets, and how its
aligned predictions are stored. Adding a family means adding one registered class here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import encoding
from . import gold as gold_files
from . import predictions as prediction_files
from .gold import GoldSet
from .metrics import accuracy, consistency, vcr_staged
from .sealed import PARTS
from .subsets import balanced_unbalanced, field_subsets

Scores = dict[str, dict[str, float]]
TASK_TYPES: dict[str, TaskType] = {}


def register(cls: type[TaskType]) -> type[TaskType]:
    task = cls()
    TASK_TYPES[task.name] = task
    return cls


def get_task(name: str) -> TaskType:
    if not isinstance(name, str) or name not in TASK_TYPES:
        raise ValueError(f"unknown task type {name!r}; choose one of {', '.join(TASK_TYPES)}")
    return TASK_TYPES[name]


def read_gold(task: str, data: bytes) -> GoldSet:
    """Read the gold file of a task type by name (see TASK_TYPES)."""
    return get_task(task).read_gold(data)


@dataclass(frozen=True)
class LabelVotes:
    """One gold label field as the submissions vote on it, for a label audit."""

    field: str  # the gold file's field, e.g. "label" or "answer_label"
    gold: np.ndarray  # (n,) class ids of the gold labels
    votes: np.ndarray  # (k, n, m) class ids each submission predicts (m: votes per example, e.g. NLVR images)
    classes: tuple[str, ...]  # how each class id is written in the gold file


class TaskType:
    name: str
    label: str
    metrics: tuple[str, ...]
    primary_metric: str
    tie_break_metric: str | None
    subset_metrics: tuple[str, ...]

    # How a prediction file of this task is written, for the "How to submit" section of a benchmark.
    file_format: str
    example: tuple[str, str, str]  # three lines of a valid file

    def sample(self, gold: GoldSet) -> bytes:
        """A valid prediction file for ``gold``: every identifier (an input, never a label) with one
        constant prediction, to check the format end to end."""
        raise NotImplementedError

    def read_gold(self, data: bytes) -> GoldSet:
        raise NotImplementedError

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        """An uploaded prediction file -> array aligned to the gold order; raises ValidationError."""
        raise NotImplementedError

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        raise NotImplementedError

    def derive_subsets(self, gold: GoldSet, field: str | None = None) -> dict[str, np.ndarray]:
        """Subsets every split of this task gets, plus one per value of ``field`` if given."""
        subsets = self._derived_subsets(gold)
        if field:
            subsets.update(field_subsets(gold, field))
        return subsets

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        return {}

    def score(self, gold: GoldSet, predictions: np.ndarray, subsets: dict[str, np.ndarray] | None = None) -> Scores:
        """{'all': {metric: percentage}, subset: {subset metric: percentage}}; empty subsets are left out."""
        predictions = np.asarray(predictions)
        self._check_shape(predictions.shape, gold.n)
        return self.score_batch(gold, predictions[None], subsets)[0]

    def score_batch(
        self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray] | None = None
    ) -> list[Scores]:
        """``score`` for k submissions stacked on a leading axis, in one vectorised pass."""
        stacked = np.asarray(stacked)
        self._check_shape(stacked.shape[1:], gold.n)
        columns = self._score_columns(gold, stacked, subsets or {})
        # One conversion per column, then plain Python floats per submission.
        values = {
            subset: {metric: array.tolist() for metric, array in metrics.items()} for subset, metrics in columns.items()
        }
        return [
            {subset: {metric: column[i] for metric, column in metrics.items()} for subset, metrics in values.items()}
            for i in range(stacked.shape[0])
        ]

    def _score_columns(
        self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]
    ) -> dict[str, dict[str, np.ndarray]]:
        raise NotImplementedError

    def _check_shape(self, shape: tuple[int, ...], gold_n: int) -> None:
        expected = self.prediction_shape(gold_n)
        if tuple(shape) != expected:
            raise ValueError(f"{self.name} predictions must have shape {expected}, not {tuple(shape)}")

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        """The gold label fields of this task and what k stacked submissions predict for each."""
        raise NotImplementedError

    def encode(self, predictions: np.ndarray) -> bytes:
        raise NotImplementedError

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        raise NotImplementedError

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        """Stored predictions of k submissions -> one stacked array (k, *prediction_shape)."""
        raise NotImplementedError


class BinaryTask(TaskType):
    """True/false per example; accuracy and consistency over groups of examples (sentences)."""

    metrics = ("accuracy", "consistency")
    primary_metric = "accuracy"
    tie_break_metric = "consistency"
    subset_metrics = ("accuracy",)

    file_format = (
        "CSV, one line per example: identifier,prediction with prediction true or false (any "
        "case); an optional header line"
    )

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    def sample(self, gold: GoldSet) -> bytes:
        keys = gold.image_index if gold.n_images > 1 else gold.id_index
        return "".join(f"{key},true\n" for key in keys.tolist()).encode()

    def _score_columns(self, gold, stacked, subsets):
        k = stacked.shape[0]
        labels = gold.labels.reshape(gold.labels.shape + (1,) * (stacked.ndim - 2))
        correct = stacked.astype(bool, copy=False) == labels  # (k, n) or (k, n, images)
        per_example = correct.reshape(k, gold.n, -1).all(axis=-1)
        columns = {
            "all": {"accuracy": accuracy(correct.reshape(k, -1)), "consistency": consistency(per_example, gold.groups)}
        }
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {"accuracy": accuracy(correct[:, indices].reshape(k, -1))}
                if name in PARTS:  # a blind test's queried and sealed parts: whole groups, every metric
                    columns[name]["consistency"] = consistency(per_example[:, indices], gold.groups[indices])
        return columns

    def label_votes(self, gold, stacked):
        k = stacked.shape[0]
        return [
            LabelVotes(
                "label", gold.labels.astype(np.int8), stacked.reshape(k, gold.n, -1).astype(np.int8), ("false", "true")
            )
        ]

    def encode(self, predictions: np.ndarray) -> bytes:
        return encoding.pack_bools(predictions)

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        return encoding.unpack_bools(blob, self.prediction_shape(gold_n))

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        return encoding.unpack_bools_many(blobs, self.prediction_shape(gold_n))


@register
class NLVR2(BinaryTask):
    name = "nlvr2"
    label = "NLVR2"
    example = ("identifier,prediction", "test1-0-0-0,True", "test1-0-1-0,false")

    def read_gold(self, data: bytes) -> GoldSet:
        return gold_files.read_nlvr2(data, self.name)

    def parse(self, data, gold, max_bytes=None):
        return prediction_files.parse_binary(data, gold, max_bytes=max_bytes)

    def _derived_subsets(self, gold):
        return balanced_unbalanced(gold)


@register
class NLVRStructured(BinaryTask):
    name = "nlvr-structured"
    label = "NLVR (structured representations)"
    example = ("identifier,prediction", "1572-0,false", "1572-1,true")

    def read_gold(self, data: bytes) -> GoldSet:
        return gold_files.read_nlvr(data, self.name)

    def parse(self, data, gold, max_bytes=None):
        return prediction_files.parse_binary(data, gold, max_bytes=max_bytes, split_prefix=True)


@register
class NLVRImages(BinaryTask):
    """NLVR judged on its images: every example has 6 (box permutations k = 0..5), all to predict.

    Accuracy is over images; a sentence is consistent when all images of all its examples are right.
    """

    name = "nlvr-images"
    label = "NLVR (images)"
    n_images = prediction_files.IMAGES_PER_NLVR_EXAMPLE
    file_format = (
        "CSV, one line per image: image,prediction, the image named n-m-k (k = 0-5, with or without "
        "the split prefix and .png) and prediction true or false; an optional header line"
    )
    example = ("image,prediction", "dev-1572-0-0.png,true", "dev-1572-0-1.png,false")

    def read_gold(self, data: bytes) -> GoldSet:
        return gold_files.read_nlvr(data, self.name, n_images=self.n_images)

    def parse(self, data, gold, max_bytes=None):
        return prediction_files.parse_images(data, gold, max_bytes=max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, self.n_images)


@register
class VCR(TaskType):
    """Multiple choice in two stages: Q->A, QA->R (given the gold answer), Q->AR (both)."""

    name = "vcr"
    label = "VCR"
    file_format = (
        "CSV with a header naming annot_id, answer_0..answer_3 and rationale_conditioned_on_a0_0.."
        "rationale_conditioned_on_a3_3 (21 columns, any order); one line per question with a score "
        "per choice (the highest wins)"
    )
    example = (
        ",".join(prediction_files.VCR_COLUMNS),
        "val-0," + ",".join(["0.7", "0.1", "0.1", "0.1"] + ["0.25"] * 16),
        "val-1," + ",".join(["0.1", "0.6", "0.2", "0.1"] + ["0.25"] * 16),
    )

    def sample(self, gold: GoldSet) -> bytes:
        scores = ",".join(["1"] + ["0"] * (len(prediction_files.VCR_SCORE_COLUMNS) - 1))
        header = ",".join(prediction_files.VCR_COLUMNS)
        return (header + "\n" + "".join(f"{key},{scores}\n" for key in gold.ids.tolist())).encode()

    metrics = ("q_a", "qa_r", "q_ar")
    primary_metric = "q_ar"
    tie_break_metric = None
    subset_metrics = metrics

    def read_gold(self, data: bytes) -> GoldSet:
        return gold_files.read_vcr(data, self.name)

    def parse(self, data, gold, max_bytes=None):
        return prediction_files.parse_vcr(data, gold, max_bytes=max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, 5)

    def _score_columns(self, gold, stacked, subsets):
        staged = dict(zip(self.metrics, vcr_staged(stacked, gold.labels), strict=True))  # each (k, n)
        columns = {"all": {metric: accuracy(correct) for metric, correct in staged.items()}}
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {metric: accuracy(staged[metric][:, indices]) for metric in self.subset_metrics}
        return columns

    def label_votes(self, gold, stacked):
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
