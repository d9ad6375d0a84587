"""A configured classification: one label an example from a declared vocabulary (case-sensitive or not),
scored by accuracy, and by consistency where examples are grouped. Multiple choice is one of these
(multiple_choice.py) with the options as its vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.evaluation import encoding
from app.evaluation.gold import GoldSet
from app.evaluation.metrics import accuracy
from app.evaluation.tasks.base import Columns, LabelVotes

from .config import Classification, MultipleChoice
from .configured_task import ConfiguredTask, json_value_text


class ClassificationTask(ConfiguredTask):
    """Predictions are class ids (positions in the vocabulary), stored one byte each (two past 255 classes)."""

    config: Classification | MultipleChoice

    def __init__(self, config: Classification | MultipleChoice):
        self.vocabulary = self._vocabulary(config)
        self.folded = self._folds(config)
        self._lookup = {self._fold(label): number for number, label in enumerate(self.vocabulary)}
        self.stored_dtype = np.dtype(np.uint8 if len(self.vocabulary) <= 256 else np.uint16)
        self.expected = self._expected()
        super().__init__(config)

    # --- the vocabulary ---------------------------------------------------------------------------------------

    def _vocabulary(self, config: Any) -> tuple[str, ...]:
        return tuple(config.labels)

    def _folds(self, config: Any) -> bool:
        return bool(config.case == "insensitive")

    def _fold(self, text: str) -> str:
        return text.lower() if self.folded else text

    def _expected(self) -> str:
        shown = ", ".join(self.vocabulary[:10]) + (", ..." if len(self.vocabulary) > 10 else "")
        return f"one of {shown}" + (" (any case)" if self.folded else "")

    def class_of(self, text: str | None) -> int:
        """The class id of a written label (stripped), -1 where it is none of the vocabulary."""
        return -1 if text is None else self._lookup.get(self._fold(text.strip()), -1)

    # --- gold and predictions ---------------------------------------------------------------------------------

    def _gold_label(self, value: Any) -> tuple[Any, str | None]:
        number = self.class_of(json_value_text(value))
        if number < 0:
            return None, f"missing or invalid {self.config.gold.label!r} ({self.expected})"
        return number, None

    def _gold_labels(self, labels: list[Any]) -> np.ndarray:
        return np.asarray(labels, dtype=np.int16)

    def _code(self, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        codes = np.fromiter((self.class_of(text) for text in texts.tolist()), dtype=np.int64, count=texts.size)
        valid = codes >= 0
        return np.where(valid, codes, 0).astype(self.stored_dtype), valid

    def _empty(self, gold: GoldSet) -> np.ndarray:
        return np.zeros(gold.n, dtype=self.stored_dtype)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    def encode(self, predictions: np.ndarray) -> bytes:
        return encoding.pack_fixed(predictions, self.stored_dtype)

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        return encoding.unpack_fixed(blob, (gold_n,), self.stored_dtype)

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        return encoding.unpack_fixed_many(blobs, (gold_n,), self.stored_dtype)

    # --- scores -----------------------------------------------------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        right: np.ndarray = np.asarray(stacked).astype(np.int64, copy=False) == gold.labels[None, :]
        return right

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        right = self.unit_correctness(gold, stacked)
        return self._columns(gold, lambda at: accuracy(right if at is None else right[:, at]), right, subsets)

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        k = stacked.shape[0]
        kind = np.int16 if len(self.vocabulary) > 127 else np.int8
        return [
            LabelVotes(
                self.config.gold.label,
                gold.labels.astype(kind),
                np.asarray(stacked).reshape(k, gold.n, 1).astype(kind),
                self.vocabulary,
            )
        ]

    # --- synthetic files --------------------------------------------------------------------------------------

    def _example_value(self, index: int) -> Any:
        return self.vocabulary[index % len(self.vocabulary)]

    def _synthetic_label(self, rng: np.random.Generator, index: int) -> Any:
        return self.vocabulary[int(rng.integers(len(self.vocabulary)))]

    def _answer_texts(self, gold_value: Any) -> tuple[Any, list[Any]]:
        number = self.class_of(json_value_text(gold_value))
        return self.vocabulary[number], [label for other, label in enumerate(self.vocabulary) if other != number]
