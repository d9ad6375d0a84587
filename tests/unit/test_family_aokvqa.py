"""The A-OKVQA family: its gold reader, its refusals (each naming the question and its line), its two metrics as
the official eval_predictions.py computes them, its stored layout and what the statistics, the label audit and
the synthetic data ask of it. The differential tests (tests/differential/test_diff_aokvqa.py) compare it with
the official code itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task, sealed, statistics
from app.evaluation.tasks import TASK_TYPES
from app.evaluation.tasks.aokvqa.formats import DA_MISSING, MC_MISSING, MC_OUTSIDE

TASK = get_task("a-okvqa")


def _question(qid: str, choices=None, correct=0, direct=None, difficult=False, **extra) -> dict:
    return {
        "split": "val",
        "image_id": 42,
        "question_id": qid,
        "question": "What is it?",
        "choices": choices or ["bus", "train", "car", "bike"],
        "correct_choice_idx": correct,
        "direct_answers": direct or ["bus"] * 10,
        "difficult_direct_answer": difficult,
        "rationales": ["Because."],
        **extra,
    }


def _lines(items) -> bytes:
    """A JSON list, one question a line (line 1 is the bracket, question i on line i + 2)."""
    return ("[\n" + ",\n".join(json.dumps(item) for item in items) + "\n]\n").encode()


def _predictions(entries: dict) -> bytes:
    """A predictions object, one entry a line (the first entry on line 2)."""
    body = ",\n".join(f"{json.dumps(qid)}: {json.dumps(value)}" for qid, value in entries.items())
    return ("{\n" + body + "\n}\n").encode()


# Four questions: q0 right choice "bus" and 10 x "bus"; q1 answers split 2 "red" / 1 "Red" / 7 others; q2 difficult;
# q3 a choice repeated (its twin at index 2 is as right as the labelled one).
GOLD_ROWS = [
    _question("q0"),
    _question(
        "q1",
        choices=["red", "blue", "green", "white"],
        correct=1,
        direct=["red", "red", "Red", "blue", "blue", "blue", "navy", "navy", "sky", "teal"],
    ),
    _question("q2", difficult=True, direct=["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]),
    _question("q3", choices=["dog", "cat", "dog", "bird"], correct=0, direct=["dog"] * 2 + ["puppy"] * 8),
]
GOLD = TASK.read_gold(_lines(GOLD_ROWS))


def _score(entries: dict) -> dict:
    return TASK.score(GOLD, TASK.parse(_predictions(entries), GOLD))["all"]


def test_registered_after_the_first_families_with_its_metrics():
    assert list(TASK_TYPES).index("a-okvqa") >= 4 and TASK.label == "A-OKVQA"
    assert TASK.metrics == ("mc_accuracy", "da_accuracy") and TASK.primary_metric == "mc_accuracy"
    assert TASK.tie_break_metric == "da_accuracy" and TASK.subset_metrics == TASK.metrics
    assert TASK.derive_subsets(GOLD) == {}
    assert TASK.demo_references("val") == []


# --- gold ---------------------------------------------------------------------------------------------------


def test_gold_keeps_ids_in_order_one_group_each_and_scalar_fields():
    assert GOLD.ids.tolist() == ["q0", "q1", "q2", "q3"] and GOLD.groups.tolist() == [0, 1, 2, 3]
    assert GOLD.labels.shape == (4, 16) and GOLD.labels[:, 0].tolist() == [0, 1, 0, 0]
    assert GOLD.labels[:, 1].tolist() == [0, 0, 1, 0]
    assert set(GOLD.fields) == {"split", "image_id", "question"} and GOLD.fields["image_id"][0] == "42"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"choices": ["bus", "train", "car"]}, "'choices' of question 'q1' is not an array of 4 strings"),
        ({"correct_choice_idx": 4}, "'correct_choice_idx' of question 'q1' is not an integer 0-3"),
        ({"correct_choice_idx": True}, "'correct_choice_idx' of question 'q1' is not an integer 0-3"),
        ({"direct_answers": ["bus"] * 9}, "'direct_answers' of question 'q1' is not an array of 10 strings"),
        ({"direct_answers": ["bus"] * 9 + [3]}, "'direct_answers' of question 'q1' is not an array of 10 strings"),
        ({"difficult_direct_answer": 0}, "'difficult_direct_answer' of question 'q1' is not true or false"),
        ({"correct_choice_idx": None, "question_id": 7}, "missing or invalid 'question_id' (a non-empty string)"),
        ({"question_id": "q0"}, "duplicate question_id 'q0' (first on line 2)"),
    ],
)
def test_a_malformed_gold_question_is_refused_naming_its_line_and_id(change, message):
    rows = [_question("q0"), {**_question("q1"), **change}, _question("q2")]
    with pytest.raises(ValidationError) as caught:
        TASK.read_gold(_lines(rows))
    assert str(caught.value) == f"line 3: {message}"


def test_gold_refusals_for_missing_fields_shapes_and_scope():
    row = _question("q1")
    del row["correct_choice_idx"]  # the test split's file, without answers
    with pytest.raises(ValidationError, match=r"line 3: question 'q1' has no 'correct_choice_idx'"):
        TASK.read_gold(_lines([_question("q0"), row]))
    with pytest.raises(ValidationError, match="line 2: expected a JSON object"):
        TASK.read_gold(_lines([["q0"]]))
    with pytest.raises(ValidationError, match="a JSON array of questions; found an object"):
        TASK.read_gold(b'{"q0": {}}')
    with pytest.raises(ValidationError, match="no questions"):
        TASK.read_gold(b"[]")
    with pytest.raises(ValidationError, match="every question is difficult_direct_answer"):
        TASK.read_gold(_lines([_question("q0", difficult=True)]))
    surrogate = _lines([_question("q0")]).replace(b'"train"', b'"\\ud800"')
    with pytest.raises(
        ValidationError, match="line 2: a choice or direct answer of question 'q0' is not valid Unicode"
    ):
        TASK.read_gold(surrogate)
    with pytest.raises(ValidationError, match="line 1: invalid JSON"):
        TASK.read_gold(b"[{")


# --- predictions: refusals ------------------------------------------------------------------------------------

RIGHT = {
    "q0": {"multiple_choice": "bus", "direct_answer": "bus"},
    "q1": {"multiple_choice": "blue", "direct_answer": "blue"},
    "q2": {"multiple_choice": "bus", "direct_answer": "a"},
    "q3": {"multiple_choice": "dog", "direct_answer": "dog"},
}


def _refusal(data: bytes) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        TASK.parse(data, GOLD)
    return caught.value


def test_a_complete_file_parses_in_any_order():
    shuffled = dict(reversed(list(RIGHT.items())))
    assert TASK.parse(_predictions(shuffled), GOLD).tolist() == TASK.parse(_predictions(RIGHT), GOLD).tolist()
    assert TASK.parse(json.dumps(RIGHT).encode(), GOLD).dtype == np.uint64  # the official one-line json.dump


def test_refusals_name_the_question_and_its_line():
    missing = {key: value for key, value in RIGHT.items() if key != "q2"}
    assert str(_refusal(_predictions(missing))) == "missing predictions for 1 question of 4: 'q2'"
    unknown = _refusal(_predictions({**RIGHT, "zz": RIGHT["q0"]}))
    assert str(unknown) == "line 6: entry 5: unknown question 'zz'"
    assert unknown.summary() == "line 6: entry 5: unknown question 'zz' (questions look like q0)"
    not_object = _predictions({**RIGHT, "q1": "blue"})
    assert str(_refusal(not_object)).startswith("line 3: the prediction for question 'q1' is a string, not an object")
    not_string = _predictions({**RIGHT, "q3": {"multiple_choice": "dog", "direct_answer": None}})
    assert str(_refusal(not_string)) == "line 5: 'direct_answer' of question 'q3' is null, not a string"
    number = _predictions({**RIGHT, "q0": {"multiple_choice": 0}})
    assert str(_refusal(number)) == "line 2: 'multiple_choice' of question 'q0' is a number, not a string"


def test_a_repeated_id_or_key_is_refused_not_last_wins():
    text = _predictions(RIGHT).decode()
    repeated = text.replace("\n}", ',\n"q1": {"multiple_choice": "red", "direct_answer": "red"}\n}').encode()
    assert str(_refusal(repeated)) == "line 6: entry 5: duplicate question 'q1' (first at entry 2, line 3)"
    inner = text.replace('"q2": {', '"q2": {"direct_answer": "b", ').encode()
    assert str(_refusal(inner)) == "line 4: the prediction for question 'q2' repeats a key"


def test_whole_file_refusals():
    assert "found an array" in str(_refusal(json.dumps(list(RIGHT.values())).encode()))
    assert "invalid JSON" in str(_refusal(b'{"q0": {"multiple_choice": "bus",'))
    assert "no entry has a 'multiple_choice' or a 'direct_answer' key" in str(
        _refusal(_predictions({qid: {"multiple_choices": "bus"} for qid in RIGHT}))
    )
    assert "more JSON values" in str(_refusal(b"{" + b'"x": [' + b"1," * 100 + b"1]}"))
    surrogate = _predictions(RIGHT).replace(b'"dog"}', b'"\\udc00"}')
    assert (
        str(_refusal(surrogate)) == "line 5: 'direct_answer' of question 'q3' is not valid Unicode (a lone surrogate)"
    )
    with pytest.raises(ValidationError, match="too large"):
        TASK.parse(_predictions(RIGHT), GOLD, max_bytes=50)


def test_many_problems_are_all_named():
    entries = dict.fromkeys(RIGHT, "x") | {"extra": {}}
    error = _refusal(_predictions(entries))
    assert [problem.line for problem in error.problems] == [2, 3, 4, 5, 6]


# --- the metrics ----------------------------------------------------------------------------------------------


def test_right_file_scores_full_marks():
    assert _score(RIGHT) == {"mc_accuracy": 100.0, "da_accuracy": pytest.approx(100 * (1 + 1 + 2 / 3) / 3)}


def test_multiple_choice_is_exact_and_an_answer_outside_the_choices_is_wrong():
    for wrong in ("Bus", "bus ", " bus", "train", "a bus", ""):
        assert _score({**RIGHT, "q0": {"multiple_choice": wrong, "direct_answer": "bus"}})["mc_accuracy"] == 75.0
    # A twin of the right choice's text is right (the official compares strings, not indices).
    assert TASK.parse(_predictions(RIGHT), GOLD)[3] & 7 == 0
    assert _score({**RIGHT, "q3": {"multiple_choice": "dog", "direct_answer": "puppy"}})["mc_accuracy"] == 100.0
    codes = TASK.parse(_predictions({**RIGHT, "q0": {"multiple_choice": "Bus"}, "q1": {}}), GOLD) & 7
    assert codes.tolist() == [MC_OUTSIDE, MC_MISSING, 0, 0]


def test_direct_answers_score_thirds_exactly_and_difficult_questions_are_left_out():
    def da(answer: str) -> float:
        value: float = _score({**RIGHT, "q1": {"multiple_choice": "blue", "direct_answer": answer}})["da_accuracy"]
        return value

    base = 100 * (1 + 2 / 3) / 3  # q0 and q3 (q2 is difficult: never counted)
    assert da("blue") == pytest.approx(base + 100 / 3)  # 3 of 10: full credit
    assert da("red") == pytest.approx(base + 100 * (2 / 3) / 3)  # 2 of 10
    assert da("Red") == pytest.approx(base + 100 * (1 / 3) / 3)  # case counts: 1 of 10
    assert da("red ") == pytest.approx(base)  # no stripping, no normalisation
    assert da("navy") == pytest.approx(base + 100 * (2 / 3) / 3)
    # Whatever the difficult question's answer, it never counts.
    for answer in ("a", "zzz"):
        assert _score({**RIGHT, "q2": {"multiple_choice": "bus", "direct_answer": answer}}) == _score(RIGHT)


def test_a_missing_key_scores_zero_in_that_setting_as_officially():
    scores = _score({**RIGHT, "q0": {"multiple_choice": "bus"}, "q1": {"direct_answer": "blue"}, "q3": {}})
    assert scores["mc_accuracy"] == 50.0  # q0, q2 right
    assert scores["da_accuracy"] == pytest.approx(100 / 3)  # q1 alone
    predictions = TASK.parse(_predictions({**RIGHT, "q0": {"multiple_choice": "bus"}}), GOLD)
    assert predictions[0] >> 3 == DA_MISSING
    # No direct answer anywhere: the official prints no DA number; every question's missing answer counts 0.
    assert _score({qid: {"multiple_choice": entry["multiple_choice"]} for qid, entry in RIGHT.items()}) == {
        "mc_accuracy": 100.0,
        "da_accuracy": 0.0,
    }


def test_extra_keys_of_an_entry_are_ignored():
    extra = {qid: {**entry, "rationale": "because", "confidence": 0.5} for qid, entry in RIGHT.items()}
    assert _score(extra) == _score(RIGHT)


# --- storage, batches, subsets --------------------------------------------------------------------------------


def _board(size: int = 300, seed: int = 2) -> tuple[object, np.ndarray]:
    data = TASK.synthetic_gold(size, seed=seed)
    gold = TASK.read_gold(data)
    files = [TASK.synthetic_predictions(data, share, seed=i) for i, share in enumerate((0.9, 0.7, 0.4))]
    return gold, np.stack([TASK.parse(f, gold) for f in files])


def test_encode_decode_round_trip():
    gold, stacked = _board(50)
    blobs = [TASK.encode(row) for row in stacked]
    assert all(len(blob) == 8 * gold.n for blob in blobs)
    assert np.array_equal(TASK.decode(blobs[1], gold.n), stacked[1])
    assert np.array_equal(TASK.decode_many(blobs, gold.n), stacked)
    with pytest.raises(ValueError):
        TASK.decode(blobs[0][:-1], gold.n)


def test_score_batch_equals_score_per_row_on_subsets_and_parts():
    gold, stacked = _board()
    mask = sealed.sealed_mask(gold.groups, 0.3, "secret")
    subsets = {**sealed.parts(mask), "first": np.arange(20, dtype=np.int32), "empty": np.zeros(0, np.int32)}
    batch = TASK.score_batch(gold, stacked, subsets)
    assert [TASK.score(gold, row, subsets) for row in stacked] == batch
    assert "empty" not in batch[0] and set(batch[0]["sealed"]) == {"mc_accuracy", "da_accuracy"}
    # A part scored on its own gold set gives the same figures.
    part = sealed.parts(mask)["sealed"]
    assert TASK.score(sealed.restrict(gold, part), stacked[0][part])["all"] == batch[0]["sealed"]
    difficult = np.flatnonzero(gold.labels[:, 1] == 1).astype(np.int32)
    assert set(TASK.score(gold, stacked[0], {"hard": difficult})["hard"]) == {"mc_accuracy"}


def test_statistics_give_intervals_for_both_metrics():
    gold, stacked = _board()
    wanted = {"all": (None, ["mc_accuracy", "da_accuracy"])}
    scores = TASK.score_batch(gold, stacked)
    for options in ({"resamples": 200}, {"counts_only": True}):
        found = statistics.intervals(TASK, gold, stacked, wanted, **options)
        for metric in ("mc_accuracy", "da_accuracy"):
            interval = found[("all", metric)]
            assert interval.values == pytest.approx([s["all"][metric] for s in scores])
            assert (interval.low < interval.values).all() and (interval.values < interval.high).all()
    # A count interval counts questions in scope, not points.
    ratio = statistics.metric_ratios(TASK, gold, stacked, wanted)[("all", "da_accuracy")]
    assert ratio.points == 3 and ratio.denominators.sum() / 3 == TASK.counted_units(gold, "da_accuracy")
    correct = statistics.primary_correctness(TASK, gold, stacked)
    assert correct.shape == (3, gold.n) and statistics.significance_ranks(correct, correct.mean(1)).ranks[0] == 1


def test_counted_units_and_unit_correctness():
    assert TASK.counted_units(GOLD, "mc_accuracy") == 4 and TASK.counted_units(GOLD, "da_accuracy") == 3
    assert TASK.counted_units(GOLD, "da_accuracy", np.array([1, 2])) == 1
    assert TASK.counted_units(GOLD, "mc_accuracy", np.array([1, 2])) == 2
    wrong = TASK.parse(_predictions({**RIGHT, "q1": {"multiple_choice": "Blue"}}), GOLD)
    assert TASK.unit_correctness(GOLD, wrong[None]).tolist() == [[True, False, True, True]]
    assert TASK.zero_one_losses(GOLD, wrong).tolist() == [0.0, 1.0, 0.0, 0.0]
    assert TASK.unit_points(GOLD) == 1
    outcomes = TASK.example_outcomes(GOLD, TASK.parse(_predictions(RIGHT), GOLD)[None])
    points, per_example = outcomes["counts"]["da_accuracy"]
    assert points[:, 0].tolist() == [3, 3, 0, 2] and per_example.tolist() == [3, 3, 0, 3]
    assert outcomes["points"] == {"da_accuracy": 3}


def test_label_votes_are_the_chosen_choice():
    picks = {
        "q0": {"multiple_choice": "car"},
        "q1": {"multiple_choice": "blue"},
        "q2": {"multiple_choice": "nothing"},
        "q3": {"multiple_choice": "dog"},
    }
    stacked = np.stack([TASK.parse(_predictions(picks), GOLD), TASK.parse(_predictions(RIGHT), GOLD)])
    (votes,) = TASK.label_votes(GOLD, stacked)
    assert votes.field == "correct_choice_idx" and votes.classes == ("0", "1", "2", "3")
    assert votes.gold.tolist() == [0, 1, 0, 0]
    assert votes.votes.shape == (2, 4, 1) and votes.votes[:, :, 0].tolist() == [[2, 1, -1, 0], [0, 1, 0, 0]]


# --- synthetic data -------------------------------------------------------------------------------------------


def test_synthetic_files_have_the_official_shape_and_the_accuracy_asked():
    data = TASK.synthetic_gold(2000, seed=5)
    rows = json.loads(data)
    assert len(rows) == 2000 and len({row["question_id"] for row in rows}) == 2000
    assert all(
        len(row["choices"]) == len(set(row["choices"])) == 4 and len(row["direct_answers"]) == 10 for row in rows
    )
    assert 0.07 < np.mean([row["difficult_direct_answer"] for row in rows]) < 0.13
    assert set(rows[0]) == {
        "split",
        "image_id",
        "question_id",
        "question",
        "choices",
        "correct_choice_idx",
        "direct_answers",
        "difficult_direct_answer",
        "rationales",
    }
    gold = TASK.read_gold(data)
    upload = TASK.synthetic_predictions(data, 0.8, seed=1, da_accuracy=0.6)
    assert upload == TASK.synthetic_predictions(data, 0.8, seed=1, da_accuracy=0.6)
    scores = TASK.score(gold, TASK.parse(upload, gold))["all"]
    assert scores["mc_accuracy"] == pytest.approx(80, abs=3) and scores["da_accuracy"] == pytest.approx(60, abs=3)
    ordered = TASK.synthetic_predictions(data, 0.5, seed=2, shuffle=False)
    assert list(json.loads(ordered)) == [row["question_id"] for row in rows]
    assert TASK.parse(TASK.sample(gold), gold).shape == (2000,)
    with pytest.raises(ValueError):
        TASK.synthetic_predictions(data, 1.5)


def test_the_example_is_a_valid_file():
    example = "\n".join(TASK.example)
    qids = list(json.loads(example))
    rows = [_question(qid, choices=["riding a bike", "summer", "dog", "x"]) for qid in qids]
    gold = TASK.read_gold(_lines(rows))
    assert TASK.parse(example.encode(), gold).shape == (3,)
