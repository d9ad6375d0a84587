"""The NLVR2 contrast-set family: the official contrast_set_nlvr2.jsonl, identifier,prediction files with
true/false or 1/0 (0 and false read as False, unlike the official bool(pred)), groups by original example,
refusals naming the line and the identifier, storage, units and synthetic files; NLVR2 itself unchanged."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task, statistics
from tests.support.files import jsonl

TASK = get_task("nlvr2-contrast")
NLVR2 = get_task("nlvr2")


def row(identifier, label):
    return {
        "sentence": f"sentence of {identifier}",
        "left_url": f"https://example.org/{identifier}-img0.jpg",
        "right_url": f"https://example.org/{identifier}-img1.jpg",
        "identifier": identifier,
        "writer": 0,
        "label": label,
    }


# Three contrast sets: test1-769-1-0 (two members), test1-256-2-0 (two), test1-419-2-1 (one).
ROWS = [
    row("test1-769-1-0-1", False),
    row("test1-769-1-0-2", True),
    row("test1-256-2-0-1", False),
    row("test1-256-2-0-2", True),
    row("test1-419-2-1-0", False),
]
GOLD = TASK.read_gold(jsonl(ROWS, b"\n"))
IDS = [r["identifier"] for r in ROWS]


def lines(*predictions: str, header: str | None = None) -> bytes:
    body = [f"{identifier},{p}" for identifier, p in zip(IDS, predictions, strict=True)]
    return ("\n".join(([header] if header else []) + body) + "\n").encode()


def refusal(data: bytes) -> str:
    with pytest.raises(ValidationError) as caught:
        TASK.parse(data, GOLD)
    return str(caught.value)


def test_gold_groups_by_the_original_example():
    assert GOLD.ids.tolist() == IDS and GOLD.labels.tolist() == [False, True, False, True, False]
    assert GOLD.groups.tolist() == [0, 0, 1, 1, 2] and GOLD.n_groups == 3
    assert set(GOLD.fields) == {"sentence", "left_url", "right_url", "writer"}
    # Labels as JSON booleans (the release) or as NLVR2 writes them.
    strings = TASK.read_gold(jsonl([row(IDS[0], "False"), row(IDS[1], "true")]))
    assert strings.labels.tolist() == [False, True]


@pytest.mark.parametrize(
    "identifier, message",
    [
        ("test1-769-1-0-10", "line 2: identifier 'test1-769-1-0-10' is not of the form the original NLVR2 identifier"),
        ("test1-769-1-0", "line 2: identifier 'test1-769-1-0' is not of the form"),
        ("test1-769-1-0-1", "line 2: duplicate identifier 'test1-769-1-0-1' (first on line 1)"),
    ],
)
def test_gold_refusals_name_the_line(identifier, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        TASK.read_gold(jsonl([ROWS[0], row(identifier, True)]))
    with pytest.raises(ValidationError, match=re.escape("line 2: missing or invalid 'label'")):
        TASK.read_gold(jsonl([ROWS[0], row(IDS[1], "maybe")]))


def test_predictions_read_true_false_and_1_0_with_0_and_false_false():
    expected = [False, True, False, True, False]
    for predictions in (
        ("0", "1", "0", "1", "0"),
        ("false", "true", "False", "True", "FALSE"),
        (" 0", "1 ", '"0"', "TRUE", "fAlSe"),
    ):
        assert TASK.parse(lines(*predictions), GOLD).tolist() == expected
    with_header = lines("0", "1", "0", "1", "0", header="identifier,prediction")
    assert TASK.parse(with_header, GOLD).tolist() == expected
    crlf = lines("0", "1", "0", "1", "0").replace(b"\n", b"\r\n")
    assert TASK.parse(crlf, GOLD).tolist() == expected
    shuffled = b"\n".join(reversed(lines("0", "1", "0", "1", "0").splitlines()))
    assert TASK.parse(shuffled, GOLD).tolist() == expected


def test_nlvr2_itself_still_refuses_digits():
    gold = NLVR2.read_gold(
        jsonl([{"identifier": "dev-1-0-0", "label": "True", "sentence": "s", "left_url": "l", "right_url": "r"}])
    )
    assert NLVR2.parse(b"dev-1-0-0,true\n", gold).tolist() == [True]
    message = "invalid prediction '1' for 'dev-1-0-0'; expected true or false"
    with pytest.raises(ValidationError, match=re.escape(message)):
        NLVR2.parse(b"dev-1-0-0,1\n", gold)


@pytest.mark.parametrize(
    "data, expected",
    [
        (lines("0", "1", "", "1", "0"), "line 3: invalid prediction '' for 'test1-256-2-0-1'; expected true, false"),
        (lines("0", "maybe", "0", "1", "0"), "line 2: invalid prediction 'maybe' for 'test1-769-1-0-2'"),
        (lines("0", "1", "0", "1", "2"), "line 5: invalid prediction '2' for 'test1-419-2-1-0'"),
        (lines("0", "1", "0", "1", "0").replace(b"1-0-2,1", b"1-0-1,1"), "line 2: duplicate identifier"),
        (lines("0", "1", "0", "1", "0") + b"test1-99999-0-0-1,1\n", "line 6: unknown identifier 'test1-99999-0-0-1'"),
        (b"\n".join(lines("0", "1", "0", "1", "0").splitlines()[1:]), "missing predictions for 1 identifier of 5"),
        (lines("0", "1", "0", "1", "0").replace(b"0-2,1", b"0-2,1,x"), "line 2: expected 2 columns, found 3"),
    ],
)
def test_refusals_name_the_line_and_the_identifier(data, expected):
    assert expected in refusal(data)


def test_scores_by_hand():
    predictions = TASK.parse(lines("0", "1", "1", "1", "0"), GOLD)  # the second contrast set has one wrong
    assert TASK.score(GOLD, predictions)["all"] == pytest.approx({"accuracy": 80.0, "consistency": 200 / 3})
    all_true = TASK.parse(lines("1", "1", "1", "1", "1"), GOLD)
    # What the official eval.py gives a perfect 0/1 file: bool("0") is True.
    assert TASK.score(GOLD, all_true) == {"all": {"accuracy": 40.0, "consistency": 0.0}}
    assert TASK.metrics == ("accuracy", "consistency") and TASK.primary_metric == "accuracy"
    assert TASK.derive_subsets(GOLD) == {}
    assert list(TASK.derive_subsets(GOLD, "writer")) == ["writer:0"]


def synthetic_split(size=600, seed=3, shares=(0.3, 0.6, 0.9), **options):
    data = TASK.synthetic_gold(size, seed=seed)
    gold = TASK.read_gold(data)
    stacked = np.stack(
        [TASK.parse(TASK.synthetic_predictions(data, s, seed=i, **options), gold) for i, s in enumerate(shares)]
    )
    return data, gold, stacked


def test_score_batch_units_outcomes_and_intervals_agree():
    _, gold, stacked = synthetic_split()
    batch = TASK.score_batch(gold, stacked)
    assert batch == [TASK.score(gold, r) for r in stacked]
    units = TASK.unit_correctness(gold, stacked)
    assert (units.mean(axis=1) * 100).tolist() == [s["all"]["accuracy"] for s in batch]
    found = TASK.example_outcomes(gold, stacked)
    assert found["counts"]["accuracy"][0].shape == (gold.n, 3)
    intervals = statistics.intervals(TASK, gold, stacked, {"all": (None, ["accuracy", "consistency"])}, resamples=200)
    for metric in ("accuracy", "consistency"):
        assert intervals[("all", metric)].values.tolist() == pytest.approx([s["all"][metric] for s in batch])
    votes = TASK.label_votes(gold, stacked)
    assert [v.field for v in votes] == ["label"] and votes[0].votes.shape == (3, gold.n, 1)


def test_encode_decode_round_trip():
    _, gold, stacked = synthetic_split(size=37)
    blobs = [TASK.encode(r) for r in stacked]
    assert all(len(blob) == 5 for blob in blobs)
    assert np.array_equal(TASK.decode_many(blobs, gold.n), stacked)
    assert np.array_equal(TASK.decode(blobs[1], gold.n), stacked[1])


def test_synthetic_predictions_hit_the_accuracy_asked_and_write_0_1():
    data, gold, stacked = synthetic_split(size=3000)
    for share, score in zip((0.3, 0.6, 0.9), TASK.score_batch(gold, stacked), strict=True):
        assert abs(score["all"]["accuracy"] - 100 * share) < 3
    words = {line.rsplit(b",", 1)[1] for line in TASK.synthetic_predictions(data, 0.5).splitlines()}
    assert words == {b"0", b"1"}
    _, _, correlated = synthetic_split(size=3000, shares=(0.6,), group_correlation=1.0)
    independent = TASK.score(gold, stacked[1])["all"]["consistency"]
    assert TASK.score(gold, correlated[0])["all"]["consistency"] > independent + 10


def test_synthetic_gold_has_the_official_shape():
    data = TASK.synthetic_gold(994, seed=1)
    rows = [json.loads(line) for line in data.splitlines()]
    assert len(rows) == 994 and all(list(r) == list(ROWS[0]) for r in rows)
    assert all(isinstance(r["label"], bool) for r in rows)
    assert 0.38 < sum(r["label"] for r in rows) / 994 < 0.5
    sizes = Counter(Counter(r["identifier"][:-2] for r in rows).values())
    assert sizes.most_common(1)[0][0] == 2 and 420 < sum(sizes.values()) < 540
    gold = TASK.read_gold(data)
    assert gold.n_groups == sum(sizes.values())
    assert TASK.synthetic_gold(10, seed=1, split="dev").startswith(b'{"sentence"')
    assert json.loads(TASK.synthetic_gold(10, seed=1, split="dev").splitlines()[0])["identifier"].startswith("dev-")


def test_file_format_and_example():
    assert TASK.parse(TASK.sample(GOLD), GOLD).tolist() == [True] * 5
    assert "bool(prediction)" in TASK.file_format and "1 or 0" in TASK.file_format
    gold = TASK.read_gold(jsonl([row("test1-769-1-0-1", False), row("test1-769-1-0-2", True)]))
    assert TASK.parse("\n".join(TASK.example).encode(), gold).tolist() == [False, True]
    assert TASK.demo_references("dev") == []
