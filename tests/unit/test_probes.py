"""The probe summaries' arithmetic (app/evaluation/probes.py): the bound never exceeds the distance."""

from __future__ import annotations

import numpy as np
import pytest

from app import synthetic
from app.evaluation import get_task, probes


def test_threshold_units_is_the_most_units_still_under_the_share():
    assert probes.threshold_units(0.01, 400) == 3  # 4 of 400 is 1%: not fewer
    assert probes.threshold_units(0.01, 6970) == 69
    assert probes.threshold_units(0.01, 360) == 3
    assert probes.threshold_units(0.01, 50) == 0
    assert probes.threshold_units(0.0, 400) == -1
    assert probes.threshold_units(1.0, 7) == 6
    for units in range(1, 500):
        t = probes.threshold_units(0.01, units)
        assert t / units < 0.01 <= (t + 1) / units


def test_block_counts_cover_every_unit_once():
    correct = np.random.default_rng(1).random((3, 1001)) < 0.6
    blocks = probes.block_counts(correct)
    assert blocks.shape == (3, probes.BLOCKS)
    assert blocks.sum(axis=1).tolist() == correct.sum(axis=1).tolist()
    tiny = probes.block_counts(np.ones((1, 5), bool))  # fewer units than blocks: empty blocks count 0
    assert tiny.sum() == 5 and tiny.max() == 1


@pytest.mark.parametrize("units, width", [(6970, 1), (8160, 1), (8161, 2), (26534, 2)])
def test_records_round_trip(units, width):
    blocks = np.diff(probes.block_bounds(units))[None].repeat(2, axis=0)  # every unit correct: the largest
    data = probes.encode_records(np.array([7, 2**40]), blocks, units)
    assert len(data) == 2 * (8 + width * probes.BLOCKS)
    records = probes.decode_records(data + data, units)
    assert records["id"].tolist() == [7, 2**40, 7, 2**40]
    assert (records["blocks"] == blocks[0]).all()
    with pytest.raises(ValueError):
        probes.decode_records(data[:-1], units)


@pytest.mark.parametrize(
    "task_name, gold",
    [
        ("nlvr2", synthetic.nlvr2_gold(300, seed=1)),
        ("nlvr-images", synthetic.nlvr_gold(50, seed=1)),
        ("vcr", synthetic.vcr_gold(300, seed=1)),
    ],
)
def test_the_bound_never_exceeds_the_distance(task_name, gold):
    from app.services.blind_test.integrity import distances  # the distance the probe check flags on (numpy only)

    task, rng = get_task(task_name), np.random.default_rng(3)
    gold_set = task.read_gold(gold)
    shape = task.prediction_shape(gold_set.n)
    if task_name == "vcr":
        base = rng.integers(0, 4, size=shape).astype(np.int8)
        base[:, 0] = gold_set.labels[:, 0]
    else:
        base = rng.random(shape) < 0.5
    files = [base]
    for changed in (1, 2, 5, 20, 100):
        for _ in range(4):  # copies that change a few entries, and unrelated files
            copy = base.copy()
            flat = copy.reshape(-1)
            where = rng.choice(flat.size, size=changed, replace=False)
            flat[where] = (flat[where] + 1) % 4 if task_name == "vcr" else ~flat[where]
            files.append(copy)
    files.append(rng.integers(0, 4, size=shape).astype(np.int8) if task_name == "vcr" else rng.random(shape) < 0.5)
    stacked = np.stack(files)
    correct = probes.unit_correct(task, gold_set, stacked)
    blocks = probes.block_counts(correct)
    for i, new in enumerate(files):
        units = correct.shape[1]
        differing = np.rint(distances(task, new, stacked) * units).astype(np.int64)
        bound = probes.lower_bounds(blocks, blocks[i])
        assert (bound <= differing).all()
        assert (np.abs(correct.sum(axis=1) - correct[i].sum()) <= bound).all()
    # The units are those the distance counts: one per image, one per VCR question.
    assert correct.shape[1] == {"nlvr2": 300, "nlvr-images": 300, "vcr": 300}[task_name]
