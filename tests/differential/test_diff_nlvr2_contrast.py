"""NLVR2 contrast sets: the app's numbers against the official eval.py (tests/differential/official), on generated
contrast_set_nlvr2.jsonl files and identifier,prediction files (True/False, 1/0, any case, padded, CRLF,
shuffled, no final newline).

The official eval.py reads a prediction with bool(pred): every non-empty string is True, "0" and "False"
included. The app reads "0" and "false" as False, on purpose. So the comparison is made on what each reads:
- the app's scores of a file equal the official scores of the same predictions written as the official code
  reads them ("1" for true, "" for false), within 1e-9;
- the official scores of the file itself equal the app's scores of an all-true file (what bool(pred) makes of
  it), within 1e-9: the 43.86 / 25.26 of a perfect file on the released contrast set, measured here on
  generated ones."""

from __future__ import annotations

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task

reference = pytest.importorskip("tests.differential.reference", reason="the official scorers' harness")
cases = pytest.importorskip("tests.differential.cases", reason="the official scorers' harness")

TASK = get_task("nlvr2-contrast")
CASES = [(1, 50), (2, 300), (3, 994)]  # (seed, examples); 994: the size of the release
TOLERANCE = 1e-9


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"seed{case[0]}-n{case[1]}")
def case(request):
    seed, size = request.param
    gold_bytes, files = cases.make_case("nlvr2-contrast", seed, size)
    gold = TASK.read_gold(gold_bytes)
    stacked = np.stack([TASK.parse(data, gold) for data in files])
    return gold_bytes, files, gold, stacked, TASK.score_batch(gold, stacked)


def as_the_official_reads(gold, predictions) -> bytes:
    """The same predictions in the one spelling bool(pred) reads as meant: "1" true, "" (empty) false."""
    return "".join(
        f"{i},{'1' if p else ''}\n" for i, p in zip(gold.ids.tolist(), predictions.tolist(), strict=True)
    ).encode()


def close(ours: dict[str, float], theirs: dict[str, float]) -> bool:
    return set(ours) == set(theirs) and all(abs(ours[m] - theirs[m]) <= TOLERANCE for m in theirs)


def test_scores_equal_the_official_on_the_same_predictions(case):
    gold_bytes, _, gold, stacked, scores = case
    for predictions, ours in zip(stacked, scores, strict=True):
        theirs = reference.official_scores("nlvr2-contrast", gold_bytes, as_the_official_reads(gold, predictions))
        assert set(theirs) == {"all"} and set(ours) == {"all"}  # no subsets, in either
        assert close(ours["all"], theirs["all"]), (ours, theirs)


def test_the_official_reads_every_non_empty_prediction_as_true(case):
    gold_bytes, files, gold, stacked, scores = case
    all_true = TASK.score(gold, np.ones(gold.n, dtype=bool))["all"]
    for data in files:
        assert close(all_true, reference.official_scores("nlvr2-contrast", gold_bytes, data)["all"])
    # The case's first file is perfect: 100 / 100 here, the share of true labels in the official code.
    assert scores[0]["all"] == {"accuracy": 100.0, "consistency": 100.0}
    assert abs(all_true["accuracy"] - 100 * gold.labels.mean()) <= TOLERANCE


def test_groups_are_the_official_identifier_minus_two_characters(case):
    gold_bytes, _, gold, _, _ = case
    groups = {}
    for identifier, group in zip(gold.ids.tolist(), gold.groups.tolist(), strict=True):
        groups.setdefault(identifier[:-2], set()).add(group)
    assert all(len(found) == 1 for found in groups.values()) and len(groups) == gold.n_groups


def test_bad_files_are_refused_naming_the_line_or_the_identifier(case):
    gold_bytes, _, gold, _, _ = case
    first = gold.ids[0]
    for name, data in cases.make_bad_files("nlvr2-contrast", gold_bytes):
        if name == "blank line":
            # A difference kept on purpose: blank lines are skipped, as in every other file the app reads.
            assert TASK.parse(data, gold).shape == (gold.n,)
            continue
        with pytest.raises(ValidationError) as caught:
            TASK.parse(data, gold)
        message = str(caught.value)
        assert "line " in message or first in message, (name, message)
        if name == "missing id":
            assert f"missing predictions for 1 identifier of {gold.n:,}: {first!r}" in message


def test_files_the_official_code_scores_are_refused_unless_complete(case):
    gold_bytes, _, gold, _, _ = case
    for _name, data in cases.official_behaviour_files("nlvr2-contrast", gold_bytes):
        reference.official_scores("nlvr2-contrast", gold_bytes, data)  # the official code scores it
        with pytest.raises(ValidationError):  # empty predictions, a missing, an extra or a repeated identifier
            TASK.parse(data, gold)
