"""Run the OFFICIAL scoring code of each benchmark (tests/differential/official/) on gold and prediction bytes
and return its unrounded numbers, for differential tests of the app's scorers.

official_scores(family, gold, predictions) -> {"all": {metric: value}, "<field>: <value>": {metric: value}, ...}

Values are percentages on a 0-100 scale, unrounded, except GQA's "distribution" (the official chi-square / 100,
lower is better). How each number is read off the official code:

- vqa-v2: VQAEval(vqa, vqaRes, n=400). round(x, n) returns x unchanged for n > 323 (CPython), so
  accuracy['overall'], ['perAnswerType'], ['perQuestionType'] are the unrounded 100*sum/len of the official code.
- gqa: eval.evaluate([... '--consistency']) returns its `scores` dict; accuracy, binary, open, consistency are
  avg(list) * 100, distribution chiSquare(...) / 100, per type avg(list) * 100 (the first of the official pair).
  With a choices file (`choices`), validity and plausibility too (avg(list) * 100); without one the official
  script is given an empty list for every question and its (then meaningless) validity and plausibility are
  left out.
- a-okvqa: main() of eval_predictions.py; MC and DA values as computed (sum/len*100); a metric the official
  code does not compute for the file (no prediction carries that key) is left out.
- winoground: get_table_dict([(path, ...)]) -> 100*statistics.mean(bools) for "all" and for every subset the
  official compute_statistics.py prints (WINOGROUND_SUBSETS); a subset with no example in the gold file is left
  out (the official statistics.mean would raise on it).
- nlvr2-contrast: main() returns the fractions it prints; multiplied by 100 here.

The official code prints progress; its stdout is swallowed. Files are written to a temporary folder.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator

from tests.differential.cases import vqa_questions

# The subsets the official Winoground compute_statistics.py prints, quoted from its lines 290-320:
# filter_examples(filter_dict={"collapsed_tag": "Object"}) ... {"secondary_tag": "Series"}.
WINOGROUND_SUBSETS: list[tuple[str, object]] = [
    ("collapsed_tag", "Object"),
    ("collapsed_tag", "Relation"),
    ("collapsed_tag", "Both"),
    ("num_main_preds", 1),
    ("num_main_preds", 2),
    ("secondary_tag", "Symbolic"),
    ("secondary_tag", "Pragmatics"),
    ("secondary_tag", "Series"),
]

GQA_CHOICES_METRICS = ("validity", "plausibility")
METRICS = {
    "vqa-v2": ("accuracy",),
    "gqa": ("accuracy", "binary", "open", "consistency", "distribution"),
    "a-okvqa": ("mc_accuracy", "da_accuracy"),
    "winoground": ("text", "image", "group"),
    "nlvr2-contrast": ("accuracy", "consistency"),
}

VQA_N = 400  # > 323: CPython's round(x, ndigits) then returns x itself


@contextlib.contextmanager
def _workdir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="official-") as folder, contextlib.redirect_stdout(io.StringIO()):
        yield folder


def _write(folder: str, name: str, data: bytes) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as file:
        file.write(data)
    return path


def official_scores(
    family: str, gold: bytes, predictions: bytes, *, questions: bytes | None = None, choices: bytes | None = None
) -> dict[str, dict[str, float]]:
    """The official code's unrounded scores of `predictions` against `gold` (see the module docstring).

    `questions` (vqa-v2 only): the official questions file; made from the annotations when not given.
    `choices` (gqa only): the official choices file; validity and plausibility are then returned too.
    """
    if family == "vqa-v2":
        return _vqa(gold, predictions, questions if questions is not None else vqa_questions(gold))
    if family == "gqa":
        return _gqa(gold, predictions, choices)
    if choices is not None:
        raise ValueError(f"{family} has no choices file")
    if family == "a-okvqa":
        return _aokvqa(gold, predictions)
    if family == "winoground":
        return _winoground(gold, predictions)
    if family == "nlvr2-contrast":
        return _nlvr2(gold, predictions)
    raise ValueError(f"unknown family {family!r}")


def _vqa(gold: bytes, predictions: bytes, questions: bytes) -> dict[str, dict[str, float]]:
    from tests.differential.official.vqa_v2 import VQA, VQAEval

    with _workdir() as folder:
        annotation_file = _write(folder, "annotations.json", gold)
        question_file = _write(folder, "questions.json", questions)
        result_file = _write(folder, "results.json", predictions)
        vqa = VQA(annotation_file, question_file)
        vqa_result = vqa.loadRes(result_file, question_file)
        evaluation = VQAEval(vqa, vqa_result, n=VQA_N)
        evaluation.evaluate()
    accuracy = evaluation.accuracy
    scores: dict[str, dict[str, float]] = {"all": {"accuracy": accuracy["overall"]}}
    for answer_type, value in accuracy["perAnswerType"].items():
        scores[f"answer_type: {answer_type}"] = {"accuracy": value}
    for question_type, value in accuracy["perQuestionType"].items():
        scores[f"question_type: {question_type}"] = {"accuracy": value}
    return scores


def _gqa(gold: bytes, predictions: bytes, choices: bytes | None) -> dict[str, dict[str, float]]:
    from tests.differential.official import gqa

    metrics = METRICS["gqa"] + (GQA_CHOICES_METRICS if choices is not None else ())
    if choices is None:
        choices = json.dumps({qid: {"valid": [], "plausible": []} for qid in json.loads(gold)}).encode()
    with _workdir() as folder:
        argv = [
            "--tier",
            "val",
            "--scenes",
            _write(folder, "val_sceneGraphs.json", b"{}"),
            "--questions",
            _write(folder, "val_all_questions.json", gold),
            "--choices",
            _write(folder, "val_choices.json", choices),
            "--predictions",
            _write(folder, "val_predictions.json", predictions),
            "--consistency",
        ]
        result = gqa.evaluate(argv)
    # float(): avg() of an empty list is the int 0 in the official code; the same number.
    scores: dict[str, dict[str, float]] = {"all": {m: float(result[m]) for m in metrics}}
    for key, field in (("accuracyPerStructuralType", "structural"), ("accuracyPerSemanticType", "semantic")):
        for value, (accuracy, _count) in result[key].items():
            scores[f"{field}: {value}"] = {"accuracy": accuracy}
    return scores


def _aokvqa(gold: bytes, predictions: bytes) -> dict[str, dict[str, float]]:
    from tests.differential.official import a_okvqa

    with _workdir() as folder:
        _write(folder, "aokvqa_v1p0_val.json", gold)
        prediction_file = _write(folder, "predictions_val.json", predictions)
        result = a_okvqa.main(["--aokvqa-dir", folder, "--split", "val", "--preds", prediction_file])
    scores: dict[str, float] = {}
    if (prediction_file, "MC") in result:
        scores["mc_accuracy"] = result[prediction_file, "MC"]
    if (prediction_file, "DA") in result:
        scores["da_accuracy"] = result[prediction_file, "DA"]
    return {"all": scores}


def _winoground(gold: bytes, predictions: bytes) -> dict[str, dict[str, float]]:
    from tests.differential.official import winoground

    def row(table: dict) -> dict[str, float]:
        # float(): statistics.mean of all-True (all-False) bools is True (False), so the official value is then the
        # int 100 (0); the same number.
        return {"text": float(table["Text"][0]), "image": float(table["Image"][0]), "group": float(table["Group"][0])}

    with _workdir() as folder:
        examples_path = _write(folder, "examples.jsonl", gold)
        models = [(_write(folder, "model_scores.jsonl", predictions), "submission", None, None, None)]
        scores = {"all": row(winoground.get_table_dict(models))}
        for field, value in WINOGROUND_SUBSETS:
            ids = winoground.filter_examples({field: value}, examples_path=examples_path)
            if not ids:
                continue
            scores[f"{field}: {value}"] = row(winoground.get_table_dict(models, ids))
    return scores


def _nlvr2(gold: bytes, predictions: bytes) -> dict[str, dict[str, float]]:
    from tests.differential.official import nlvr2_contrast

    with _workdir() as folder:
        gold_path = _write(folder, "contrast_set_nlvr2.jsonl", gold)
        prediction_path = _write(folder, "predictions.csv", predictions)
        accuracy, consistency = nlvr2_contrast.main(["--prediction-path", prediction_path], gold_path=gold_path)
    return {"all": {"accuracy": 100 * accuracy, "consistency": 100 * consistency}}
