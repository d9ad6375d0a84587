"""Ranks and rank intervals are one procedure, deciding each pair of entries once per board (issues 24 and 34): on
random boards, of every size and spread, with copies and ties, every rank lies inside its own interval, what one
row says of another is what that row says of it (sum(low - 1) = sum(N - high); i surely above j in i's row if and
only if j surely below i in j's), and the fast computation (windows, sure counts, packed bits, views) equals the
plain one: one test per pair, Holm over all pairs. From known true accuracies, the intervals hold simultaneously
at 95%."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.evaluation import TASK_TYPES, statistics
from tests.unit.test_statistics_fast import _assert_ranks_equal, _exact_ranks


@st.composite
def boards(draw):
    """(correct in table order, primary, a view): k entries whose errors share hard judgements, some exact
    copies (ties), some a judgement or two apart."""
    k = draw(st.integers(1, 24))
    units = draw(st.integers(1, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    low, high = sorted(draw(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0))))
    hard = rng.random(units)
    accuracies = rng.uniform(low, high + 1e-9, size=k)
    shared = draw(st.floats(0.0, 1.0))
    correct = np.stack([np.where(rng.random(units) < shared, hard, rng.random(units)) < a for a in accuracies])
    for i in range(1, k):
        kind = draw(st.sampled_from(["own", "copy", "nudge"]))
        if kind == "copy":
            correct[i] = correct[draw(st.integers(0, i - 1))]
        elif kind == "nudge":
            correct[i] = correct[i - 1]
            flip = rng.choice(units, size=min(units, draw(st.integers(1, 3))), replace=False)
            correct[i, flip] = ~correct[i, flip]
    primary = correct.mean(axis=1) * 100
    order = np.argsort(-primary, kind="stable")
    view = np.flatnonzero(rng.random(k) < draw(st.floats(0.2, 1.0)))
    return correct[order], primary[order], view


def _check_shown(found: statistics.Ranks, primary: np.ndarray) -> None:
    k = primary.size
    ranks, lows, highs = found.ranks, found.lows, found.highs
    assert ((lows >= 1) & (lows <= ranks) & (ranks <= highs) & (highs <= k)).all()  # inside its own interval
    assert (ranks == 1 + found.better).all() and (highs == k - found.worse).all()  # rank = 1 + B, [1 + B, N - W]
    # Every decision is counted once in each of its two rows: as many "surely better than me" as "surely worse".
    assert (lows - 1).sum() == (k - highs).sum()
    if found.decided is None:
        return
    # Row by row, from the decided pairs: what i's row says of j is what j's row says of i.
    below_me = {i: set() for i in range(k)}  # i's row: the entries it is surely better than
    above_me = {i: set() for i in range(k)}  # i's row: the entries surely better than it
    for better, worse in found.decided.tolist():
        assert better != worse and primary[better] > primary[worse]  # decided in the direction of the scores
        below_me[better].add(worse)
        above_me[worse].add(better)
    assert len({tuple(pair) for pair in found.decided.tolist()}) == len(found.decided)  # each pair once
    for i in range(k):
        assert len(above_me[i]) == found.better[i] and len(below_me[i]) == found.worse[i]
        assert not above_me[i] & below_me[i]
        for j in below_me[i]:
            assert i in above_me[j]
        if len(below_me[i]) == k - 1:  # "surely better than all": no other row may say nothing is above it
            assert all(ranks[j] > 1 for j in range(k) if j != i)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boards())
def test_every_rank_lies_inside_its_interval_and_equals_the_plain_procedure(board):
    correct, primary, view = board
    whole, sub = statistics.view_ranks(correct, primary, [None, view], pairs=True)
    _check_shown(whole, primary)
    _check_shown(sub, primary[view])
    _assert_ranks_equal(whole, _exact_ranks(correct, primary))
    if view.size:
        _assert_ranks_equal(sub, _exact_ranks(correct[view], primary[view]))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 5000).flatmap(
        lambda units: st.tuples(st.just(units), st.lists(st.integers(0, units), min_size=1, max_size=40))
    )
)
def test_ranks_from_counts_alone_lie_inside_their_intervals(case):
    """The same promise for a blind test's board before its reveal (unpaired tests on the counts)."""
    units, counts = case
    values = 100.0 * np.sort(np.array(counts))[::-1] / units
    (found,) = statistics.count_ranks(values, units, [None])
    ranks, highs = found.ranks, found.highs
    _check_shown(found, values)
    for score in np.unique(values):  # from the counts alone: equal counts, equal ranks and intervals
        tied = values == score
        assert len(set(ranks[tied])) == 1 and len(set(highs[tied])) == 1


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 30), st.integers(5, 300), st.integers(0, 2**32 - 1))
def test_soft_scores_decide_each_pair_once_too(k, units, seed):
    """The same promises for a board ranked on points (VQA v2: a paired permutation test per pair)."""
    rng = np.random.default_rng(seed)
    points = np.where(rng.random((k, units)) < rng.uniform(0.3, 0.9, size=(k, 1)), 30, 0)
    points[rng.random((k, units)) < 0.1] = 18
    if k > 3:
        points[2] = points[1]  # a tie
    primary = points.mean(axis=1) / 30 * 100
    order = np.argsort(-primary, kind="stable")
    view = np.flatnonzero(rng.random(k) < 0.6)
    whole, sub = statistics.paired_view_ranks(points[order], primary[order], [None, view], pairs=True)
    _check_shown(whole, primary[order])
    _check_shown(sub, primary[order][view])


def _coverage(alpha: float, boards: int, seed: int) -> tuple[float, float]:
    """(the share of boards where every entry's true rank lies in its interval, the mean pairs decided a board)
    over random boards of 30 entries with known, distinct true accuracies 0.6 points apart on 1,000 units, whose
    errors share hard units (so pairs are correlated, as models' are)."""
    rng = np.random.default_rng(seed)
    k, units = 30, 1000
    truth = np.linspace(0.78, 0.605, k)  # true rank of entry e: e + 1
    covered, decided = 0, 0
    for _ in range(boards):
        hard = rng.random(units)
        draw = np.where(rng.random((k, units)) < 0.5, hard[None, :], rng.random((k, units)))
        correct = draw < truth[:, None]  # P(right) is each entry's true accuracy
        primary = correct.mean(axis=1) * 100
        order = np.argsort(-primary, kind="stable")
        (found,) = statistics.view_ranks(correct[order], primary[order], [None], alpha)
        true_rank = order + 1  # table position t holds entry order[t]
        covered += bool(((found.lows <= true_rank) & (true_rank <= found.highs)).all())
        decided += int(found.better.sum())
    return covered / boards, decided / boards


def test_rank_intervals_hold_simultaneously_at_95_percent():
    """1,000 simulated boards from known true accuracies: every entry's true rank lies inside its interval on at
    least 95% of the boards, within Monte Carlo error (2.58 standard errors), while the boards still decide many
    pairs (the check is not met by deciding nothing). The same simulation without a correction for the many
    pairs (each pair at 0.05 alone) falls far short: the check can fail."""
    boards = 1000
    coverage, decided = _coverage(statistics.ALPHA, boards, seed=34)
    error = 2.58 * np.sqrt(0.95 * 0.05 / boards)
    assert coverage >= 0.95 - error, coverage
    assert decided > 150  # of 435 pairs: a board separates entries a few points apart
    pairs = 30 * 29 // 2
    uncorrected, _ = _coverage(statistics.ALPHA * pairs, 200, seed=35)  # Holm's thresholds times M: none
    assert uncorrected < 0.9, uncorrected


def test_a_boards_resolution_is_detected_with_80_percent_power():
    """Two entries whose true accuracies differ by a board's stated resolution (here a board of 20 entries,
    nothing else decided: the pair faces Holm's first threshold, 0.05 / 190) are decided apart on about 80% of
    simulated boards; half the difference, far less often."""
    rng = np.random.default_rng(8)
    units, discordance, size = 2000, 0.2, 20
    points = statistics.resolution(units, size, 0, np.sqrt(discordance))
    assert points is not None and statistics.resolution(units, 2000, 0, np.sqrt(discordance)) > points
    level = statistics.ALPHA / (size * (size - 1) // 2)

    def detected(difference: float) -> float:
        # Each unit: only the first right (p1), only the second (p2), p1 + p2 = discordance, p1 - p2 = difference.
        first, second = (discordance + difference) / 2, (discordance - difference) / 2
        kinds = rng.random((1000, units))
        above, below = (kinds < first).sum(axis=1), ((kinds >= first) & (kinds < first + second)).sum(axis=1)
        return float((2 * statistics.one_sided_p(above, below) <= level).mean())

    assert 0.74 <= detected(points / 100) <= 0.86
    assert detected(points / 200) < 0.35
    assert statistics.resolution(units, 1, 0, 0.5) is None and statistics.resolution(units, 5, 0, 0.0) is None


@pytest.mark.parametrize("family", sorted(TASK_TYPES))
def test_every_family_decides_each_pair_once_on_a_board_of_60_entries(family):
    """Each registered family's own rank procedure (McNemar on its judgements, or the points test where a unit
    is scored in points), as a board runs it, on 60 synthetic entries from 55% to 85%: the rows agree (each pair
    once, sum(low - 1) = sum(N - high)), for the board and for a view of every other entry, and entries far
    apart are decided apart."""
    task = TASK_TYPES[family]
    split = "test"
    data = task.synthetic_gold(400, seed=5, split=split)
    gold = task.read_gold(data)
    files = [
        task.synthetic_predictions(data, float(accuracy), seed=100 + i, **task.demo_split_options(split))
        for i, accuracy in enumerate(np.linspace(0.55, 0.85, 60))
    ]
    stacked = np.stack([task.parse(f, gold) for f in files])
    if task.unit_points(gold) > 1:
        scores = task.unit_scores(gold, stacked)
        primary = scores.sum(axis=1) / (task.unit_points(gold) * scores.shape[1]) * 100
    else:
        correct = statistics.primary_correctness(task, gold, stacked)
        primary = correct.mean(axis=1) * 100
    order = np.argsort(-primary, kind="stable")
    view = np.arange(0, 60, 2)
    if task.unit_points(gold) > 1:
        found = statistics.paired_view_ranks(scores, primary[order], [None, view], order=order, pairs=True)
    else:
        found = statistics.view_ranks(correct[order], primary[order], [None, view], pairs=True)
    whole, sub = found
    _check_shown(whole, primary[order])
    _check_shown(sub, primary[order][view])
    assert whole.better.sum() > 0 and whole.resolution is not None  # the board tells some entries apart
