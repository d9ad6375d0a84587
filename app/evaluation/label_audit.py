"""Which gold labels do the stored submissions most consistently contradict? A Dawid–Skene estimate.

Dawid & Skene (1979), "Maximum likelihood estimation of observer error-rates using the EM algorithm", in
its one-coin form: every voter j (a stored submission; and the gold file itself) gives the true class with
probability a_j and any other class with probability (1 - a_j) / (C - 1). EM alternates between the
posterior of each example's true class given all votes (E) and each voter's accuracy against those
posteriors (M), so a submission's vote weighs log(a_j (C - 1) / (1 - a_j)): an accurate submission
contradicting the gold counts for much, a near-chance one for almost nothing. Starting from the accuracy of
each submission against the gold, the gold file's own accuracy comes out as an estimate of the label
noise. An example is suspect by the posterior log-odds that its true class is not the gold one.

Pure numpy: votes in, estimates out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ITERATIONS = 100
TOLERANCE = 1e-7
# Accuracies stay inside (0, 1): a voter that agreed everywhere would otherwise get an infinite weight.
CLIP = 1e-4
GOLD_START = 0.95  # the gold file's accuracy before the first M-step


@dataclass(frozen=True)
class AuditEstimate:
    suspicion: np.ndarray  # (n,) log-odds that the true class is not the gold one (higher: more suspect)
    probability: np.ndarray  # (n,) posterior probability that the gold label is wrong
    likely: np.ndarray  # (n,) the most probable true class
    against: np.ndarray  # (n,) share of votes that differ from the gold label (unweighted)
    voter_accuracy: np.ndarray  # (k,) estimated accuracy of each voter
    gold_accuracy: float  # estimated share of right gold labels
    iterations: int

    def ranking(self) -> np.ndarray:
        """Example indices, most suspect first (ties: the larger share of contradicting votes, then order)."""
        n = self.suspicion.size
        order: np.ndarray = np.lexsort((np.arange(n), -self.against, -self.suspicion))
        return order


def _class_counts(votes: np.ndarray, classes: int) -> np.ndarray:
    """(C, k, n) how many of voter j's votes on example i are class c (several votes per example: images)."""
    return np.stack([(votes == c).sum(axis=2, dtype=np.int32) for c in range(classes)]).astype(np.float32)


def _log_weight(accuracy: np.ndarray, classes: int) -> np.ndarray:
    """How much a vote for a class raises its log-likelihood, for a voter of this accuracy."""
    accuracy = np.clip(accuracy, CLIP, 1 - CLIP)
    weight: np.ndarray = np.log(accuracy) - np.log((1 - accuracy) / (classes - 1))
    return weight


def dawid_skene(
    votes: np.ndarray, gold: np.ndarray, classes: int, *, iterations: int = ITERATIONS, tolerance: float = TOLERANCE
) -> AuditEstimate:
    """Estimate from `votes` (k voters, n examples, m votes per example and voter; class ids 0..C-1) and the
    `gold` labels (n,) how likely each gold label is wrong."""
    votes, gold = _checked(votes, gold, classes)
    k, n, m = votes.shape
    counts = _class_counts(votes, classes)  # (C, k, n)
    gold_onehot = np.eye(classes, dtype=np.float32)[gold]  # (n, C)
    # Each voter's accuracy against the gold labels, to start from.
    accuracy = np.einsum("ckn,nc->k", counts, gold_onehot).astype(np.float64) / (n * m)
    gold_accuracy = GOLD_START
    prior = np.full(classes, 1.0 / classes)
    log_post = np.zeros((n, classes))
    done = 0
    for done in range(1, iterations + 1):  # noqa: B007 (read after the loop: the iterations it took)
        log_post, new_accuracy, gold_accuracy, prior = _em_step(counts, gold_onehot, accuracy, gold_accuracy, prior, m)
        change = float(np.max(np.abs(new_accuracy - accuracy)))
        accuracy = new_accuracy
        if change < tolerance:
            break
    right_log = (log_post * gold_onehot).sum(axis=1)  # log P(true = gold)
    others = np.where(gold_onehot.astype(bool), -np.inf, log_post)
    wrong_log = np.logaddexp.reduce(others, axis=1)  # log P(true != gold)
    against = 1.0 - np.einsum("ckn,nc->n", counts, gold_onehot) / (k * m)
    return AuditEstimate(
        suspicion=wrong_log - right_log,
        probability=np.exp(wrong_log),
        likely=log_post.argmax(axis=1),
        against=against,
        voter_accuracy=np.clip(accuracy, 0.0, 1.0),
        gold_accuracy=gold_accuracy,
        iterations=done,
    )


def _checked(votes: np.ndarray, gold: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The votes as (k, n, m) and the gold labels as intp (n,); ValueError for what no audit can use."""
    votes = np.asarray(votes)
    if votes.ndim == 2:
        votes = votes[:, :, None]
    gold = np.asarray(gold, dtype=np.intp)
    k, n, _ = votes.shape
    if gold.shape != (n,):
        raise ValueError(f"gold labels must have shape ({n},), not {gold.shape}")
    if classes < 2:
        raise ValueError("a label audit needs at least two classes")
    if k == 0 or n == 0:
        raise ValueError("a label audit needs at least one submission and one example")
    return votes, gold


def _em_step(
    counts: np.ndarray, gold_onehot: np.ndarray, accuracy: np.ndarray, gold_accuracy: float, prior: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """One round of expectation-maximisation over n examples of m votes per voter: (log posterior (n, C), the
    voters' accuracies, the gold labels' accuracy, the class prior)."""
    classes, _, n = counts.shape
    weight = _log_weight(accuracy, classes).astype(np.float32)
    gold_weight = float(_log_weight(np.array([gold_accuracy]), classes)[0])
    # E-step: log P(true class c | votes), normalised per example.
    scores = np.einsum("k,ckn->nc", weight, counts).astype(np.float64) + gold_weight * gold_onehot
    scores += np.log(prior)
    log_post: np.ndarray = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
    post = np.exp(log_post)
    # M-step: accuracies against the posterior, class prior.
    new_accuracy: np.ndarray = np.einsum("ckn,nc->k", counts, post.astype(np.float32)).astype(np.float64) / (n * m)
    new_gold_accuracy = float((post * gold_onehot).sum() / n)
    new_prior: np.ndarray = np.clip(post.mean(axis=0), CLIP, None)
    new_prior /= new_prior.sum()
    return log_post, new_accuracy, new_gold_accuracy, new_prior
