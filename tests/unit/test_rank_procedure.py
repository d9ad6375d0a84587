"""Ranks and rank intervals are one procedure (issue 24): on random boards, of every size and spread, with
copies and ties, every rank lies inside its own interval, tied scores share rank and interval, and the fast
computation (windows, sure counts, packed bits, views) equals the plain one of the README's two paragraphs."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.evaluation import statistics
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
    assert (np.diff(ranks) >= 0).all() and (np.diff(highs) >= 0).all()  # never better down the table
    for score in np.unique(primary):
        tied = primary == score
        assert len(set(ranks[tied])) == 1 and len(set(highs[tied])) == 1  # a tie is never ordered
    intervals = list(zip(lows.tolist(), highs.tolist(), strict=True))
    for i, interval in enumerate(intervals):  # entries whose intervals coincide share a rank
        assert all(ranks[j] == ranks[i] for j, other in enumerate(intervals) if other == interval)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boards())
def test_every_rank_lies_inside_its_interval_and_equals_the_plain_procedure(board):
    correct, primary, view = board
    whole, sub = statistics.view_ranks(correct, primary, [None, view])
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
    ((ranks, lows, highs),) = statistics.count_ranks(values, units, [None])
    _check_shown(statistics.Ranks(ranks, lows, highs, ranks - 1, len(counts) - highs), values)
