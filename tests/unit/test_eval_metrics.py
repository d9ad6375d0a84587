"""Metrics on small hand-made cases whose answers are worked out here."""

import numpy as np
import pytest

from app.evaluation.metrics import accuracy, consistency
from app.evaluation.tasks.vcr.scoring import staged as vcr_staged


def test_accuracy_is_a_percentage_of_correct_entries():
    assert accuracy(np.array([True, False, True, True])) == 75.0
    assert isinstance(accuracy(np.array([True])), float)


def test_accuracy_of_stacked_rows_is_per_row():
    stacked = np.array([[True, True, False, False], [True, True, True, True]])
    np.testing.assert_allclose(accuracy(stacked), [50.0, 100.0])


def test_consistency_counts_groups_whose_examples_are_all_correct():
    # Three groups (sentences):
    #   group 7: examples 0, 3, 5 -> all correct         -> consistent
    #   group 2: examples 1, 4    -> example 4 is wrong  -> not consistent
    #   group 9: example 2        -> correct             -> consistent
    # 2 of 3 groups are consistent -> 66.67 %, while accuracy is 5/6.
    correct = np.array([True, True, True, True, False, True])
    groups = np.array([7, 2, 9, 7, 2, 7])
    assert consistency(correct, groups) == pytest.approx(200 / 3)
    assert accuracy(correct) == pytest.approx(500 / 6)


def test_consistency_is_zero_when_every_group_has_a_mistake():
    correct = np.array([True, False, False, True])
    groups = np.array([0, 0, 1, 1])
    assert consistency(correct, groups) == 0.0


def test_consistency_of_stacked_rows_matches_each_row():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 40, size=300)
    stacked = rng.random((25, 300)) < 0.9
    batch = consistency(stacked, groups)
    assert batch.shape == (25,)
    for row, value in zip(stacked, batch, strict=True):
        by_group = {}
        for ok, group in zip(row.tolist(), groups.tolist(), strict=True):
            by_group[group] = by_group.get(group, True) and ok
        assert value == pytest.approx(100 * sum(by_group.values()) / len(by_group))


def test_vcr_staged_uses_the_rationale_given_the_gold_answer():
    labels = np.array([[2, 1], [0, 3], [1, 1]])  # (answer_label, rationale_label)
    predictions = np.array(
        [
            # answer, rationale argmax given answer 0, 1, 2, 3
            [2, 0, 0, 1, 0],  # Q->A right; given gold answer 2 the rationale is 1: right -> Q->AR right
            [1, 3, 0, 0, 0],  # Q->A wrong (1 != 0); given gold answer 0 the rationale is 3: QA->R right
            [1, 1, 0, 1, 1],  # Q->A right; given gold answer 1 the rationale is 0 != 1: QA->R wrong
        ]
    )
    q_a, qa_r, q_ar = vcr_staged(predictions, labels)
    assert q_a.tolist() == [True, False, True]
    assert qa_r.tolist() == [True, True, False]
    assert q_ar.tolist() == [True, False, False]


def test_vcr_staged_works_on_stacked_submissions():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=(50, 2))
    stacked = rng.integers(0, 4, size=(7, 50, 5)).astype(np.int8)
    batch = vcr_staged(stacked, labels)
    for k in range(7):
        single = vcr_staged(stacked[k], labels)
        for batched, alone in zip(batch, single, strict=True):
            np.testing.assert_array_equal(batched[k], alone)
