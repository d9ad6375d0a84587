"""A configured multiple choice: k options an example, the answer written as its 0-based index or its letter
(A, B, ... in any case); scored as a classification over the options."""

from __future__ import annotations

import string
from typing import Any

from .classification import ClassificationTask
from .config import MultipleChoice


class MultipleChoiceTask(ClassificationTask):
    config: MultipleChoice

    def _vocabulary(self, config: Any) -> tuple[str, ...]:
        if config.answer == "letter":
            return tuple(string.ascii_uppercase[: config.options])
        return tuple(str(number) for number in range(config.options))

    def _folds(self, config: Any) -> bool:
        return True  # letters in any case; indices have none

    def _expected(self) -> str:
        if self.config_answer == "letter":
            return f"a letter from A to {self.vocabulary[-1]} (any case)"
        return f"an index from 0 to {self.vocabulary[-1]}"

    @property
    def config_answer(self) -> str:
        return "letter" if self.vocabulary[0] == "A" else "index"

    def _prediction_json(self, value: Any) -> str | None:
        if isinstance(value, bool):
            return None  # true is no option
        return super()._prediction_json(value)

    def _example_value(self, index: int) -> Any:
        value = self.vocabulary[index % len(self.vocabulary)]
        return value if self.config_answer == "letter" or self.config.predictions.format == "csv" else int(value)

    def _synthetic_label(self, rng: Any, index: int) -> Any:
        value = self.vocabulary[int(rng.integers(len(self.vocabulary)))]
        return value if self.config_answer == "letter" else int(value)

    def _answer_texts(self, gold_value: Any) -> tuple[Any, list[Any]]:
        right, wrong = super()._answer_texts(gold_value)
        if self.config_answer == "letter" or self.config.predictions.format == "csv":
            return right, wrong
        return int(right), [int(value) for value in wrong]
