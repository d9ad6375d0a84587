"""Two entries compared with the board's own statistics (statistics.difference_intervals, pair_p) and their
per-example outcomes (evaluation/per_example.py), on a 0/1 family (McNemar) and a soft one (VQA v2's points)."""

from __future__ import annotations

import numpy as np
import pytest

from app.evaluation import TASK_TYPES, get_task, per_example, statistics


def _pair(name: str, size: int, accuracies: tuple[float, float]):
    task = get_task(name)
    gold_bytes = task.synthetic_gold(size, seed=3)
    gold = task.read_gold(gold_bytes)
    stacked = np.stack(
        [task.parse(task.synthetic_predictions(gold_bytes, a, seed=i), gold) for i, a in enumerate(accuracies)]
    )
    return task, gold, stacked


@pytest.mark.parametrize("name", ["nlvr2", "vqa-v2"])
@pytest.mark.parametrize("accuracies", [(0.8, 0.6), (0.7, 0.68)])
def test_the_pairs_p_decides_as_the_boards_own_family_of_one_pair(name, accuracies):
    task, gold, stacked = _pair(name, 300, accuracies)
    p = statistics.pair_p(task, gold, stacked)
    primary = np.array([task.score(gold, row)["all"][task.primary_metric] for row in stacked])
    order = np.argsort(-primary, kind="stable")
    if task.unit_points(gold) > 1:
        ranks = statistics.paired_view_ranks(task.unit_scores(gold, stacked), primary[order], [None], order=order)
    else:
        judgements = statistics.PackedJudgements.of(task.unit_correctness(gold, stacked))
        ranks = statistics.view_ranks(judgements, primary[order], [None], order=order)
    # A board of two entries has one pair, so Holm's one threshold is alpha: decided iff p <= alpha.
    assert p is not None and (int(ranks[0].better.sum()) == 1) == (p <= statistics.ALPHA)


def test_the_difference_is_the_boards_values_with_an_interval_around_it():
    task, gold, stacked = _pair("nlvr2", 300, (0.8, 0.7))
    wanted = {"all": (None, tuple(task.metrics))}
    differences = statistics.difference_intervals(task, gold, stacked, wanted)
    columns = statistics.intervals(task, gold, stacked, wanted)
    for key, column in columns.items():
        found = differences[key]
        assert found.value == pytest.approx(column.values[0] - column.values[1])
        assert found.low <= found.value <= found.high
    same = statistics.difference_intervals(task, gold, stacked[[0, 0]], wanted)[("all", task.primary_metric)]
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)


def test_discordant_examples_are_where_one_is_right_and_the_other_wrong():
    task, gold, stacked = _pair("nlvr2", 200, (0.8, 0.7))
    found = per_example.outcomes(task, gold, stacked)
    right = stacked == gold.labels[None, :]
    assert (found.correct == right).all()
    assert per_example.discordant(found).tolist() == np.flatnonzero(right[0] != right[1]).tolist()


@pytest.mark.parametrize("name", sorted(TASK_TYPES))
def test_an_example_is_right_where_the_familys_units_on_it_all_are(name):
    """per_example's `correct` is unit_correctness by example (every family): the discordant examples are those
    of the units the board's test counts; and every family's pair has a p on the whole split."""
    task, gold, stacked = _pair(name, 40, (0.8, 0.6))
    found = per_example.outcomes(task, gold, stacked)
    units = task.unit_correctness(gold, stacked)
    if units.shape[1] % gold.n == 0:
        assert (found.correct == units.reshape(2, gold.n, -1).all(axis=-1)).all()
        assert found.counted.all()
    else:  # GQA: only the balanced questions are units
        assert (found.correct[:, found.counted] == units).all()
    assert statistics.pair_p(task, gold, stacked) is not None
