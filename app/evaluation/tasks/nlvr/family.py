"""The NLVR family: true/false judgements of a sentence against images, scored by accuracy and consistency.

NLVR2 (photograph pairs), NLVR with structured representations (an example a line) and NLVR over images
(six box permutations an example, every one predicted) share everything but their gold reader, their file
names and, for NLVR2, the visual-bias subsets: one class, ``BinaryTask``, holds what they share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from app.evaluation import encoding, layout
from app.evaluation.gold import GoldSet
from app.evaluation.metrics import accuracy, consistency
from app.evaluation.subsets import PARTS
from app.evaluation.tasks.base import (
    ACCURACY,
    CONSISTENCY,
    Columns,
    LabelVotes,
    Metric,
    Outcomes,
    Scores,
    TaskType,
    register,
)
from app.evaluation.tasks.synthetic_files import SyntheticOptions

from . import formats, synthetic
from .visual_bias import balanced_unbalanced

_NLVR2_PAPER = "https://arxiv.org/abs/1811.00491"
_NLVR_PAPER = "https://aclanthology.org/P17-2034"


class BinaryTask(TaskType):
    """True/false per judgement (``n_images`` per example); accuracy over judgements and consistency over
    groups of examples (sentences)."""

    unit_noun = "sentences"
    n_images = 1  # judgements an example (NLVR images: 6)
    declared_metrics = (ACCURACY, CONSISTENCY)
    primary_metric = "accuracy"
    tie_break_metric = "consistency"
    subset_metrics = ("accuracy",)

    file_format = (
        "CSV, one line per example: identifier,prediction with prediction true or false (any "
        "case); an optional header line"
    )

    # Synthetic files: how their predictions are written, and an identifier's consistency group.
    words = ("true", "false")
    # Reference rows: the paper, its human performance and its majority class by split slug.
    paper: tuple[str, str, float] | None = None  # (citation, url, human accuracy)
    majority: Mapping[str, float] = {}

    def group_of(self, identifier: str) -> str:
        """The consistency group of an identifier in a synthetic gold file."""
        return synthetic.nlvr_group(identifier)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,) if self.n_images == 1 else (gold_n, self.n_images)

    def sample(self, gold: GoldSet) -> bytes:
        keys = gold.image_index if gold.n_images > 1 else gold.id_index
        return "".join(f"{key},true\n" for key in keys.tolist()).encode()

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
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

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
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

    # --- units: one per judgement (NLVR images: every image) ------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        k = stacked.shape[0]
        labels = gold.labels.reshape(gold.labels.shape + (1,) * (stacked.ndim - 2))
        correct: np.ndarray = stacked.astype(bool, copy=False) == labels
        return correct.reshape(k, -1)

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        if stacked.ndim > 2:
            return super().example_outcomes(gold, stacked)
        # One judgement an example: right-or-not straight into the by-example layout.
        k = stacked.shape[0]
        by_example = np.empty((gold.n, k), dtype=bool)
        judged = stacked.astype(bool, copy=False)
        rows = layout.TRANSPOSE_ROWS
        for at in range(0, k, rows):  # in row blocks, as layout.by_example: four times faster
            np.equal(judged[at : at + rows].T, gold.labels[:, None], out=by_example[:, at : at + rows])
        right = by_example.view(np.uint8)
        return {"counts": {"accuracy": (right, 1)}, "all_right": right}

    def probe_distances(self, new: np.ndarray, stacked: np.ndarray) -> np.ndarray:
        differs = stacked != new[None]
        distances: np.ndarray = differs.reshape(stacked.shape[0], -1).mean(axis=1)
        return distances

    def stored_probe_distances(self, new: np.ndarray, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        """The packed bits compared directly (a tenth of the time of unpacking them: ~2 ms for 1,000 NLVR2
        Test-U submissions)."""
        distances: np.ndarray = encoding.bit_differences(self.encode(new), blobs) / new.size
        return distances

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.nlvr_gold(size, seed=seed)

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """Each prediction (each image) right with probability ``accuracy``; ``group_correlation`` makes a
        consistency group share one draw with that probability. Other families' options are ignored."""
        return synthetic.predictions(
            gold,
            options.accuracy,
            np.random.default_rng(options.seed),
            group_of=self.group_of,
            n_images=self.n_images,
            words=self.words,
            header=options.header,
            shuffle=options.shuffle,
            split=options.split,
            group_correlation=options.group_correlation,
        )

    def synthetic_constant(
        self, gold: bytes, *, header: bool = False, shuffle: bool = False, split: str = "dev", seed: int = 0
    ) -> bytes:
        return synthetic.constant(
            gold,
            group_of=self.group_of,
            n_images=self.n_images,
            word=self.words[0],
            header=header,
            shuffle=shuffle,
            split=split,
            seed=seed,
        )

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        if self.paper is None:
            return []
        cite, url, human = self.paper
        rows: list[tuple[str, Scores, str]] = [(f"Human ({cite})", {"all": {"accuracy": human}}, url)]
        if split_slug in self.majority:
            rows.append((f"Majority class ({cite})", {"all": {"accuracy": self.majority[split_slug]}}, url))
        return rows


@register
class NLVR2(BinaryTask):
    name = "nlvr2"
    list_position = 10
    label = "NLVR2"
    example = ("identifier,prediction", "test1-0-0-0,True", "test1-0-1-0,false")
    words = ("True", "False")
    paper = ("Suhr et al. 2019", _NLVR2_PAPER, 96.2)
    majority = {"dev": 50.9, "test-p": 51.1, "test-u": 51.4}

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_nlvr2(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_binary(data, gold, max_bytes=max_bytes)

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        return balanced_unbalanced(gold)

    def group_of(self, identifier: str) -> str:
        return synthetic.nlvr2_group(identifier)

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.nlvr2_gold(size, split=split, seed=seed)


@register
class NLVRStructured(BinaryTask):
    """NLVR with structured representations: an example a line, identifiers n-m (sentence n)."""

    name = "nlvr-structured"
    list_position = 11
    label = "NLVR (structured representations)"
    example = ("identifier,prediction", "1572-0,false", "1572-1,true")
    paper = ("Suhr et al. 2017", _NLVR_PAPER, 95.4)
    majority = {"dev": 55.3, "test-p": 56.2, "test-u": 55.4}

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_nlvr(data, self.name, n_images=self.n_images)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_binary(data, gold, max_bytes=max_bytes, split_prefix=True)


@register
class NLVRImages(NLVRStructured):
    """NLVR judged on its images: every example has 6 (box permutations k = 0..5), all to predict.

    Accuracy is over images; a sentence is consistent when all images of all its examples are right.
    """

    name = "nlvr-images"
    list_position = 12
    label = "NLVR (images)"
    declared_metrics = (Metric("accuracy", "Accuracy", "Acc.", counts="images"), CONSISTENCY)
    n_images = formats.IMAGES_PER_NLVR_EXAMPLE
    file_format = (
        "CSV, one line per image: image,prediction, the image named n-m-k (k = 0-5, with or without "
        "the split prefix and .png) and prediction true or false; an optional header line"
    )
    example = ("image,prediction", "dev-1572-0-0.png,true", "dev-1572-0-1.png,false")

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_images(data, gold, max_bytes=max_bytes)

    def demo_split_options(self, split_slug: str) -> dict[str, Any]:
        """Image names carry the split prefix, as the official files do (``test-u`` -> ``testu``)."""
        return {"split": split_slug.replace("-", "")}
