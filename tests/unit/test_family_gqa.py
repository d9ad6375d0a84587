"""The GQA family (app/evaluation/tasks/gqa/): the official questions and predictions files read and refused
with the question and its line named, the official metrics on hand-made cases (exact match, balanced questions
only, binary/open by structural type, consistency over entailed questions, the chi-square distribution), the
units the statistics, the Ladder and the probe check count, and the synthetic files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from app.evaluation import ValidationError, encoding, sealed, statistics
from app.evaluation.label_audit import dawid_skene
from app.evaluation.tasks import get_task
from app.evaluation.tasks.gqa.scoring import GQAGold
from app.evaluation.tasks.gqa.synthetic import choices as gqa_choices

GQA = get_task("gqa")


def question(
    answer: str,
    *,
    balanced: bool = True,
    structural: str = "verify",
    semantic: str = "attr",
    entailed: tuple[str, ...] = (),
    group: str | None = None,
    image: str = "n1",
) -> dict:
    """One question of a questions file, with every field the official eval.py reads."""
    return {
        "semantic": [{"operation": "select", "dependencies": [], "argument": "table (1)"}],
        "entailed": list(entailed),
        "equivalent": [],
        "question": "Is the table red?",
        "imageId": image,
        "isBalanced": balanced,
        "groups": {"global": group, "local": "1-x"},
        "answer": answer,
        "types": {"detailed": "x", "semantic": semantic, "structural": structural},
    }


def questions_file(questions: dict[str, dict]) -> bytes:
    """A questions file with one question a line: question i (0-based) on line i + 2."""
    body = ",\n".join(f"{json.dumps(qid)}: {json.dumps(q)}" for qid, q in questions.items())
    return ("{\n" + body + "\n}\n").encode()


def predictions_file(pairs: list[tuple[object, object]]) -> bytes:
    """A predictions file with one entry a line: entry i (0-based) on line i + 2."""
    body = ",\n".join(json.dumps({"questionId": qid, "prediction": p}) for qid, p in pairs)
    return ("[\n" + body + "\n]\n").encode()


def score(gold_questions: dict[str, dict], predicted: dict[str, str], subsets: bool = False) -> dict:
    gold = GQA.read_gold(questions_file(gold_questions))
    parsed = GQA.parse(predictions_file(list(predicted.items())), gold)
    return GQA.score(gold, parsed, GQA.derive_subsets(gold) if subsets else None)


SMALL = {
    "q1": question("yes", structural="verify", semantic="attr", image="n1"),
    "q2": question("red", structural="query", semantic="attr", group="color", image="n1"),
    "q3": question("left", structural="choose", semantic="rel", group="position", image="n2"),
    "q4": question("no", balanced=False, structural="logical", image="n2"),
}


# --- files ------------------------------------------------------------------------------------------------


def test_reads_the_official_questions_file():
    gold = GQA.read_gold(questions_file(SMALL))
    assert isinstance(gold, GQAGold) and gold.n == 4 and gold.ids.tolist() == ["q1", "q2", "q3", "q4"]
    assert gold.labels["balanced"].tolist() == [True, True, True, False]
    assert gold.labels["answer"].tolist() == encoding.text_hashes(["yes", "red", "left", "no"]).tolist()
    assert gold.fields["structural"].tolist() == ["verify", "query", "choose", "logical"]
    assert gold.groups.tolist() == [0, 0, 1, 1]  # one group an image
    assert {name: members.tolist() for name, members in GQA.derive_subsets(gold).items()} == {
        "structural:choose": [2],
        "structural:query": [1],
        "structural:verify": [0],
        "semantic:attr": [0, 1],
        "semantic:rel": [2],
    }


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda q: q["q2"].pop("answer"), "line 3: question 'q2': missing or invalid 'answer'"),
        (lambda q: q["q2"].update(isBalanced="yes"), "line 3: question 'q2': missing or invalid 'isBalanced'"),
        (lambda q: q["q2"].update(semantic="select"), "line 3: question 'q2': missing or invalid 'semantic'"),
        (lambda q: q["q3"].pop("imageId"), "line 4: question 'q3': missing or invalid 'imageId'"),
        (lambda q: q["q3"]["types"].pop("structural"), "line 4: question 'q3': missing or invalid 'types'"),
        (lambda q: q["q3"]["groups"].pop("global"), "line 4: question 'q3': missing or invalid 'groups'"),
        (lambda q: q["q1"].update(entailed=["q9"]), "line 2: question 'q1': entailed question 'q9' is not in"),
        (lambda q: q.update(q5="nothing"), "line 6: question 'q5': expected an object"),
    ],
)
def test_a_gold_file_the_official_script_would_fail_on_is_refused_naming_question_and_line(change, message):
    questions = json.loads(json.dumps(SMALL))
    change(questions)
    with pytest.raises(ValidationError) as refused:
        GQA.read_gold(questions_file(questions))
    assert str(refused.value).startswith(message)


def test_what_the_official_script_never_reads_of_an_unbalanced_question_is_not_checked():
    questions = json.loads(json.dumps(SMALL))
    questions["q4"]["entailed"] = ["not-in-the-file"]
    del questions["q4"]["types"], questions["q4"]["groups"]
    gold = GQA.read_gold(questions_file(questions))
    assert gold.fields["structural"].tolist()[3] == ""


def test_gold_files_without_balanced_questions_or_not_an_object_are_refused():
    with pytest.raises(ValidationError, match="no balanced question"):
        GQA.read_gold(questions_file({"q1": question("yes", balanced=False)}))
    with pytest.raises(ValidationError, match="one object keyed by question id"):
        GQA.read_gold(b'[{"answer": "yes"}]')
    with pytest.raises(ValidationError, match="no questions"):
        GQA.read_gold(b"{}")


@pytest.mark.parametrize(
    "pairs, message",
    [
        ([("q1", "yes"), ("q2", "red"), ("q3", "left")], "missing predictions for 1 question of 4"),
        (
            [("q1", "yes"), ("q2", "red"), ("q3", "left"), ("q4", "no"), ("q2", "blue")],
            "line 6: entry 5: duplicate question 'q2' (first at entry 2, line 3)",
        ),
        (
            [("q1", "yes"), ("q2", "red"), ("q3", "left"), ("q4", "no"), ("q7", "no")],
            "line 6: entry 5: unknown question 'q7'",
        ),
        (
            [("q1", "yes"), ("q2", None), ("q3", "left"), ("q4", "no")],
            "line 3: entry 2: question 'q2': 'prediction' must be",
        ),
        (
            [("q1", "yes"), ("q2", 2), ("q3", "left"), ("q4", "no")],
            "line 3: entry 2: question 'q2': 'prediction' must be",
        ),
        ([("q1", "yes"), (2, "red"), ("q3", "left"), ("q4", "no")], "line 3: entry 2: 'questionId' must be a string"),
    ],
)
def test_a_bad_prediction_file_is_refused_naming_question_and_line(pairs, message):
    gold = GQA.read_gold(questions_file(SMALL))
    with pytest.raises(ValidationError) as refused:
        GQA.parse(predictions_file(pairs), gold)
    assert message in str(refused.value)
    if "missing" in message:
        assert "'q4'" in str(refused.value)


def test_an_entry_not_an_object_bad_json_and_an_object_file_are_refused():
    gold = GQA.read_gold(questions_file(SMALL))
    good = predictions_file([("q1", "yes"), ("q2", "red"), ("q3", "left"), ("q4", "no")])
    with pytest.raises(ValidationError, match="line 3: entry 2: expected an object"):
        GQA.parse(good.replace(b'{"questionId": "q2", "prediction": "red"}', b'["q2", "red"]'), gold)
    with pytest.raises(ValidationError, match="line 3: invalid JSON"):
        GQA.parse(good.replace(b'"q2",', b'"q2"'), gold)
    with pytest.raises(ValidationError, match="JSON array"):
        GQA.parse(b'{"q1": "yes", "q2": "red", "q3": "left", "q4": "no"}', gold)
    with pytest.raises(ValidationError, match="more JSON values"):
        GQA.parse(b"[" + b"1," * 5000 + b"1]", gold)  # bounded before the parse
    assert GQA.parse(good, gold).dtype == np.uint64


def test_predictions_are_aligned_to_the_gold_order_as_text_hashes():
    gold = GQA.read_gold(questions_file(SMALL))
    parsed = GQA.parse(predictions_file([("q4", "no"), ("q2", "Red"), ("q1", "yes"), ("q3", " left")]), gold)
    assert parsed.tolist() == encoding.text_hashes(["yes", "Red", " left", "no"]).tolist()
    assert GQA.parse(GQA.sample(gold), gold).tolist() == encoding.text_hashes(["yes"] * 4).tolist()


# --- metrics ----------------------------------------------------------------------------------------------


def test_exact_case_and_space_sensitive_match():
    right = score(SMALL, {"q1": "yes", "q2": "red", "q3": "left", "q4": "no"})["all"]
    assert right["accuracy"] == 100.0
    for wrong in ("Yes", "yes ", " yes", "yes.", "YES"):
        assert score(SMALL, {"q1": wrong, "q2": "red", "q3": "left", "q4": "no"})["all"]["accuracy"] == pytest.approx(
            200 / 3
        )


def test_binary_and_open_are_split_by_structural_type_not_by_answer():
    # q3 is a "choose" question answered "left": binary. Only q2 ("query") is open.
    scores = score(SMALL, {"q1": "no", "q2": "red", "q3": "left", "q4": "no"}, subsets=True)
    assert scores["all"]["open"] == 100.0 and scores["all"]["binary"] == 50.0
    assert scores["structural:verify"] == {"accuracy": 0.0} and scores["structural:choose"] == {"accuracy": 100.0}
    assert scores["semantic:attr"] == {"accuracy": 50.0}


def test_only_balanced_questions_count_and_a_missing_kind_scores_zero_as_the_official():
    questions = {**SMALL, "q5": question("no", balanced=False, structural="query")}
    right = {"q1": "yes", "q2": "red", "q3": "left"}
    assert score(questions, {**right, "q4": "wrong", "q5": "wrong"})["all"]["accuracy"] == 100.0
    only_binary = {"q1": question("yes"), "q2": question("no", balanced=False, structural="query")}
    scores = score(only_binary, {"q1": "yes", "q2": "no"}, subsets=True)
    assert scores["all"]["open"] == 0.0  # avg([]) * 100 in the official script
    assert "structural:query" not in scores  # no balanced question of that type: none reported


def test_consistency_over_entailed_questions():
    questions = {
        # right, entails q2 (right), q3 (wrong, unbalanced), q3 again and itself (skipped): 2 of 3 -> 66.7
        "q1": question("yes", entailed=("q2", "q3", "q3", "q1")),
        "q2": question("no", entailed=("q3",)),  # right: its one entailed question is wrong -> 0
        "q3": question("no", balanced=False, entailed=("q1",)),  # unbalanced: entails nothing that counts
        "q4": question("yes", entailed=("q1",)),  # wrong: not counted
        "q5": question("yes", entailed=("q5",)),  # right but entails only itself: not counted
    }
    predicted = {"q1": "yes", "q2": "no", "q3": "yes", "q4": "no", "q5": "yes"}
    assert score(questions, predicted)["all"]["consistency"] == pytest.approx((1 / 3 + 0.0) / 2 * 100)
    # No balanced question right with entailed questions: 0, as avg([]) in the official script.
    assert score(questions, {**predicted, "q1": "no", "q2": "yes"})["all"]["consistency"] == 0.0


def test_distribution_is_the_official_chi_square_over_global_groups():
    questions = {
        "a": question("red", structural="query", group="color"),
        "b": question("red", structural="query", group="color"),
        "c": question("blue", structural="query", group="color"),
        "d": question("street", structural="query", group="place"),
        "e": question("yes"),  # no global group: not counted
        "f": question("kitchen", balanced=False, structural="query", group="place"),  # unbalanced: not counted
    }
    predicted = {"a": "red", "b": "green", "c": "red", "d": "street", "e": "no", "f": "street"}
    # color: red expected 2 seen 2 -> 0, blue expected 1 seen 0 -> 1 ("green" is no gold answer: ignored);
    # place: 0. Weighted by the groups' gold counts: (1 * 3 + 0 * 1) / 4, then / 100.
    assert score(questions, predicted)["all"]["distribution"] == pytest.approx(0.0075, abs=1e-15)
    assert score(questions, {**predicted, "b": "red", "c": "blue"})["all"]["distribution"] == 0.0
    no_groups = {"a": question("yes"), "b": question("no")}
    assert "distribution" not in score(no_groups, {"a": "yes", "b": "no"})["all"]  # the official divides by 0


# --- storage, batches, units and statistics ---------------------------------------------------------------


@pytest.fixture(scope="module")
def board():
    """A synthetic split of 160 questions with its choices file, and six entries of different accuracy."""
    data = GQA.synthetic_gold(160, seed=3)
    gold = GQA.read_gold(data)
    gold = GQA.with_choices(gold, GQA.read_choices(gold, gqa_choices(data, seed=3)))
    files = [GQA.synthetic_predictions(data, share, seed=i) for i, share in enumerate((0.3, 0.5, 0.6, 0.7, 0.8, 0.95))]
    return gold, np.stack([GQA.parse(f, gold) for f in files])


def test_encode_decode_round_trip(board):
    gold, stacked = board
    blobs = [GQA.encode(row) for row in stacked]
    assert all(len(blob) == 8 * gold.n for blob in blobs)
    assert np.array_equal(GQA.decode(blobs[2], gold.n), stacked[2])
    assert np.array_equal(GQA.decode_many(blobs, gold.n), stacked)


def test_score_batch_equals_score_of_each_row(board):
    gold, stacked = board
    subsets = GQA.derive_subsets(gold)
    subsets["queried"] = np.flatnonzero(gold.groups % 2 == 0).astype(np.int32)
    batch = GQA.score_batch(gold, stacked, subsets)
    for row, result in zip(stacked, batch, strict=True):
        assert result == GQA.score(gold, row, subsets)
        assert set(result["all"]) == set(GQA.metrics) and set(result["queried"]) == set(GQA.metrics)


def test_units_are_the_balanced_questions(board):
    gold, stacked = board
    balanced = gold.labels["balanced"]
    right = stacked == gold.labels["answer"]
    correct = GQA.unit_correctness(gold, stacked)
    assert correct.shape == (6, balanced.sum()) and np.array_equal(correct, right[:, balanced])
    assert GQA.counted_units(gold, "accuracy") == balanced.sum()
    binary = balanced & (gold.fields["structural"] != "query")
    assert GQA.counted_units(gold, "binary") == binary.sum()
    assert GQA.counted_units(gold, "open") == (balanced & ~binary).sum()
    assert GQA.counted_units(gold, "accuracy", np.arange(10)) == balanced[:10].sum()
    assert GQA.zero_one_losses(gold, stacked[0]).tolist() == (~correct[0]).astype(float).tolist()
    scores = GQA.score_batch(gold, stacked)
    assert [s["all"]["accuracy"] for s in scores] == pytest.approx((correct.mean(axis=1) * 100).tolist())
    # The probe check: a change to an unbalanced prediction is no distance; one to a balanced one is.
    changed = stacked[1].copy()
    changed[np.flatnonzero(~balanced)] = 0
    blobs = [GQA.encode(stacked[1])]
    assert GQA.split_probe_distances(gold, changed, blobs).tolist() == [0.0]
    changed[np.flatnonzero(balanced)[:4]] = 0
    assert GQA.split_probe_distances(gold, changed, blobs).tolist() == [
        pytest.approx(np.count_nonzero(changed[balanced] != stacked[1][balanced]) / balanced.sum())
    ]


def test_example_outcomes_count_balanced_questions_of_each_kind(board):
    gold, stacked = board
    outcomes = GQA.example_outcomes(gold, stacked)
    balanced = gold.labels["balanced"]
    right, counted = outcomes["counts"]["accuracy"]
    assert right.shape == (gold.n, 6) and counted.tolist() == balanced.astype(int).tolist()
    assert not right[~balanced].any()
    binary_right, binary_counted = outcomes["counts"]["binary"]
    assert binary_counted.sum() == GQA.counted_units(gold, "binary") and binary_right.sum() <= right.sum()
    scores = GQA.score_batch(gold, stacked)
    for metric in GQA.choices_metrics:  # counted on the balanced questions, the shares the scores give
        inside, counted = outcomes["counts"][metric]
        assert counted.tolist() == balanced.astype(int).tolist() and not inside[~balanced].any()
        shares = inside.sum(axis=0) / balanced.sum() * 100
        assert shares.tolist() == pytest.approx([s["all"][metric] for s in scores])


def test_intervals_for_ratios_and_none_for_the_estimate_only_metrics(board):
    gold, stacked = board
    wanted = {
        "all": (None, list(GQA.metrics)),
        "structural:query": (GQA.derive_subsets(gold)["structural:query"], ["accuracy"]),
    }
    found = statistics.intervals(GQA, gold, stacked, wanted, resamples=200)
    scores = GQA.score_batch(gold, stacked, {"structural:query": wanted["structural:query"][0]})
    ratios = [("all", m) for m in ("accuracy", "binary", "open", "validity", "plausibility")]
    for subset, metric in [*ratios, ("structural:query", "accuracy")]:
        interval = found[(subset, metric)]
        assert interval.values.tolist() == pytest.approx([s[subset][metric] for s in scores])
        assert np.isfinite(interval.low).all() and (interval.low <= interval.values).all()
        assert (interval.values <= interval.high).all()
    for metric in GQA.estimate_only_metrics:
        interval = found[("all", metric)]
        assert interval.values.tolist() == pytest.approx([s["all"][metric] for s in scores])
        assert np.isnan(interval.low).all() and np.isnan(interval.high).all()
    counted = statistics.intervals(GQA, gold, stacked, {"all": (None, ["accuracy"])}, counts_only=True)
    assert np.isfinite(counted[("all", "accuracy")].low).all()


def test_a_part_is_scored_as_the_questions_of_the_part_alone(board):
    """A blind test's part (whole images): its gold set (sealed.restrict) and the part as a subset agree, and the
    consistency counts the entailed questions inside the part."""
    gold, stacked = board
    part = np.flatnonzero(sealed.sealed_mask(gold.groups, 0.5, "secret")).astype(np.int32)
    restricted = sealed.restrict(gold, part)
    assert isinstance(restricted, GQAGold)
    whole = GQA.score_batch(gold, stacked, {"sealed": part})
    alone = GQA.score_batch(restricted, stacked[:, part])
    for a, b in zip(whole, alone, strict=True):
        assert a["sealed"] == pytest.approx(b["all"])
    assert GQA.counted_units(restricted, "accuracy") == gold.labels["balanced"][part].sum()
    # By hand: q1 entails q2 (right) and q3 (wrong); with q3 left out of the part, q1's consistency is 100.
    questions = {
        "q1": question("yes", entailed=("q2", "q3"), image="n1"),
        "q2": question("no", image="n1"),
        "q3": question("no", balanced=False, image="n2"),
    }
    small = GQA.read_gold(questions_file(questions))
    predicted = GQA.parse(predictions_file([("q1", "yes"), ("q2", "no"), ("q3", "yes")]), small)
    assert GQA.score(small, predicted)["all"]["consistency"] == 50.0
    assert GQA.score(sealed.restrict(small, np.array([0, 1])), predicted[:2])["all"]["consistency"] == 100.0


def test_a_label_correction_counts_the_questions_it_changes():
    questions = json.loads(json.dumps(SMALL))
    old = GQA.read_gold(questions_file(questions))
    questions["q2"]["answer"] = "blue"
    questions["q1"]["entailed"] = ["q4"]
    new = GQA.read_gold(questions_file(questions))
    assert (old.labels != new.labels).tolist() == [True, True, False, False]


# --- synthetic data ---------------------------------------------------------------------------------------


def test_synthetic_files_are_official_and_as_accurate_as_asked():
    data = GQA.synthetic_gold(600, seed=1)
    assert data == GQA.synthetic_gold(600, seed=1) and data != GQA.synthetic_gold(600, seed=2)
    questions = json.loads(data)
    assert len(questions) == 600 and all(
        q["answer"] in ("yes", "no") for q in questions.values() if q["types"]["structural"] in ("verify", "logical")
    )
    assert any(not q["isBalanced"] for q in questions.values()) and any(q["entailed"] for q in questions.values())
    gold = GQA.read_gold(data)
    assert gold.n_groups < gold.n / 2  # several questions an image
    for share in (0.2, 0.75):
        scores = GQA.score(gold, GQA.parse(GQA.synthetic_predictions(data, share, seed=4), gold))
        assert scores["all"]["accuracy"] == pytest.approx(100 * share, abs=8)
        assert math.isfinite(scores["all"]["distribution"])
    entries = json.loads(GQA.synthetic_predictions(data, 0.5, seed=4, shuffle=False))
    assert [entry["questionId"] for entry in entries] == list(questions)
    assert GQA.demo_references("test-dev")[0][1] == {"all": {"accuracy": 89.3}}
    assert json.loads("".join(GQA.example))  # the three lines make a valid file


def test_a_label_audit_finds_a_flipped_yes_no_answer():
    data = GQA.synthetic_gold(300, seed=2)
    questions = json.loads(data)
    flipped = [qid for qid, q in questions.items() if q["answer"] == "yes"][3]
    questions[flipped]["answer"] = "no"
    gold = GQA.read_gold(json.dumps(questions).encode())
    files = [GQA.synthetic_predictions(data, share, seed=i) for i, share in enumerate((0.85, 0.9, 0.9, 0.95, 0.8))]
    (field,) = GQA.label_votes(gold, np.stack([GQA.parse(f, gold) for f in files]))
    assert field.field == "answer" and field.classes == ("no", "yes", "another answer")
    assert field.gold[gold.index[flipped]] == 0 and set(field.gold.tolist()) == {0, 1, 2}
    estimate = dawid_skene(field.votes, field.gold, len(field.classes))
    assert gold.ids[estimate.ranking()[0]] == flipped and field.classes[estimate.likely[gold.index[flipped]]] == "yes"


# --- the choices file ----------------------------------------------------------------------------------------


def _choices_case():
    data = GQA.synthetic_gold(60, seed=8)
    questions = json.loads(data)
    balanced = [qid for qid, question in questions.items() if question["isBalanced"]]
    unbalanced = [qid for qid, question in questions.items() if not question["isBalanced"]]
    return GQA.read_gold(data), json.loads(gqa_choices(data, seed=8)), balanced, unbalanced


def test_a_hostile_choices_file_is_refused_with_a_reason_never_a_crash():
    gold, choices, balanced, unbalanced = _choices_case()
    others = {qid: entry for qid, entry in choices.items() if qid != unbalanced[0]}
    body = json.dumps(others).encode()
    skipped = f', "{unbalanced[0]}": '.encode()
    cases = {
        b"": "empty",
        body[:-1] + b"\xff}": "not valid UTF-8",
        body[:-1] + skipped + b"[" * 100_000 + b"]" * 100_000 + b"}": "not valid JSON",
        body[:-1] + skipped + b"1" * 5_000 + b"}": "not valid JSON",
        body + b" x": "text after the object",
        body[:-1] + b",}": "a comma before the closing brace",
        b'{"a" 1}': "expected a question id (a string) and a colon",
    }
    for data, reason in cases.items():
        with pytest.raises(ValidationError) as refused:
            GQA.read_choices(gold, data)
        assert reason in str(refused.value), (data[:40], str(refused.value))
    # A byte-order mark is no problem; an unbalanced question's entry is never read, whatever it holds.
    assert GQA.read_choices(gold, b"\xef\xbb\xbf" + body)
    assert GQA.read_choices(gold, body[:-1] + skipped + b'"not an object"}')


def test_a_question_repeated_is_refused_naming_where_it_was_first():
    gold, choices, balanced, _ = _choices_case()
    entry = json.dumps(choices[balanced[0]])
    lines = [json.dumps({qid: value})[1:-1] for qid, value in choices.items()]
    repeated = [f'"{balanced[0]}": {entry}'] * 2
    data = ("{\n" + ",\n".join(lines + repeated) + "\n}\n").encode()
    first = 2 + list(choices).index(balanced[0])
    with pytest.raises(ValidationError) as refused:
        GQA.read_choices(gold, data)
    messages = [problem.message for problem in refused.value.problems]
    assert len(messages) == 2 and all(f"(first on line {first})" in message for message in messages)


def test_stored_choices_are_compact_and_read_back_alike():
    gold, choices, balanced, unbalanced = _choices_case()
    compact = GQA.read_choices(gold, json.dumps(choices).encode())
    attached = GQA.with_choices(gold, compact)
    stored = attached.choices
    rows = gold.id_index.get_indexer(balanced)
    assert (stored.valid[rows] >= 0).all() and (stored.plausible[rows] >= 0).all()
    assert (stored.valid[gold.id_index.get_indexer(unbalanced)] == -1).all()  # never read: never kept
    # Questions of one kind share one list: far fewer lists than questions.
    assert stored.offsets.size - 1 < len(balanced)
    with pytest.raises(ValueError):
        GQA.with_choices(gold, b"not stored choices")
