"""A-OKVQA against the official eval_predictions.py (tests/differential/official/a_okvqa.py): on generated gold and
prediction files full of the cases it treats specially (answers outside the choices, case and space variants,
0 to 10 matching direct answers, difficult questions), the family's scores equal the official unrounded values
within 1e-9; the files the app refuses are refused naming the question; and the odd files the official code
scores are either scored as it does or refused, as FINDINGS.md and the family's docstring say."""

from __future__ import annotations

import json
import random

import pytest

from app.evaluation import ValidationError, get_task
from tests.differential.cases import make_bad_files, make_case, official_behaviour_files
from tests.differential.reference import official_scores

TASK = get_task("a-okvqa")
TOLERANCE = 1e-9
CASES = [(seed, 300) for seed in range(4)] + [(11, 1), (12, 12), (13, 97)]


def _ours(gold_bytes: bytes, predictions: bytes) -> dict[str, dict[str, float]]:
    gold = TASK.read_gold(gold_bytes)
    return TASK.score(gold, TASK.parse(predictions, gold), TASK.derive_subsets(gold))


@pytest.mark.parametrize("seed, size", CASES)
def test_every_prediction_file_scores_as_the_official_code(seed, size):
    gold, files = make_case("a-okvqa", seed, size)
    assert len(files) >= 4
    for number, predictions in enumerate(files):
        official = official_scores("a-okvqa", gold, predictions)
        ours = _ours(gold, predictions)
        assert set(ours) == set(official) == {"all"}, number  # no subsets, officially or here
        assert set(ours["all"]) == set(official["all"]) == {"mc_accuracy", "da_accuracy"}
        for metric, value in official["all"].items():
            assert ours["all"][metric] == pytest.approx(value, abs=TOLERANCE, rel=0), (seed, size, number, metric)


@pytest.mark.parametrize("seed", [0, 3])
def test_bad_files_are_refused_naming_the_question(seed):
    gold_bytes, _ = make_case("a-okvqa", seed, 60)
    gold = TASK.read_gold(gold_bytes)
    first = str(gold.ids[0])
    for name, data in make_bad_files("a-okvqa", gold_bytes):
        with pytest.raises(ValidationError) as caught:
            TASK.parse(data, gold)
        message = str(caught.value)
        named = "not-in-gold" if name == "id not in gold" else first
        if name == "list instead of object":
            assert "found an array" in message
        else:
            assert repr(named) in message, (name, message)
        if name not in ("missing id", "list instead of object"):
            assert message.startswith("line 1: "), (name, message)  # the generated files are one line


def test_the_official_codes_odd_files():
    gold_bytes, _ = make_case("a-okvqa", 5, 120)
    gold = TASK.read_gold(gold_bytes)
    odd = dict(official_behaviour_files("a-okvqa", gold_bytes))
    # An entry without one key: that question scores 0 in that setting, as officially.
    official = official_scores("a-okvqa", gold_bytes, odd["direct_answer key missing in first"])["all"]
    ours = _ours(gold_bytes, odd["direct_answer key missing in first"])["all"]
    assert ours == pytest.approx(official, abs=TOLERANCE, rel=0)
    # No direct answer anywhere: the official reports no DA number; here every missing answer counts 0.
    data = odd["no direct_answer at all"]
    official = official_scores("a-okvqa", gold_bytes, data)["all"]
    ours = _ours(gold_bytes, data)["all"]
    assert set(official) == {"mc_accuracy"} and ours["mc_accuracy"] == pytest.approx(official["mc_accuracy"])
    assert ours["da_accuracy"] == 0.0
    # A question absent from the file (the official counts it 0) and an id not in the gold (ignored) are refused.
    for name in ("first id missing", "extra id"):
        with pytest.raises(ValidationError):
            TASK.parse(odd[name], gold)


TRICKY = ["dog", "Dog", "dog ", " dog", "", "café", "cafe\u0301", "1,000", "1000", "n/a", "a dog", "ß", "ss", "\u00a0"]


def _tricky_case(seed: int, size: int = 200) -> tuple[bytes, list[bytes]]:
    """Beyond cases.make_case: choices repeated within a question, empty and look-alike strings (a combining accent,
    a no-break space), and entries without one key or both (the official counts that setting 0)."""
    rng = random.Random(f"aokvqa-tricky:{seed}")
    rows = []
    for index in range(size):
        choices = [rng.choice(TRICKY) for _ in range(4)]  # repeats allowed: the official compares strings
        rows.append(
            {
                "question_id": f"q{index:05d}-{rng.randrange(10**6)}",
                "choices": choices,
                "correct_choice_idx": rng.randrange(4),
                "direct_answers": [rng.choice(TRICKY[: rng.randrange(2, len(TRICKY))]) for _ in range(10)],
                "difficult_direct_answer": index > 0 and rng.random() < 0.3,
            }
        )
    files = []
    for _ in range(4):
        entries = {}
        for row in rows:
            entry = {}
            if rng.random() < 0.9:
                entry["multiple_choice"] = rng.choice(row["choices"] + TRICKY)
            if rng.random() < 0.9:
                entry["direct_answer"] = rng.choice(row["direct_answers"] + TRICKY)
            entries[row["question_id"]] = entry
        files.append(json.dumps(entries, ensure_ascii=rng.random() < 0.5).encode())
    return json.dumps(rows).encode(), files


@pytest.mark.parametrize("seed", range(3))
def test_tricky_strings_repeated_choices_and_missing_keys_score_as_the_official_code(seed):
    gold, files = _tricky_case(seed)
    for number, predictions in enumerate(files):
        official = official_scores("a-okvqa", gold, predictions)["all"]
        ours = _ours(gold, predictions)["all"]
        assert set(official) == {"mc_accuracy", "da_accuracy"}
        for metric, value in official.items():
            assert ours[metric] == pytest.approx(value, abs=TOLERANCE, rel=0), (seed, number, metric)
