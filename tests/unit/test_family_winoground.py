"""The Winoground family: the official examples.jsonl and model_scores layouts, refusals naming the line and the
label, strict ties, subsets by exact tag value, storage, units and synthetic files."""

from __future__ import annotations

import json
import re
import tracemalloc

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task, statistics
from app.evaluation.tasks.winoground.formats import KEYS
from app.evaluation.tasks.winoground.scoring import outcomes
from tests.hostile import shapes
from tests.support.files import jsonl

TASK = get_task("winoground")


def example(i, collapsed="Relation", secondary="", preds=1, **extra):
    return {
        "id": i,
        "caption_0": f"a cat on a mat {i}",
        "caption_1": f"a mat on a cat {i}",
        "image_0": f"ex_{i}_img_0",
        "image_1": f"ex_{i}_img_1",
        "tag": "Noun",
        "secondary_tag": secondary,
        "num_main_preds": preds,
        "collapsed_tag": collapsed,
        **extra,
    }


GOLD_ROWS = [
    example(0, "Object", "Symbolic", 1),
    example(1, "Relation", "Symbolic, Series", 2),
    example(2, "Both", "Series", 1),
    example(3, "Relation", "", 2),
]
GOLD = TASK.read_gold(jsonl(GOLD_ROWS, b"\n"))


def scores_file(table, ids=None, order=None) -> bytes:
    """A model_scores file: table[i] the four scores (c0_i0, c0_i1, c1_i0, c1_i1) of example ids[i]."""
    ids = list(range(len(table))) if ids is None else ids
    lines = [
        {"label": f"{identifier}_{key}", "score": value}
        for identifier, row in zip(ids, table, strict=True)
        for key, value in zip(KEYS, row, strict=True)
    ]
    if order is not None:
        lines = [lines[i] for i in order]
    return jsonl(lines, b"\n")


RIGHT = [0.9, 0.1, 0.2, 0.8]  # text and image right


def refusal(data: bytes, gold=GOLD) -> str:
    with pytest.raises(ValidationError) as caught:
        TASK.parse(data, gold)
    return str(caught.value)


# --- gold ---------------------------------------------------------------------------------------------------


def test_gold_reads_the_official_examples_file():
    assert GOLD.ids.tolist() == ["0", "1", "2", "3"]
    assert GOLD.labels.shape == (4, 0)  # no label: caption_0-image_0 and caption_1-image_1 always
    assert GOLD.groups.tolist() == [0, 1, 2, 3] and GOLD.n_groups == 4
    assert GOLD.fields["num_main_preds"].tolist() == ["1", "2", "1", "2"]
    assert GOLD.fields["secondary_tag"].tolist() == ["Symbolic", "Symbolic, Series", "Series", ""]
    assert "id" not in GOLD.fields


@pytest.mark.parametrize(
    "rows, message",
    [
        ([example(0), example(0)], "line 2: duplicate identifier '0' (first on line 1)"),
        ([example(0), {**example(1), "id": "x1"}], "line 2: identifier 'x1' is not of the form an integer"),
        ([example(0), {k: v for k, v in example(1).items() if k != "caption_1"}], "line 2: missing 'caption_1'"),
        ([example(0), {k: v for k, v in example(1).items() if k != "id"}], "line 2: missing or invalid 'id'"),
    ],
)
def test_gold_refusals_name_the_line(rows, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        TASK.read_gold(jsonl(rows))


# --- the submission layout ----------------------------------------------------------------------------------


def test_parse_reads_the_official_layout_in_any_order():
    table = [RIGHT, [0.5, 0.5, 0.5, 0.5], [1, 2, 3, 4], [-0.0, 0.0, 1e-300, 1e308]]
    order = np.random.default_rng(0).permutation(16).tolist()
    parsed = TASK.parse(scores_file(table, order=order), GOLD)
    assert parsed.dtype == np.float64 and parsed.shape == (4, 4)
    assert parsed.tolist() == [[float(v) for v in row] for row in table]
    # Blank lines, CRLF, a byte-order mark and no final newline are fine; extra keys are ignored.
    data = b"\xef\xbb\xbf" + scores_file(table).replace(b"\n", b"\r\n\r\n").rstrip()
    assert TASK.parse(data, GOLD).tolist() == parsed.tolist()
    extra = jsonl([{"label": f"{i}_{k}", "score": 1, "model": "m"} for i in range(4) for k in KEYS])
    assert TASK.parse(extra, GOLD).tolist() == [[1.0] * 4] * 4


def test_labels_read_the_id_as_the_official_int_does():
    lines = [{"label": f"{'+' if i == 1 else ''}{i:03d}_{key}", "score": 1.0} for i in range(4) for key in KEYS]
    assert TASK.parse(jsonl(lines), GOLD).shape == (4, 4)


GOOD = [{"label": f"{i}_{key}", "score": 0.5} for i in range(4) for key in KEYS]


def with_line(index: int, text: bytes) -> bytes:
    """GOOD with line ``index`` (0-based) replaced by ``text``."""
    lines = [json.dumps(record).encode() for record in GOOD]
    lines[index] = text
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(
    "data, expected",
    [
        (with_line(5, b'{"label": "1_c0_i1", "score": NaN}'), "line 6: score 'NaN' for '1_c0_i1' is NaN"),
        (with_line(0, b'{"label": "0_c0_i0", "score": Infinity}'), "line 1: score 'Infinity' for '0_c0_i0' is inf"),
        (with_line(3, b'{"label": "0_c1_i1", "score": -1e999}'), "line 4: score '-Infinity' for '0_c1_i1' is inf"),
        (with_line(2, b'{"label": "0_c1_i0", "score": "0.5"}'), "line 3: score '\"0.5\"' for '0_c1_i0' is not a num"),
        (with_line(2, b'{"label": "0_c1_i0", "score": true}'), "line 3: score 'true' for '0_c1_i0' is not a number"),
        (with_line(2, b'{"label": "0_c1_i0", "score": null}'), "line 3: score 'null' for '0_c1_i0' is not a number"),
        (with_line(2, b'{"label": "0_c1_i0"}'), "line 3: score for '0_c1_i0' is missing"),
        (
            with_line(2, b'{"label": "0_c1_i0", "score": 9007199254740993}'),
            "line 3: score '9007199254740993' for '0_c1_i0' is an integer a 64-bit float cannot hold exactly",
        ),
        (with_line(7, b'{"label": "1_c1_i1", "score": 0.5'), "line 8: invalid JSON"),
        (with_line(7, b'["1_c1_i1", 0.5]'), "line 8: expected a JSON object"),
        (with_line(7, b'{"score": 0.5}'), "line 8: missing or invalid 'label'"),
        (with_line(7, b'{"label": "1-c1-i1", "score": 0.5}'), "line 8: label '1-c1-i1' is not of the form"),
        (with_line(7, b'{"label": "1_c2_i0", "score": 0.5}'), "line 8: label '1_c2_i0' is not of the form"),
        (with_line(7, b'{"label": "1_c1_i1_x", "score": 0.5}'), "line 8: label '1_c1_i1_x' is not of the form"),
        (with_line(7, b'{"label": "9_c1_i1", "score": 0.5}'), "line 8: unknown id '9' in label '9_c1_i1'"),
        (with_line(7, b'{"label": "1_c0_i0", "score": 0.5}'), "line 8: duplicate label '1_c0_i0' (first on line 5)"),
    ],
)
def test_refusals_name_the_line_and_the_label(data, expected):
    assert expected in refusal(data)


def test_missing_scores_are_refused_naming_the_labels():
    message = refusal(jsonl(GOOD[:5] + GOOD[7:14]))
    assert "missing scores for 4 labels of 16 (2 examples): '1_c0_i1', '1_c1_i0', '3_c1_i0', '3_c1_i1'" in message


def test_every_problem_is_named_and_nothing_is_scored():
    data = with_line(0, b'{"label": "0_c0_i0", "score": NaN}').replace(b'"1_c0_i0", "score": 0.5', b'"1_c0_i0"')
    with pytest.raises(ValidationError) as caught:
        TASK.parse(data, GOLD)
    lines = [problem.line for problem in caught.value.problems]
    assert lines[:2] == [1, 5] and "labels look like 0_c0_i0" in caught.value.summary()


# --- metrics: strict '>', as the official text_correct, image_correct, group_correct --------------------------


def official(row):
    c0_i0, c0_i1, c1_i0, c1_i1 = row
    text = c0_i0 > c1_i0 and c1_i1 > c0_i1
    image = c0_i0 > c0_i1 and c1_i1 > c1_i0
    return text, image, text and image


@pytest.mark.parametrize(
    "row, expected",
    [
        (RIGHT, (True, True, True)),
        ([0.5, 0.5, 0.5, 0.5], (False, False, False)),  # every tie is wrong
        ([0.5, 0.1, 0.5, 0.9], (False, True, False)),  # c0_i0 == c1_i0: text wrong
        ([0.5, 0.5, 0.1, 0.9], (True, False, False)),  # c0_i0 == c0_i1: image wrong
        ([0.0, -0.0, -1.0, 1.0], (True, False, False)),  # -0.0 ties 0.0
        ([0.5, 0.6, 0.1, 0.9], (True, False, False)),
        ([0.5, 0.1, 0.6, 0.9], (False, True, False)),
        ([5e-324, 0.0, 0.0, 5e-324], (True, True, True)),
    ],
)
def test_each_judgement_is_the_official_one(row, expected):
    assert official(row) == expected
    text, image, group = outcomes(np.array([row], dtype=np.float64))
    assert (bool(text[0]), bool(image[0]), bool(group[0])) == expected


def test_scores_by_hand_with_subsets():
    table = [RIGHT, [0.5, 0.1, 0.5, 0.9], [0.5, 0.5, 0.1, 0.9], [0.5] * 4]  # all, image, text, none right
    predictions = TASK.parse(scores_file(table), GOLD)
    subsets = TASK.derive_subsets(GOLD)
    assert sorted(subsets) == [
        "collapsed_tag:Both",
        "collapsed_tag:Object",
        "collapsed_tag:Relation",
        "num_main_preds:1",
        "num_main_preds:2",
        "secondary_tag:Series",
        "secondary_tag:Symbolic",
        "secondary_tag:Symbolic, Series",  # exact equality, as filter_examples: in neither Symbolic nor Series
    ]
    assert subsets["secondary_tag:Symbolic"].tolist() == [0] and subsets["secondary_tag:Series"].tolist() == [2]
    scores = TASK.score(GOLD, predictions, subsets)
    assert scores["all"] == {"text": 50.0, "image": 50.0, "group": 25.0}
    assert scores["num_main_preds:1"] == {"text": 100.0, "image": 50.0, "group": 50.0}
    assert scores["collapsed_tag:Relation"] == {"text": 0.0, "image": 50.0, "group": 0.0}
    assert scores["secondary_tag:Symbolic, Series"] == {"text": 0.0, "image": 100.0, "group": 0.0}
    assert TASK.primary_metric == "group" and TASK.tie_break_metric == "text"
    assert TASK.subset_metrics == TASK.metrics == ("text", "image", "group")


def test_subsets_need_no_tags():
    bare = [{k: v for k, v in example(0).items() if k in ("id", "caption_0", "caption_1", "image_0", "image_1")}]
    gold = TASK.read_gold(jsonl(bare))
    assert TASK.derive_subsets(gold) == {}
    assert TASK.derive_subsets(gold, "caption_0") == {"caption_0:a cat on a mat 0": [0]}


# --- storage, units, statistics -------------------------------------------------------------------------------


def test_encode_decode_keeps_every_bit():
    table = np.array([[-0.0, 0.0, 5e-324, -1e308], [1 / 3, 2**53, -2.5, 1e-300]] * 2, dtype=np.float64)
    blob = TASK.encode(table)
    assert len(blob) == 4 * 4 * 8
    decoded = TASK.decode(blob, 4)
    assert decoded.tobytes() == table.tobytes() and decoded.flags.writeable
    many = TASK.decode_many([blob, TASK.encode(table[::-1])], 4)
    assert many.shape == (2, 4, 4) and many[0].tobytes() == table.tobytes() and many[1].tolist() == table[::-1].tolist()
    with pytest.raises(ValueError):
        TASK.decode(blob[:-1], 4)


def synthetic_split(size=400, seed=5):
    data = TASK.synthetic_gold(size, seed=seed)
    gold = TASK.read_gold(data)
    stacked = np.stack(
        [TASK.parse(TASK.synthetic_predictions(data, share, seed=i), gold) for i, share in enumerate((0.2, 0.5, 0.8))]
    )
    return data, gold, stacked


def test_score_batch_units_and_outcomes_agree_with_the_scores():
    _, gold, stacked = synthetic_split()
    subsets = TASK.derive_subsets(gold)
    batch = TASK.score_batch(gold, stacked, subsets)
    assert batch == [TASK.score(gold, row, subsets) for row in stacked]
    units = TASK.unit_correctness(gold, stacked)
    assert units.shape == (3, gold.n)
    assert (units.mean(axis=1) * 100).tolist() == [s["all"]["group"] for s in batch]
    assert TASK.zero_one_losses(gold, stacked[1]).tolist() == (~units[1]).astype(float).tolist()
    found = TASK.example_outcomes(gold, stacked)
    assert set(found["counts"]) == {"text", "image", "group"}
    for metric, (by_example, per_example) in found["counts"].items():
        assert per_example == 1 and by_example.shape == (gold.n, 3)
        assert (by_example.mean(axis=0) * 100).tolist() == pytest.approx([s["all"][metric] for s in batch])
    assert np.array_equal(found["all_right"], found["counts"]["group"][0])
    intervals = statistics.intervals(
        TASK, gold, stacked, {"all": (None, TASK.metrics), "num_main_preds:2": (subsets["num_main_preds:2"], ["text"])}
    )
    for (subset, metric), interval in intervals.items():
        assert interval.values.tolist() == pytest.approx([s[subset][metric] for s in batch])
        assert (interval.low <= interval.values).all() and (interval.values <= interval.high).all()
    assert TASK.label_votes(gold, stacked) == []


def test_synthetic_predictions_hit_the_accuracy_asked():
    data, gold, stacked = synthetic_split(size=2000)
    scores = TASK.score_batch(gold, stacked)
    for share, score in zip((0.2, 0.5, 0.8), scores, strict=True):
        assert abs(score["all"]["group"] - 100 * share) < 4
        assert score["all"]["text"] >= score["all"]["group"] and score["all"]["image"] >= score["all"]["group"]
    assert TASK.synthetic_predictions(data, 0.5, seed=1) == TASK.synthetic_predictions(data, 0.5, seed=1)
    unshuffled = TASK.synthetic_predictions(data, 0.5, seed=1, shuffle=False).splitlines()
    labels = [json.loads(line)["label"] for line in unshuffled[:5]]
    assert labels == ["0_c0_i0", "0_c0_i1", "0_c1_i0", "0_c1_i1", "1_c0_i0"]
    with pytest.raises(ValueError):
        TASK.synthetic_predictions(data, 1.5)


def test_synthetic_gold_has_the_official_shape():
    data = TASK.synthetic_gold(1000, seed=2)
    rows = [json.loads(line) for line in data.splitlines()]
    assert [row["id"] for row in rows] == list(range(1000))
    assert all(list(row) == list(example(0)) for row in rows)
    gold = TASK.read_gold(data)
    subsets = TASK.derive_subsets(gold)
    share = {name: len(members) / 1000 for name, members in subsets.items()}
    assert 0.5 < share["collapsed_tag:Relation"] < 0.66 and 0.02 < share["collapsed_tag:Both"] < 0.12
    assert 0.15 < share["num_main_preds:2"] < 0.4 and "secondary_tag:Symbolic, Series" in share
    assert TASK.synthetic_gold(1000, seed=2) == data and TASK.synthetic_gold(0) == b""


def test_probe_distances_count_examples_whose_comparisons_changed():
    _, gold, stacked = synthetic_split(size=200)
    new = stacked[0].copy()
    new += 1.0  # every score moved, no comparison changed: the same submission as far as any metric goes
    assert TASK.probe_distances(new, stacked[:1]).tolist() == [0.0]
    new[:20, 0] = -5.0  # c0_i0 now below everything on 20 of 200 examples
    changed = np.asarray(_changed(stacked[0][:20]))
    assert TASK.probe_distances(new, stacked[:1]).tolist() == [changed.sum() / 200]
    blobs = [TASK.encode(row) for row in stacked]
    assert TASK.stored_probe_distances(new, blobs, gold.n).tolist() == TASK.probe_distances(new, stacked).tolist()


def _changed(rows):
    """Whether setting c0_i0 to -5 changes any of the four comparisons of each row."""
    return [row[0] > row[2] or row[0] > row[1] for row in rows.tolist()]


def test_sample_is_valid_and_scores_nothing():
    sample = TASK.sample(GOLD)
    assert sample.splitlines()[0] == b'{"label": "0_c0_i0", "score": 0.0}'
    assert TASK.score(GOLD, TASK.parse(sample, GOLD))["all"] == {"text": 0.0, "image": 0.0, "group": 0.0}
    assert all(json.loads(line) for line in TASK.example)


def test_demo_references_cite_the_paper():
    rows = TASK.demo_references("dev")
    assert [name for name, _, _ in rows] == ["Human (Thrush et al. 2022)", "Chance (Thrush et al. 2022)"]
    assert rows[0][1] == {"all": {"text": 89.5, "image": 88.5, "group": 85.5}}
    assert rows[1][1] == {"all": {"text": 25.0, "image": 25.0, "group": 16.67}}
    assert {url for _, _, url in rows} == {"https://arxiv.org/abs/2204.03162"}


def test_hostile_files_are_refused_naming_a_line_at_a_small_memory_cost():
    data = TASK.synthetic_gold(400, seed=1)
    gold = TASK.read_gold(data)
    valid = TASK.synthetic_predictions(data, 0.5, seed=1)
    size = 2**20
    for name, hostile in shapes("winoground", valid, size).items():
        tracemalloc.start()
        try:
            with pytest.raises(ValidationError) as caught:
                TASK.parse(hostile, gold, max_bytes=8 * size)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        first = caught.value.problems[0]
        assert first.line is not None and first.message.startswith(f"line {first.line}: "), (name, first.message)
        assert peak <= size, (name, peak)  # the file is never copied, nor a line longer than a valid one
    long_line = valid.replace(b"}\n", b"}" + b" " * 2000 + b"\n", 1)
    assert "line 1: line of 2,039 bytes" in refusal(long_line, gold)
