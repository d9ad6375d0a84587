"""VCR's three judgements a question, Q->A, QA->R and Q->AR, from the five predicted choices (formats.parse_vcr)."""

from __future__ import annotations

import numpy as np


def staged(predictions: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-question correctness of Q->A, QA->R and Q->AR.

    predictions: int (n, 5) or (k, n, 5) = [answer argmax, rationale argmax given answer 0..3];
    labels: int (n, 2) = (answer_label, rationale_label). QA->R reads the rationale choice made
    given the *gold* answer, so it does not depend on the predicted answer.
    """
    predictions = np.asarray(predictions)
    answer, rationale = labels[:, 0].astype(np.intp), labels[:, 1]
    q_a = predictions[..., 0] == answer
    given_gold_answer = np.take_along_axis(
        predictions[..., 1:], np.broadcast_to(answer[:, None], predictions.shape[:-1] + (1,)), axis=-1
    )[..., 0]
    qa_r = given_gold_answer == rationale
    return q_a, qa_r, q_a & qa_r
