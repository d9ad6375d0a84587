"""A configured short answer: free text compared with the gold answers after a declared normalisation.

``exact``: right when the prediction equals one of the example's gold answers (one, or a list of accepted ones).
``soft``: the official VQA accuracy over k annotators' answers: a prediction's accuracy is the mean, over the k
leave-one-out subsets of k - 1 annotators, of min(1, matches / 3) (counted here in points: min(3, matches) summed
over the subsets, 3k the most), and a split's the mean over its examples. With ``normalise: vqa`` the official
normalisation (app.evaluation.tasks.vqa_v2.formats.normalised, imported: one rule in one place) applies as the
official evaluation applies it: under soft scoring only where the annotators' stripped answers are not unanimous,
under exact scoring always. ``lower``: stripped and lowercased; ``none``: stripped only.

Predictions are stored as two 64-bit hashes an example, of its stripped text and of its normalised form (which
counts depends on the gold: a corrected gold file can be scored again without the uploads).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from app.evaluation import encoding, layout
from app.evaluation.gold import GoldSet
from app.evaluation.metrics import accuracy
from app.evaluation.tasks.base import Columns, LabelVotes, Outcomes
from app.evaluation.tasks.vqa_v2.formats import normalised, stripped

from .config import ShortAnswer
from .configured_task import ConfiguredTask

MAX_ANSWERS = 30  # gold answers an example at most (VQA v2 has ten annotators)
_WRONG = ("unanswerable", "nothing", "42", "purple", "elsewhere")  # synthetic wrong answers


class ShortAnswerTask(ConfiguredTask):
    config: ShortAnswer
    stored_dtype = np.dtype(np.uint64)

    def __init__(self, config: ShortAnswer):
        self.soft = config.scoring == "soft"
        self.expected = "a string"
        super().__init__(config)
        if self.soft:
            self.rank_test = (
                "a paired permutation test on {metric} (each example's difference in points, its sign "
                "flipped at random under the null; normal approximation)"
            )

    # --- forms ------------------------------------------------------------------------------------------------

    def _forms(self, texts: Sequence[str]) -> np.ndarray:
        """(len, 2) uint64: each text's stripped form and the form it is compared in when normalised, hashed;
        each distinct text once."""
        rule = self.config.normalise
        codes, distinct = pd.factorize(pd.Series(list(texts), dtype=object))
        forms = np.empty((len(distinct), 2), dtype=object)
        if rule == "vqa":
            forms[:, 0] = [stripped(text) for text in distinct.tolist()]
            forms[:, 1] = [normalised(text) for text in forms[:, 0].tolist()]
        else:
            forms[:, 0] = [text.strip() for text in distinct.tolist()]
            forms[:, 1] = [text.lower() for text in forms[:, 0].tolist()] if rule == "lower" else forms[:, 0]
        hashed: np.ndarray = encoding.text_hashes(forms)[codes] if len(distinct) else np.zeros((0, 2), np.uint64)
        return hashed.reshape(len(texts), 2)

    # --- gold -------------------------------------------------------------------------------------------------

    def _gold_label(self, value: Any) -> tuple[Any, str | None]:
        key = self.config.gold.answer_key
        name = self.config.gold.label
        if isinstance(value, str) and not self.soft:
            return [value], None
        if not isinstance(value, list) or not value or len(value) > MAX_ANSWERS:
            plural = "the annotators' answers" if self.soft else "an answer or a list of accepted answers"
            return None, f"missing or invalid {name!r} ({plural}: a list of 1 to {MAX_ANSWERS})"
        texts = value if key is None else [item.get(key) if isinstance(item, dict) else None for item in value]
        if not all(isinstance(text, str) for text in texts):
            item = f"an object with a string {key!r}" if key else "a string"
            return None, f"every answer in {name!r} must be {item}"
        return texts, None

    def _gold_labels(self, labels: list[Any]) -> np.ndarray:
        counts = {len(answers) for answers in labels}
        if self.soft and len(counts) > 1:
            from app.evaluation.errors import ValidationError

            raise ValidationError(
                f"every example must have the same number of annotators' answers; found {sorted(counts)}"
            )
        width = max(counts, default=1)
        padded = [answers + [answers[0]] * (width - len(answers)) for answers in labels]  # repeats change no match
        forms = self._forms([text for answers in padded for text in answers]).reshape(len(labels), width, 2)
        if self.config.normalise == "vqa" and self.soft:
            normalise = ~(forms[:, :, 0] == forms[:, :1, 0]).all(axis=1)  # the official rule: only where they differ
        else:
            normalise = np.ones(len(labels), dtype=bool)
        out = np.empty(len(labels), dtype=[("normalise", bool), ("answers", np.uint64, (width,))])
        out["normalise"] = normalise
        out["answers"] = np.where(normalise[:, None], forms[:, :, 1], forms[:, :, 0])
        return out

    # --- predictions ------------------------------------------------------------------------------------------

    def _prediction_json(self, value: Any) -> str | None:
        return value if isinstance(value, str) else None

    def _code(self, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        valid = np.fromiter((text is not None for text in texts.tolist()), dtype=bool, count=texts.size)
        values = np.zeros((texts.size, 2), dtype=np.uint64)
        if valid.any():
            values[valid] = self._forms(texts[valid].tolist())
        return values, valid

    def _empty(self, gold: GoldSet) -> np.ndarray:
        return np.zeros((gold.n, 2), dtype=np.uint64)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, 2)

    def encode(self, predictions: np.ndarray) -> bytes:
        return encoding.pack_fixed(predictions, self.stored_dtype)

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        return encoding.unpack_fixed(blob, (gold_n, 2), self.stored_dtype)

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        return encoding.unpack_fixed_many(blobs, (gold_n, 2), self.stored_dtype)

    # --- scores -----------------------------------------------------------------------------------------------

    def _matches(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """(k, n, m) bool: which gold answers each prediction equals, in the form the gold says counts."""
        stacked = np.asarray(stacked)
        compared = np.where(gold.labels["normalise"][None, :], stacked[..., 1], stacked[..., 0])
        matched: np.ndarray = compared[:, :, None] == gold.labels["answers"][None]
        return matched

    def unit_points(self, gold: GoldSet) -> int:
        return 3 * int(gold.labels["answers"].shape[1]) if self.soft else 1

    def unit_scores(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        if not self.soft:
            return super().unit_scores(gold, stacked)
        matched = self._matches(gold, stacked)
        total = matched.sum(axis=2, dtype=np.int64)
        points = np.zeros(total.shape, dtype=np.int64)
        for left_out in range(matched.shape[2]):  # the k leave-one-out subsets of k - 1 annotators
            points += np.minimum(3, total - matched[:, :, left_out])
        scored: np.ndarray = points.astype(np.uint8)
        return scored

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """Exact: a match. Soft: full credit (enough annotators agree), what the probe check compares."""
        if self.soft:
            full_credit: np.ndarray = self.unit_scores(gold, stacked) == self.unit_points(gold)
            return full_credit
        right = np.asarray(self._matches(gold, stacked).any(axis=2))
        return right

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        if self.soft:
            points = self.unit_scores(gold, stacked)
            full = float(self.unit_points(gold))
            counted = points.astype(np.float64)

            def scored(at: np.ndarray | None) -> np.ndarray:
                chosen: np.ndarray = (counted if at is None else counted[:, at]).mean(axis=1) / full * 100.0
                return chosen

            return self._columns(gold, scored, points == self.unit_points(gold), subsets)
        right = self.unit_correctness(gold, stacked)
        return self._columns(gold, lambda at: accuracy(right if at is None else right[:, at]), right, subsets)

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        if not self.soft:
            return super().example_outcomes(gold, stacked)
        points = self.unit_scores(gold, stacked)
        full = self.unit_points(gold)
        return {
            "counts": {"accuracy": (layout.by_example(points), full)},
            "all_right": layout.by_example((points == full).view(np.uint8)),
            "points": {"accuracy": full},
        }

    def zero_one_losses(self, gold: GoldSet, predictions: np.ndarray) -> np.ndarray:
        """1 - an example's accuracy (soft: a share of its points)."""
        points = self.unit_scores(gold, np.asarray(predictions)[None])[0]
        losses: np.ndarray = 1.0 - points / float(self.unit_points(gold))
        return losses

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        return []  # free text: no class a vote could contradict

    # --- synthetic files --------------------------------------------------------------------------------------

    _WORDS = ("red", "blue", "dog", "cat", "two", "three", "yes", "no", "kitchen", "beach")

    def _example_value(self, index: int) -> Any:
        return ("yes", "no", "two")[index % 3]

    def _synthetic_label(self, rng: np.random.Generator, index: int) -> Any:
        truth = self._WORDS[int(rng.integers(len(self._WORDS)))]
        if not self.soft:
            return truth
        answers = [truth if rng.random() < 0.7 else self._WORDS[int(rng.integers(len(self._WORDS)))] for _ in range(10)]
        key = self.config.gold.answer_key
        return [{key: text, "answer_id": j + 1} for j, text in enumerate(answers)] if key else answers

    def _answer_texts(self, gold_value: Any) -> tuple[Any, list[Any]]:
        answers, _ = self._gold_label(gold_value)
        answers = answers or [""]
        common = max(set(answers), key=answers.count)
        return common, [word for word in _WRONG if word not in answers]
