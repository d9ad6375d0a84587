"""Task types: registry, scoring (single and batched), subsets in scores, storage encodings."""

import numpy as np
import pytest

from app.evaluation import TASK_TYPES, get_task
from tests.support.files import jsonl

NLVR2 = get_task("nlvr2")
STRUCTURED = get_task("nlvr-structured")
IMAGES = get_task("nlvr-images")
VCR = get_task("vcr")


def random_binary_gold(task, n_sentences, rng):
    """NLVR-style gold: sentence n with 4 examples n-0..n-3, random labels."""
    return task.read_gold(
        jsonl(
            [
                {"identifier": f"{n}-{m}", "label": bool(rng.random() < 0.5)}
                for n in range(n_sentences)
                for m in range(4)
            ]
        )
    )


def random_nlvr2_gold(n_sets, rng):
    return NLVR2.read_gold(
        jsonl(
            [
                {
                    "identifier": f"dev-{s}-{p}-{k}",
                    "label": "True" if rng.random() < 0.5 else "False",
                    "left_url": f"L{s}-{p}",
                    "right_url": f"R{s}-{p}",
                    "sentence": f"sentence {s} {k}",
                }
                for s in range(n_sets)
                for p in range(4)
                for k in range(2)
            ]
        )
    )


def random_vcr_gold(n, rng):
    return VCR.read_gold(
        jsonl(
            [
                {
                    "annot_id": f"q{i}",
                    "answer_label": int(rng.integers(4)),
                    "rationale_label": int(rng.integers(4)),
                    "region": f"r{i % 3}",
                }
                for i in range(n)
            ]
        )
    )


def test_registry_has_every_family_with_its_metrics():
    # In the order the app lists them; each family's own quirks in tests/unit/test_family_*.py.
    assert list(TASK_TYPES) == [
        "nlvr2",
        "nlvr-structured",
        "nlvr-images",
        "vcr",
        "vqa-v2",
        "gqa",
        "a-okvqa",
        "winoground",
        "nlvr2-contrast",
    ]
    for name in ("nlvr2", "nlvr-structured", "nlvr-images"):
        task = get_task(name)
        assert task.metrics == ("accuracy", "consistency") and task.primary_metric == "accuracy"
        assert task.tie_break_metric == "consistency" and task.subset_metrics == ("accuracy",)
    assert VCR.metrics == ("q_a", "qa_r", "q_ar") and VCR.primary_metric == "q_ar"
    assert VCR.tie_break_metric is None and VCR.subset_metrics == VCR.metrics
    assert all(get_task(name).name == name and get_task(name).label for name in TASK_TYPES)


@pytest.mark.parametrize("name", ["NLVR2", "", None, "vqa"])
def test_get_task_rejects_unknown_names_with_the_choices(name):
    with pytest.raises(ValueError, match="unknown task type.*choose one of.*nlvr2"):
        get_task(name)


def test_nlvr2_score_by_hand():
    # Two sentences (groups) over 2 pairs:
    #   dev-1-*-0: labels T, F -> predictions T, F -> both right: consistent
    #   dev-1-*-1: labels T, T -> predictions T, F -> one wrong: not consistent
    gold = NLVR2.read_gold(
        jsonl(
            [
                {"identifier": "dev-1-0-0", "label": "True", "left_url": "a", "right_url": "b", "sentence": "x"},
                {"identifier": "dev-1-1-0", "label": "False", "left_url": "c", "right_url": "d", "sentence": "x"},
                {"identifier": "dev-1-0-1", "label": "True", "left_url": "a", "right_url": "b", "sentence": "y"},
                {"identifier": "dev-1-1-1", "label": "True", "left_url": "c", "right_url": "d", "sentence": "y"},
            ]
        )
    )
    predictions = np.array([True, False, True, False])
    subsets = NLVR2.derive_subsets(gold)
    # pair (a, b): labels T, T -> unbalanced; pair (c, d): labels F, T -> balanced
    assert subsets["balanced"].tolist() == [1, 3] and subsets["unbalanced"].tolist() == [0, 2]
    scores = NLVR2.score(gold, predictions, subsets)
    assert scores == {
        "all": {"accuracy": 75.0, "consistency": 50.0},
        "balanced": {"accuracy": 50.0},
        "unbalanced": {"accuracy": 100.0},
    }
    assert all(type(v) is float for metrics in scores.values() for v in metrics.values())


def test_images_score_by_hand():
    # Sentence 1: examples 1-0 (true) and 1-1 (false); sentence 2: example 2-0 (true).
    gold = IMAGES.read_gold(
        b'{"identifier":"1-0","label":"true"}\n{"identifier":"1-1","label":"false"}\n'
        b'{"identifier":"2-0","label":"true"}\n'
    )
    predictions = np.array(
        [
            [True] * 6,  # all 6 right
            [False] * 5 + [True],  # image 5 wrong -> sentence 1 inconsistent
            [True] * 6,  # all right -> sentence 2 consistent
        ]
    )
    scores = IMAGES.score(gold, predictions, {"first": np.array([1], dtype=np.int32)})
    assert scores["all"] == {"accuracy": pytest.approx(100 * 17 / 18), "consistency": 50.0}
    assert scores["first"] == {"accuracy": pytest.approx(100 * 5 / 6)}


def test_vcr_score_by_hand_and_subsets():
    gold = VCR.read_gold(
        jsonl(
            [
                {"annot_id": "a", "answer_label": 1, "rationale_label": 2, "region": "west"},
                {"annot_id": "b", "answer_label": 0, "rationale_label": 0, "region": "africa"},
            ]
        )
    )
    predictions = np.array(
        [
            [1, 3, 2, 3, 3],  # answer right; rationale given answer 1 is 2: right
            [2, 0, 1, 1, 1],
        ],  # answer wrong; rationale given answer 0 is 0: right
        dtype=np.int8,
    )
    subsets = VCR.derive_subsets(gold, "region")
    assert {k: v.tolist() for k, v in subsets.items()} == {"region:africa": [1], "region:west": [0]}
    scores = VCR.score(gold, predictions, subsets)
    assert scores["all"] == {"q_a": 50.0, "qa_r": 100.0, "q_ar": 50.0}
    assert scores["region:west"] == {"q_a": 100.0, "qa_r": 100.0, "q_ar": 100.0}
    assert scores["region:africa"] == {"q_a": 0.0, "qa_r": 100.0, "q_ar": 0.0}


def test_empty_subsets_are_skipped():
    rng = np.random.default_rng(1)
    gold = random_binary_gold(STRUCTURED, 3, rng)
    scores = STRUCTURED.score(gold, np.ones(gold.n, bool), {"nothing": np.array([], dtype=np.int32)})
    assert set(scores) == {"all"}


def test_score_rejects_a_wrong_shape():
    rng = np.random.default_rng(1)
    gold = random_binary_gold(IMAGES, 3, rng)
    with pytest.raises(ValueError, match="shape"):
        IMAGES.score(gold, np.ones(gold.n, bool))


@pytest.mark.parametrize("name", ["nlvr2", "nlvr-structured", "nlvr-images", "vcr"])
def test_score_batch_equals_score_of_each_row(name):
    rng = np.random.default_rng(7)
    task = get_task(name)
    if name == "nlvr2":
        gold = random_nlvr2_gold(30, rng)
    elif name == "vcr":
        gold = random_vcr_gold(90, rng)
    else:
        gold = random_binary_gold(task, 25, rng)
    subsets = task.derive_subsets(gold, "region" if name == "vcr" else None)
    subsets["some"] = np.sort(rng.choice(gold.n, size=gold.n // 3, replace=False)).astype(np.int32)
    shape = (12,) + task.prediction_shape(gold.n)
    stacked = rng.integers(0, 4, size=shape).astype(np.int8) if name == "vcr" else rng.random(shape) < 0.6
    batch = task.score_batch(gold, stacked, subsets)
    assert len(batch) == 12
    for row, result in zip(stacked, batch, strict=True):
        assert result == task.score(gold, row, subsets)
        assert set(result["all"]) == set(task.metrics)
        assert set(result["some"]) == set(task.subset_metrics)


@pytest.mark.parametrize("name", ["nlvr2", "nlvr-structured", "nlvr-images", "vcr"])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 1001])
def test_encode_decode_round_trip(name, n):
    task = get_task(name)
    rng = np.random.default_rng(n)
    shape = task.prediction_shape(n)
    predictions = rng.integers(0, 4, size=shape).astype(np.int8) if name == "vcr" else rng.random(shape) < 0.5
    blob = task.encode(predictions)
    assert isinstance(blob, bytes)
    decoded = task.decode(blob, n)
    assert decoded.dtype == predictions.dtype and decoded.shape == shape
    np.testing.assert_array_equal(decoded, predictions)
    decoded[...] = 0  # decoded arrays are writable copies
    many = task.decode_many([blob, task.encode(np.zeros(shape, predictions.dtype))], n)
    np.testing.assert_array_equal(many[0], predictions)
    assert not many[1].any()


def test_encodings_are_compact():
    assert len(NLVR2.encode(np.ones(6982, bool))) == 873
    assert len(IMAGES.encode(np.ones((985, 6), bool))) == 739
    assert len(VCR.encode(np.zeros((886, 5), np.int8))) == 886 * 5


def test_decode_rejects_a_blob_of_the_wrong_size():
    with pytest.raises(ValueError):
        NLVR2.decode(b"\x00" * 3, 100)
    with pytest.raises(ValueError):
        VCR.decode(b"\x00" * 9, 2)


def test_score_batch_scores_many_submissions_in_one_pass():
    rng = np.random.default_rng(0)
    gold = random_nlvr2_gold(200, rng)  # 1,600 examples
    stacked = rng.random((2000, gold.n)) < 0.7
    results = NLVR2.score_batch(gold, stacked, NLVR2.derive_subsets(gold))
    accuracies = np.array([r["all"]["accuracy"] for r in results])
    np.testing.assert_allclose(accuracies, 100 * (stacked == gold.labels).mean(axis=1))
