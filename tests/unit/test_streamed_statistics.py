"""The streamed bootstrap (statistics._streamed_intervals, for splits of more groups than STREAM_GROUPS: VQA v2's
test-std) against the whole-matrix one every smaller split takes: the same intervals to the last bit, for every
family, on the whole split and on its subsets; and the weights it streams are the ones resample_blocks draws."""

from __future__ import annotations

import numpy as np
import pytest

from app.evaluation import TASK_TYPES, TakesChoices, get_task, statistics


def _board(name: str, k: int = 7, size: int = 240):
    task = get_task(name)
    gold_bytes = task.synthetic_gold(size, seed=3)
    gold = task.read_gold(gold_bytes)
    stacked = np.stack(
        [task.parse(task.synthetic_predictions(gold_bytes, 0.45 + 0.07 * i, seed=i), gold) for i in range(k)]
    )
    subsets = task.derive_subsets(gold)
    without = task.choices_metrics if isinstance(task, TakesChoices) else ()  # a split without a choices file
    wanted: dict = {"all": (None, tuple(metric for metric in task.metrics if metric not in without))}
    for subset, indices in list(subsets.items())[:3]:
        wanted[subset] = (indices, (task.primary_metric,))
    return task, gold, stacked, wanted


@pytest.mark.parametrize("name", list(TASK_TYPES))
def test_streamed_intervals_are_the_whole_matrix_ones(name, monkeypatch):
    task, gold, stacked, wanted = _board(name)
    whole = statistics.intervals(task, gold, stacked, wanted, resamples=300)
    monkeypatch.setattr(statistics, "STREAM_GROUPS", 0)
    monkeypatch.setattr(statistics, "_STREAM_CHUNK", 17)  # many chunks, one not full
    monkeypatch.setattr(statistics, "_STREAM_BLOCK", 70)  # blocks that do not divide the resamples
    streamed = statistics.intervals(task, gold, stacked, wanted, resamples=300)
    assert list(streamed) == list(whole)
    for key, interval in whole.items():
        for part in ("values", "low", "high"):
            found, expected = getattr(streamed[key], part), getattr(interval, part)
            np.testing.assert_array_equal(found, expected, err_msg=f"{key} {part}")
    assert any(np.isfinite(interval.low).all() for interval in whole.values())  # intervals were drawn at all


def test_resample_counts_are_resample_blocks_whatever_the_block():
    blocks = np.concatenate(list(statistics.resample_blocks(1001, resamples=450, seed=9)))
    for block in (1, 77, 450):
        counts = np.concatenate(list(statistics.resample_counts(1001, 450, 9, block)))
        assert counts.dtype == np.uint8
        np.testing.assert_array_equal(counts.astype(np.float32), blocks)


def test_one_example_groups_are_read_in_place_not_copied():
    by_example = np.arange(24, dtype=np.uint8).reshape(8, 3)
    groups, sums, rows = statistics._group_sums_by_example(by_example, np.arange(8))
    assert sums is by_example and rows is None and (groups == np.arange(8)).all()
    groups, sums, rows = statistics._group_sums_by_example(by_example, np.array([5, 1, 2]), np.array([6, 2, 3]))
    assert sums is by_example and (rows == [2, 3, 6]).all() and (groups == [1, 2, 5]).all()


@pytest.mark.parametrize("types", [3, 2, 1])
def test_the_whole_split_added_up_from_its_subsets_is_the_same(types, monkeypatch):
    """VQA v2's overall accuracy is its answer types' sums added up (and, where they do not cover the split, the
    questions left multiplied alone): the intervals are the whole product's."""
    task, gold, stacked, _ = _board("vqa-v2", k=5, size=400)
    kinds = {name: indices for name, indices in task.derive_subsets(gold).items() if name.startswith("answer_type:")}
    assert len(kinds) == 3
    wanted: dict = {"all": (None, ("accuracy",))}
    wanted.update({name: (indices, ("accuracy",)) for name, indices in list(kinds.items())[:types]})
    whole = statistics.intervals(task, gold, stacked, wanted, resamples=200)
    monkeypatch.setattr(statistics, "STREAM_GROUPS", 0)
    monkeypatch.setattr(statistics, "_STREAM_CHUNK", 23)
    ratios = [ratio for _, ratio in statistics._each_ratio(task, gold, stacked, wanted)]
    assert {i: sorted(of) for i, of in statistics._parts(ratios, gold.n).items()} == {0: list(range(1, types + 1))}
    streamed = statistics.intervals(task, gold, stacked, wanted, resamples=200)
    for key, interval in whole.items():
        for part in ("values", "low", "high"):
            found, expected = getattr(streamed[key], part), getattr(interval, part)
            np.testing.assert_array_equal(found, expected, err_msg=f"{key} {part}")
