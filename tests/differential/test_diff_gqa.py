"""GQA: the app's numbers against the official eval.py (tests/differential/official/gqa.py), on generated questions
files (balanced and unbalanced questions, entailed lists with repeats and the question's own id, null global
groups) and predictions files (perfect, mostly right, case and space variants, random, all "yes"; shuffled).

Every metric and every per-type accuracy the official script reports equals the app's within 1e-9; the app's
subsets 'structural:<type>' and 'semantic:<type>' are the official 'structural: <type>' and 'semantic: <type>'.
Files the official script would score differently (a duplicate: last wins; an extra id: ignored) are refused.

With a choices file (generated in every shape of cases.GQA_CHOICES_SHAPES, predictions drawn from the lists, their
case and space variants, and "Common" questions), validity and plausibility equal the official script's within
1e-9, on the split and on a blind test's part; choices files it crashes on or reads otherwise are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task, sealed
from tests.differential.cases import (
    GQA_CHOICES_SHAPES,
    gqa_choice_predictions,
    gqa_choices,
    make_bad_files,
    make_bad_gqa_choices,
    make_case,
)
from tests.differential.reference import GQA_CHOICES_METRICS, METRICS, official_scores

TASK = get_task("gqa")
CASES = [(1, 15), (2, 60), (3, 200), (4, 300), (5, 7)]  # (seed, questions)
TOLERANCE = 1e-9


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"seed{case[0]}-n{case[1]}")
def case(request):
    seed, size = request.param
    gold_bytes, files = make_case("gqa", seed, size)
    gold = TASK.read_gold(gold_bytes)
    subsets = TASK.derive_subsets(gold)
    stacked = np.stack([TASK.parse(data, gold) for data in files])
    return gold_bytes, files, gold, TASK.score_batch(gold, stacked, subsets)


def official_or_none(
    gold_bytes: bytes, data: bytes, choices: bytes | None = None
) -> dict[str, dict[str, float]] | None:
    """The official scores, None where the official script divides by zero (no balanced question in a global
    group: the app then leaves the distribution out)."""
    try:
        return official_scores("gqa", gold_bytes, data, choices=choices)
    except ZeroDivisionError:
        return None


def test_every_metric_and_typed_subset_equals_the_official(case):
    gold_bytes, files, _, scores = case
    for data, ours in zip(files, scores, strict=True):
        theirs = official_or_none(gold_bytes, data)
        assert theirs is not None
        named = {name if name == "all" else name.replace(": ", ":", 1): values for name, values in theirs.items()}
        assert set(ours) == set(named)
        assert set(ours["all"]) == set(METRICS["gqa"])
        for subset, values in named.items():
            assert set(ours[subset]) == set(values), subset
            for metric, value in values.items():
                assert abs(ours[subset][metric] - value) <= TOLERANCE, (subset, metric, ours[subset][metric], value)


def test_the_perfect_file_scores_as_the_official(case):
    _, _, _, scores = case
    assert scores[0]["all"] == {
        "accuracy": 100.0,
        "binary": 100.0,
        "open": 100.0,
        "consistency": 100.0,
        "distribution": 0.0,
    }


def test_a_file_without_global_groups_has_no_distribution_where_the_official_divides_by_zero():
    gold_bytes, files = make_case("gqa", 9, 4)  # its 4 questions are balanced yes/no ones: no global group
    gold = TASK.read_gold(gold_bytes)
    for data in files:
        assert official_or_none(gold_bytes, data) is None
        ours = TASK.score(gold, TASK.parse(data, gold))["all"]
        assert set(ours) == set(METRICS["gqa"]) - {"distribution"}


def test_bad_files_are_refused(case):
    gold_bytes, _, gold, _ = case
    first = gold.ids[0]
    for name, data in make_bad_files("gqa", gold_bytes):
        with pytest.raises(ValidationError) as refused:
            TASK.parse(data, gold)
        message = str(refused.value)
        if name == "object instead of list":
            assert "JSON array" in message
        elif name == "id not in gold":
            assert "unknown question 'x-not-in-gold'" in message
        else:  # missing, duplicate, null or non-string prediction: the first question is named
            assert repr(first) in message, (name, message)


# --- validity and plausibility, from a choices file -------------------------------------------------------


@pytest.fixture(scope="module", params=[(seed, shape) for seed in (1, 3, 6) for shape in GQA_CHOICES_SHAPES])
def choices_case(request):
    seed, shape = request.param
    gold_bytes, files = make_case("gqa", seed, {1: 40, 3: 200, 6: 400}[seed])
    choices = gqa_choices(gold_bytes, seed, shape)
    files = files + gqa_choice_predictions(gold_bytes, choices, seed)
    gold = TASK.read_gold(gold_bytes)
    gold = TASK.with_choices(gold, TASK.read_choices(gold, choices))
    stacked = np.stack([TASK.parse(data, gold) for data in files])
    return gold_bytes, choices, files, gold, stacked


def test_validity_and_plausibility_equal_the_official(choices_case):
    gold_bytes, choices, files, gold, stacked = choices_case
    scores = TASK.score_batch(gold, stacked, TASK.derive_subsets(gold))
    worst = 0.0
    seen = set()
    for data, ours in zip(files, scores, strict=True):
        theirs = official_or_none(gold_bytes, data, choices)
        assert theirs is not None
        assert set(ours["all"]) == set(theirs["all"]) == set(METRICS["gqa"]) | set(GQA_CHOICES_METRICS)
        for metric, value in theirs["all"].items():
            worst = max(worst, abs(ours["all"][metric] - value))
            assert abs(ours["all"][metric] - value) <= TOLERANCE, (metric, ours["all"][metric], value)
        seen.add((theirs["all"]["validity"], theirs["all"]["plausibility"]))
    assert worst <= TOLERANCE
    assert len(seen) > 2  # the files differ in validity and plausibility: the comparison can fail


def test_validity_and_plausibility_on_a_part_are_the_officials_on_its_questions(choices_case):
    """A blind test's part scores as the official script on a questions file of the part alone (its entailed
    questions outside it left out; the consistency aside, that changes nothing here)."""
    gold_bytes, choices, files, gold, stacked = choices_case
    questions = json.loads(gold_bytes)
    rows = np.arange(0, gold.n, 2)
    kept = {str(gold.ids[row]) for row in rows.tolist()}
    part_questions = {
        qid: {**q, "entailed": [e for e in q["entailed"] if e in kept]} for qid, q in questions.items() if qid in kept
    }
    if not any(q["isBalanced"] for q in part_questions.values()):
        pytest.skip("the part has no balanced question")
    part_gold = json.dumps(part_questions).encode()
    members = {"queried": rows.astype(np.int32)}
    scores = TASK.score_batch(gold, stacked, members)
    for data, ours in zip(files, scores, strict=True):
        part_predictions = json.dumps([p for p in json.loads(data) if p["questionId"] in kept]).encode()
        theirs = official_or_none(part_gold, part_predictions, choices)
        if theirs is None:
            continue
        for metric in GQA_CHOICES_METRICS:
            assert abs(ours["queried"][metric] - theirs["all"][metric]) <= TOLERANCE, metric
        restricted = TASK.score(sealed.restrict(gold, rows), stacked[0][rows])["all"]
        assert set(GQA_CHOICES_METRICS) <= set(restricted)


def test_a_common_question_takes_color_material_shape_whatever_its_lists():
    gold_bytes, _ = make_case("gqa", 2, 60)
    questions = json.loads(gold_bytes)
    common = [qid for qid, q in questions.items() if "Common" in q["types"]["detailed"] and q["isBalanced"]]
    assert common
    choices = json.dumps({qid: {"valid": ["yes"], "plausible": []} for qid in questions}).encode()
    predictions = json.dumps(
        [{"questionId": qid, "prediction": "material" if qid in common else "yes"} for qid in questions]
    ).encode()
    gold = TASK.read_gold(gold_bytes)
    gold = TASK.with_choices(gold, TASK.read_choices(gold, choices))
    ours = TASK.score(gold, TASK.parse(predictions, gold))["all"]
    theirs = official_scores("gqa", gold_bytes, predictions, choices=choices)["all"]
    assert ours["validity"] == pytest.approx(theirs["validity"], abs=TOLERANCE) and theirs["validity"] == 100.0
    balanced = sum(q["isBalanced"] for q in questions.values())
    assert ours["plausibility"] == pytest.approx(100 * len(common) / balanced, abs=TOLERANCE)
    assert theirs["plausibility"] == pytest.approx(ours["plausibility"], abs=TOLERANCE)


def test_a_split_without_choices_reports_neither():
    gold_bytes, files = make_case("gqa", 1, 40)
    gold = TASK.read_gold(gold_bytes)
    scores = TASK.score(gold, TASK.parse(files[1], gold))
    assert not set(GQA_CHOICES_METRICS) & set(scores["all"])
    outcomes = TASK.example_outcomes(gold, TASK.parse(files[1], gold)[None, :])
    assert not set(GQA_CHOICES_METRICS) & set(outcomes["counts"])


def test_choices_files_the_official_crashes_on_or_misreads_are_refused():
    gold_bytes, _ = make_case("gqa", 3, 60)
    gold = TASK.read_gold(gold_bytes)
    for name, data, expected in make_bad_gqa_choices(gold_bytes):
        with pytest.raises(ValidationError) as refused:
            TASK.read_choices(gold, data)
        assert expected in str(refused.value), (name, str(refused.value))
        if name not in ("balanced question missing", "an array, not an object"):
            assert any(problem.line for problem in refused.value.problems), (name, str(refused.value))
    # The one the official script cannot score at all: it stops at the missing entry.
    name, data, _ = make_bad_gqa_choices(gold_bytes)[0]
    with pytest.raises(KeyError):
        official_scores("gqa", gold_bytes, make_case("gqa", 3, 60)[1][0], choices=data)


def test_unbalanced_questions_need_no_entry_and_entries_of_other_questions_are_ignored():
    gold_bytes, files = make_case("gqa", 4, 120)
    choices = gqa_choices(gold_bytes, 4, "balanced only")
    gold = TASK.read_gold(gold_bytes)
    attached = TASK.with_choices(gold, TASK.read_choices(gold, choices))
    ours = TASK.score(attached, TASK.parse(files[2], gold))["all"]
    theirs = official_scores("gqa", gold_bytes, files[2], choices=choices)["all"]
    for metric in GQA_CHOICES_METRICS:
        assert abs(ours[metric] - theirs[metric]) <= TOLERANCE


def test_stored_choices_missing_a_balanced_question_of_a_corrected_gold_are_refused():
    gold_bytes, _ = make_case("gqa", 5, 80)
    questions = json.loads(gold_bytes)
    choices = gqa_choices(gold_bytes, 5, "balanced only")
    gold = TASK.read_gold(gold_bytes)
    compact = TASK.read_choices(gold, choices)
    unbalanced = next(qid for qid, q in questions.items() if not q["isBalanced"])
    questions[unbalanced] = {**questions[unbalanced], "isBalanced": True}
    corrected = TASK.read_gold(json.dumps(questions).encode())
    with pytest.raises(ValidationError) as refused:
        TASK.with_choices(corrected, compact)
    assert repr(unbalanced) in str(refused.value)
