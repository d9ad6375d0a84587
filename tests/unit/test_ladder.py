"""The parameter-free Ladder against sequences worked out by hand, its 0/1 losses, and release rounding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import synthetic
from app.evaluation import get_task, ladder
from app.evaluation.ladder import Ladder


def vector(n: int, wrong) -> np.ndarray:
    losses = np.zeros(n)
    losses[list(wrong)] = 1.0
    return losses


def test_sequence_of_four_on_sixteen_examples():
    """n = 16, sqrt(n) = 4.

    1. wrong on 0-7: L = 0.5. First submission: s = std(l) = sqrt(16 * 0.25 / 15) = 0.5164, and R = inf, so
       R = 8/16 = 0.5 is released (accuracy 50%).
    2. wrong on 0-1: L = 0.125. l - best has six -1 and ten 0: mean -0.375, variance
       (6 * 0.625^2 + 10 * 0.375^2) / 15 = 0.25, s = 0.5, margin 0.125. 0.125 < 0.5 - 0.125: R = 2/16.
    3. wrong on 0 only: L = 0.0625. l - best has one -1: variance (0.9375^2 + 15 * 0.0625^2) / 15 = 0.0625,
       s = 0.25, margin 0.0625. 0.0625 < 0.125 - 0.0625 is false: R stays 0.125.
    4. wrong nowhere: L = 0. l - best has two -1: variance (2 * 0.875^2 + 14 * 0.125^2) / 15 = 0.1167,
       s = 0.3416, margin 0.0854. 0 < 0.125 - 0.0854 = 0.0396: R = 0.
    """
    steps = ladder.run([vector(16, range(8)), vector(16, [0, 1]), vector(16, [0]), vector(16, [])])
    assert [s.improved for s in steps] == [True, True, False, True]
    assert [s.released_loss for s in steps] == [0.5, 0.125, 0.125, 0.0]
    assert [s.threshold for s in steps] == pytest.approx(
        [math.sqrt(4 / 15) / 4, 0.5 / 4, 0.25 / 4, math.sqrt(1.75 / 15) / 4]
    )
    # Step 3 did not improve: the best vector is still the one of step 2.
    assert np.array_equal(steps[2].ladder.best_losses, vector(16, [0, 1]))
    # 16 examples: whole percentages tell every count apart (100/16 = 6.25 points between counts).
    assert [ladder.released_accuracy(s.ladder, 16) for s in steps] == [50.0, 88.0, 88.0, 100.0]


def test_equal_and_slightly_better_submissions_release_nothing_new():
    """n = 4. 1: wrong on 0, L = 0.25, released. 2: wrong nowhere, L = 0; l - best = (-1, 0, 0, 0) has
    s = 0.5, margin 0.25, and 0 < 0.25 - 0.25 is false. 3: the first vector again; s = 0, and
    0.25 < 0.25 is false."""
    steps = ladder.run([vector(4, [0]), vector(4, []), vector(4, [0])])
    assert [s.improved for s in steps] == [True, False, False]
    assert [s.released_loss for s in steps] == [0.25, 0.25, 0.25]
    assert [s.loss for s in steps] == [0.25, 0.0, 0.25]


def test_shared_ladders_step_the_stricter_and_share_a_new_best():
    """A team's Ladder and its account's (people, not teams): the step compares with the stricter; a new best
    becomes both's; otherwise each keeps (and releases) its own."""
    team, account = Ladder(), ladder.step(Ladder(), vector(16, [0, 1])).ladder  # the account's best: 2 wrong
    assert ladder.stricter([team, account]) is account and ladder.stricter([]) == Ladder()
    # 8 wrong through a fresh team: not better than the account's best, so the fresh team learns nothing.
    result, (team, account) = ladder.step_shared([team, account], vector(16, range(8)))
    assert not result.improved and not team.started and account.best_loss == 0.125
    # Wrong nowhere: better than the account's best by more than the margin; both Ladders take it.
    result, (team, account) = ladder.step_shared([team, account], vector(16, []))
    assert result.improved and team.best_loss == account.best_loss == 0.0
    assert team.best_losses is account.best_losses


def test_worse_submissions_never_lower_the_released_score():
    steps = ladder.run([vector(10, [0, 1]), vector(10, range(6)), vector(10, range(10))])
    assert [s.released_loss for s in steps] == [0.2, 0.2, 0.2]


def test_first_submission_is_always_released_even_when_constant():
    # All wrong: s = 0, and 1 < inf.
    step = ladder.step(Ladder(), np.ones(5))
    assert step.improved and step.released_loss == 1.0
    assert ladder.released_accuracy(step.ladder, 5) == 0.0


def test_a_lost_best_vector_falls_back_to_the_deviation_of_the_new_losses():
    """If the best submission is gone (deleted), only R is known: s = std(l) as for a first submission.
    n = 16, l wrong on 0-1: s = std of two 1s and fourteen 0s = sqrt(16 * 0.125 * 0.875 / 15) = 0.3416,
    margin 0.0854; 0.125 < 0.5 - 0.0854."""
    step = ladder.step(Ladder(best_loss=0.5, best_losses=None), vector(16, [0, 1]))
    assert step.improved and step.released_loss == 0.125
    assert step.threshold == pytest.approx(math.sqrt(16 * 0.125 * 0.875 / 15) / 4)


def test_released_loss_is_rounded_to_a_whole_count():
    # 1/3 of 3 examples is 0.333...; R is round(L * n) / n, not a float carrying noise.
    step = ladder.step(Ladder(), np.array([1.0, 0.0, 0.0]))
    assert step.released_loss == 1 / 3
    assert ladder.released_accuracy(step.ladder, 3) == 67.0


def test_mismatched_lengths_and_empty_vectors_are_refused():
    first = ladder.step(Ladder(), np.zeros(4))
    with pytest.raises(ValueError, match="differ in length"):
        ladder.step(first.ladder, np.zeros(5))
    with pytest.raises(ValueError, match="at least one"):
        ladder.step(Ladder(), np.zeros(0))


def test_nothing_is_released_before_the_first_submission():
    assert ladder.released_accuracy(Ladder(), 100) is None


def test_random_submissions_rarely_raise_the_released_score():
    """The point of the Ladder: 200 random vectors on 2,000 examples raise the released score a few
    times at most (a record needs a paired margin of about 1.6 points), where exact scores would show
    every lucky draw."""
    rng = np.random.default_rng(0)
    steps = ladder.run((rng.random((200, 2000)) < 0.5).astype(float))
    assert 1 <= sum(s.improved for s in steps) <= 5
    released = [s.released_loss for s in steps]
    assert released == sorted(released, reverse=True)  # never goes back up


# --- 0/1 losses per task -------------------------------------------------------------------------------


def test_binary_losses_are_per_example():
    task = get_task("nlvr2")
    gold = task.read_gold(synthetic.nlvr2_gold(16, seed=3))
    predictions = gold.labels.copy()
    predictions[[2, 5]] = ~predictions[[2, 5]]
    assert np.array_equal(np.flatnonzero(ladder.zero_one_losses(task, gold, predictions)), [2, 5])


def test_nlvr_images_losses_are_per_image_flattened():
    task = get_task("nlvr-images")
    gold = task.read_gold(synthetic.nlvr_gold(8, seed=3))
    predictions = np.repeat(gold.labels[:, None], 6, axis=1)
    predictions[1, 4] = ~predictions[1, 4]
    losses = ladder.zero_one_losses(task, gold, predictions)
    assert losses.shape == (8 * 6,)
    assert np.flatnonzero(losses).tolist() == [1 * 6 + 4]
    # The Ladder's mean loss is 1 - accuracy over images, as scored.
    accuracy = task.score(gold, predictions)["all"]["accuracy"]
    assert 100 * (1 - losses.mean()) == pytest.approx(accuracy)


def test_vcr_losses_are_q_ar_per_question():
    task = get_task("vcr")
    gold = task.read_gold(synthetic.vcr_gold(6, seed=3))
    answer, rationale = gold.labels[:, 0].astype(int), gold.labels[:, 1].astype(int)
    predictions = np.zeros((6, 5), dtype=np.int8)
    predictions[:, 0] = answer
    predictions[np.arange(6), 1 + answer] = rationale
    predictions[1, 0] = (answer[1] + 1) % 4  # wrong answer: Q->AR wrong
    predictions[3, 1 + answer[3]] = (rationale[3] + 1) % 4  # wrong rationale given the gold answer
    predictions[4, 1 + (answer[4] + 1) % 4] = (rationale[4] + 1) % 4  # a choice that is never scored
    assert ladder.zero_one_losses(task, gold, predictions).tolist() == [0, 1, 0, 1, 0, 0]
    assert pytest.approx(task.score(gold, predictions)["all"]["q_ar"]) == 100 * (1 - 2 / 6)


# --- rounding to the count resolution ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "decimals"),
    [(1, 0), (7, 0), (100, 0), (101, 1), (1000, 1), (1001, 2), (6967, 2), (10000, 2), (10001, 3), (26534, 3)],
)
def test_count_decimals(n, decimals):
    assert ladder.count_decimals(n) == decimals


@pytest.mark.parametrize("n", [1, 3, 7, 16, 99, 100, 101, 400, 999, 1000, 1001, 1996, 6967, 10000, 10001])
def test_rounded_percentages_identify_every_count_and_no_more(n):
    decimals = ladder.count_decimals(n)
    values = [ladder.percentage_of_count(k, n) for k in range(n + 1)]
    assert len(set(values)) == n + 1  # every count keeps its own value...
    assert [int(round(v * n / 100)) for v in values] == list(range(n + 1))  # ...and can be read back
    assert all(round(v, decimals) == v for v in values)
    if decimals:  # ...and one decimal fewer would merge some counts
        assert len({round(100 * k / n, decimals - 1) for k in range(n + 1)}) < n + 1


def test_round_percentage_snaps_float_noise_to_the_count():
    assert ladder.round_percentage(100 * 3493 / 6967 + 1e-9, 6967) == round(100 * 3493 / 6967, 2) == 50.14


def test_round_percentage_to_the_whole_splits_decimals():
    """A subset's figure on a blind test: its own count, written to the whole split's resolution (2 decimals on
    6,967 examples), not its own (1 on 725), whose number of decimals would tell its size's magnitude."""
    assert ladder.round_percentage(100 * 581 / 725, 725) == 80.1
    assert ladder.round_percentage(100 * 581 / 725 + 1e-9, 725, ladder.count_decimals(6967)) == 80.14


def test_widen_to_rounds_an_interval_outward():
    assert ladder.widen_to(71.234, 73.021, 2) == (71.23, 73.03)
    assert ladder.widen_to(71.23, 73.02, 2) == (71.23, 73.02)  # already written to 2 decimals: unchanged
    assert ladder.widen_to(71.2300000001, 73.0199999999, 2) == (71.23, 73.02)  # float noise is not a step
    assert ladder.widen_to(0.04, 99.96, 0) == (0.0, 100.0)


# --- properties ----------------------------------------------------------------------------------------

SEQUENCES = st.integers(2, 40).flatmap(
    lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=12)
)


@settings(max_examples=200, deadline=None)
@given(SEQUENCES)
def test_released_loss_only_falls_and_is_always_a_submitted_loss(sequence):
    vectors = [np.array(v, dtype=float) for v in sequence]
    steps = ladder.run(vectors)
    assert steps[0].improved
    released = [s.released_loss for s in steps]
    assert released == sorted(released, reverse=True)
    n = len(sequence[0])
    best = None
    for vector, step in zip(vectors, steps, strict=True):
        if step.improved:
            best = vector
            assert step.released_loss == round(vector.mean() * n) / n
        # The release is the loss of the submission holding the best vector, never anything else.
        assert step.released_loss == round(best.mean() * n) / n
        assert np.array_equal(step.ladder.best_losses, best)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200_000), st.data())
def test_every_count_survives_the_rounding(n, data):
    k = data.draw(st.integers(0, n))
    value = ladder.percentage_of_count(k, n)
    assert int(round(value * n / 100)) == k
    if k < n:
        assert ladder.percentage_of_count(k + 1, n) > value
