"""VQA v2: the family's numbers against the official vqaEval.py (tests/differential/official/vqa_v2.py, run
unrounded) on generated annotations full of the cases it treats specially, and the files it must refuse."""

from __future__ import annotations

import pytest

from app.evaluation import ValidationError, get_task
from tests.differential import cases, reference

# The official file's non-raw "\\d" strings warn when it is compiled.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

TASK = get_task("vqa-v2")


def _ours(gold_bytes: bytes, predictions: bytes) -> dict:
    gold = TASK.read_gold(gold_bytes)
    return TASK.score(gold, TASK.parse(predictions, gold), TASK.derive_subsets(gold))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_metric_and_typed_subset_equals_the_official_unrounded_value(seed):
    gold, files = cases.make_case("vqa-v2", seed, 300)
    for predictions in files:
        official = reference.official_scores("vqa-v2", gold, predictions)
        ours = _ours(gold, predictions)
        # Subsets are named "field:value" here, as every family's; the official prints the value alone.
        assert set(ours) == {name.replace(": ", ":", 1) for name in official}
        for name, metrics in official.items():
            for metric, value in metrics.items():
                assert ours[name.replace(": ", ":", 1)][metric] == pytest.approx(value, abs=1e-9), (name, metric)


def test_the_refused_files_name_the_question_and_line():
    gold, _ = cases.make_case("vqa-v2", 0, 60)
    gold_set = TASK.read_gold(gold)
    for name, data in cases.make_bad_files("vqa-v2", gold):
        with pytest.raises(ValidationError) as refused:
            TASK.parse(data, gold_set)
        text = str(refused.value)
        assert text, name
        if name in ("duplicate id", "id not in gold", "answer not a string", "answer missing", "id as string"):
            assert "line " in text, (name, text)
