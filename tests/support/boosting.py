"""The boosting attack's pieces the red-team tests share: the attack's gold (identifiers and labels), a vector
written as a prediction file, the majority vote over kept vectors, and what one Ladder releases a record for."""

from __future__ import annotations

import json

import numpy as np

from app import synthetic
from app.evaluation import ladder as ladder_rule


def attack_gold(n: int, seed: int) -> tuple[bytes, list[str], np.ndarray]:
    """(gold file, identifiers, labels) of a synthetic NLVR2 split of n examples."""
    gold = synthetic.nlvr2_gold(n, split="test", seed=seed)
    rows = [json.loads(line) for line in gold.decode().splitlines()]
    return gold, [row["identifier"] for row in rows], np.array([row["label"].lower() == "true" for row in rows])


def prediction_file(identifiers: list[str], predictions: np.ndarray) -> bytes:
    words = np.where(predictions, "True", "False")
    return ("\n".join(f"{i},{w}" for i, w in zip(identifiers, words, strict=True)) + "\n").encode()


def majority_vote(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    share = rows.mean(axis=0)
    return np.where(share == 0.5, rng.random(rows.shape[1]) < 0.5, share > 0.5)


def ladder_keeps(vectors: np.ndarray, labels: np.ndarray) -> list[int]:
    """The vectors one Ladder over the whole sequence releases a new record for (one person's, however many
    teams it is sent through)."""
    steps = ladder_rule.run((vectors != labels).astype(float))
    return [i for i, step in enumerate(steps) if i == 0 or step.released_loss < steps[i - 1].released_loss]
