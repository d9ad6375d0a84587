"""The task-type interface: every registered family implements all of it, a new family defined here is scored,
parsed and ranked through the same generic code as the real ones, and nothing outside app/evaluation/tasks
tells families apart by name or class."""

from __future__ import annotations

import ast
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.evaluation import GoldSet, TaskType, ValidationError, encoding, ladder, probes, statistics
from app.evaluation.metrics import accuracy
from app.evaluation.tasks import TASK_TYPES, get_task, register
from app.evaluation.tasks.base import ACCURACY, LabelVotes
from app.evaluation.tasks.synthetic_files import SyntheticOptions
from app.services.blind_test import integrity

ROOT = Path(__file__).resolve().parents[2]

# What a family must define itself: the base class raises NotImplementedError for these.
REQUIRED_METHODS = (
    "sample",
    "read_gold",
    "parse",
    "prediction_shape",
    "_score_columns",
    "label_votes",
    "encode",
    "decode",
    "decode_many",
    "unit_correctness",
    "synthetic_gold",
    "synthetic_file",
)
REQUIRED_ATTRIBUTES = (
    "name",
    "label",
    "unit_noun",
    "declared_metrics",
    "primary_metric",
    "tie_break_metric",
    "subset_metrics",
    "file_format",
    "example",
)


def _round_trip(task: TaskType, size: int = 40) -> tuple[GoldSet, np.ndarray]:
    """A synthetic split of the family and one synthetic submission, parsed as an upload would be."""
    data = task.synthetic_gold(size, seed=3)
    gold = task.read_gold(data)
    upload = task.synthetic_predictions(data, 0.7, seed=4, **task.demo_split_options("dev"))
    return gold, task.parse(upload, gold)


@pytest.mark.parametrize("name", list(TASK_TYPES))
def test_every_registered_family_implements_the_whole_interface(name):
    task = get_task(name)
    for attribute in REQUIRED_ATTRIBUTES:
        assert hasattr(task, attribute), (name, attribute)
    # A plural noun, read in "a bootstrap that resamples whole <unit_noun>": sentences, questions, examples, ...
    assert re.fullmatch(r"[a-z]+( [a-z]+)*s", task.unit_noun), task.unit_noun
    assert task.primary_metric in task.metrics and set(task.subset_metrics) <= set(task.metrics)
    assert len(task.example) == 3 and all(isinstance(line, str) for line in task.example)
    for method in REQUIRED_METHODS:
        assert getattr(type(task), method) is not getattr(TaskType, method), f"{name} does not define {method}"

    gold, predictions = _round_trip(task)
    assert predictions.shape == task.prediction_shape(gold.n)
    assert task.parse(task.sample(gold), gold).shape == predictions.shape
    stacked = np.stack([predictions, task.parse(task.sample(gold), gold)])
    correct = task.unit_correctness(gold, stacked)
    # The units: what a released count of the primary metric is of (GQA: the balanced questions alone).
    assert correct.shape[0] == 2 and correct.shape[1] == task.counted_units(gold, task.primary_metric)
    losses = task.zero_one_losses(gold, predictions)
    # The Ladder loses what a unit did not score: right or wrong, or a share of its points (VQA v2).
    scored = task.unit_scores(gold, stacked)[0] / task.unit_points(gold)
    assert losses.dtype == np.float64 and np.allclose(losses, 1.0 - scored, rtol=0, atol=1e-12)
    if task.unit_points(gold) == 1:
        assert losses.tolist() == (~correct[0]).astype(float).tolist()
    assert task.probe_distances(predictions, stacked)[0] == 0.0
    blobs = [task.encode(row) for row in stacked]
    assert np.array_equal(task.decode_many(blobs, gold.n), stacked)
    assert task.stored_probe_distances(predictions, blobs, gold.n).tolist() == (
        task.probe_distances(predictions, stacked).tolist()
    )
    # The probe check's distances on the split count the units: none differ from the file itself.
    assert task.split_probe_distances(gold, predictions, blobs)[0] == 0.0
    outcomes = task.example_outcomes(gold, stacked)
    assert task.primary_metric in outcomes["counts"]
    # "all_right" may be left out only where nothing reads it: no consistency, and the primary metric counted.
    assert "consistency" not in task.metrics or outcomes["all_right"].shape == (gold.n, 2)
    if "all_right" in outcomes:
        assert outcomes["all_right"].shape == (gold.n, 2)
    if task.results_dtype is not None:
        # Compact results stand for the predictions wherever the statistics read them (a board's stored results).
        results = task.results(gold, stacked)
        assert results.dtype == task.results_dtype and results.shape == (2, gold.n)
        assert np.array_equal(task.unit_scores(gold, results), task.unit_scores(gold, stacked))
        assert np.array_equal(task.unit_correctness(gold, results), task.unit_correctness(gold, stacked))
        from_results = task.example_outcomes(gold, results)
        for metric, (counts, per) in outcomes["counts"].items():
            assert np.array_equal(from_results["counts"][metric][0], counts)
            assert from_results["counts"][metric][1] == per
    assert all(isinstance(votes, LabelVotes) for votes in task.label_votes(gold, stacked))
    assert isinstance(task.demo_references("dev"), list)


# --- a new family, defined here and nowhere else ----------------------------------------------------------


class ThreeWayChoice(TaskType):
    """A toy multiple-choice family: one of three choices a question, scored by accuracy; a question is one
    unit and one resampled group. Gold: JSON lines {"qid", "answer"}; predictions: CSV qid,choice."""

    name = "toy-three-way"
    label = "Three-way choice (toy)"
    unit_noun = "questions"
    declared_metrics = (ACCURACY,)
    primary_metric = "accuracy"
    tie_break_metric = None
    subset_metrics = ("accuracy",)
    file_format = "CSV, one line per question: qid,choice with choice 0, 1 or 2"
    example = ("q0,1", "q1,2", "q2,0")

    def read_gold(self, data: bytes) -> GoldSet:
        rows = [line.split(",") for line in data.decode().splitlines() if line]
        ids = np.array([qid for qid, _ in rows], dtype=object)
        answers = np.array([int(answer) for _, answer in rows], dtype=np.int8)
        return GoldSet(self.name, ids, answers, np.arange(len(rows), dtype=np.int32), {})

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        found = dict(line.split(",") for line in io.StringIO(data.decode()).read().splitlines() if line)
        if set(found) != set(gold.ids.tolist()):
            raise ValidationError("every question needs exactly one choice")
        return np.array([int(found[qid]) for qid in gold.ids.tolist()], dtype=np.int8)

    def sample(self, gold: GoldSet) -> bytes:
        return "".join(f"{qid},0\n" for qid in gold.ids.tolist()).encode()

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    def _score_columns(
        self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]
    ) -> dict[str, dict[str, Any]]:
        correct = stacked == gold.labels
        columns = {"all": {"accuracy": accuracy(correct)}}
        columns.update({name: {"accuracy": accuracy(correct[:, rows])} for name, rows in subsets.items() if len(rows)})
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        return [LabelVotes("answer", gold.labels, stacked[..., None], ("0", "1", "2"))]

    def encode(self, predictions: np.ndarray) -> bytes:
        return encoding.pack_int8(predictions)

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        return encoding.unpack_int8(blob, self.prediction_shape(gold_n))

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        return encoding.unpack_int8_many(blobs, self.prediction_shape(gold_n))

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return np.asarray(stacked == gold.labels)

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        answers = np.random.default_rng(seed).integers(0, 3, size=size).tolist()
        return "".join(f"q{i},{answer}\n" for i, answer in enumerate(answers)).encode()

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        rng = np.random.default_rng(options.seed)
        rows = [line.split(",") for line in gold.decode().splitlines()]
        right = rng.random(len(rows)) < options.accuracy
        wrong = (np.array([int(a) for _, a in rows]) + rng.integers(1, 3, size=len(rows))) % 3
        return "".join(
            f"{qid},{answer if ok else other}\n" for (qid, answer), ok, other in zip(rows, right, wrong, strict=True)
        ).encode()


@pytest.fixture
def toy():
    """The toy family registered, as its module's one registry line would; unregistered afterwards."""
    register(ThreeWayChoice)
    try:
        yield get_task(ThreeWayChoice.name)
    finally:
        TASK_TYPES.pop(ThreeWayChoice.name)


def test_a_new_family_registers_and_implements_the_interface(toy):
    assert isinstance(toy, ThreeWayChoice) and toy.name in TASK_TYPES
    test_every_registered_family_implements_the_whole_interface(toy.name)


def test_a_new_family_is_scored_parsed_and_ranked_by_the_generic_code(toy):
    gold_bytes = toy.synthetic_gold(300, seed=1)
    gold = toy.read_gold(gold_bytes)
    files = [toy.synthetic_predictions(gold_bytes, share, seed=seed) for seed, share in enumerate((0.9, 0.6, 0.35))]
    stacked = np.stack([toy.parse(data, gold) for data in files])
    with pytest.raises(ValidationError):
        toy.parse(b"q0,1\n", gold)

    # Scores, and their intervals: the statistics ask the task type for its units.
    scores = toy.score_batch(gold, stacked)
    truth = (stacked == gold.labels).mean(axis=1) * 100
    assert [s["all"]["accuracy"] for s in scores] == pytest.approx(truth.tolist())
    found = statistics.intervals(toy, gold, stacked, {"all": (None, ["accuracy"])}, resamples=200)
    interval = found[("all", "accuracy")]
    assert interval.values.tolist() == pytest.approx(truth.tolist())
    assert (interval.low <= interval.values).all() and (interval.values <= interval.high).all()

    # Ranks: the best entry is significantly better than the worst.
    correct = statistics.primary_correctness(toy, gold, stacked)
    assert correct.shape == (3, 300)
    ranks = statistics.significance_ranks(correct, truth)
    assert ranks.ranks[0] == 1 and ranks.ranks[2] > 1

    # The Ladder's losses and the probe check's units and distances.
    losses = ladder.zero_one_losses(toy, gold, stacked[1])
    assert losses.tolist() == (stacked[1] != gold.labels).astype(float).tolist()
    assert ladder.step(ladder.Ladder(), losses).improved
    units = probes.unit_correct(toy, gold, stacked)
    assert probes.block_counts(units).sum(axis=1).tolist() == units.sum(axis=1).tolist()
    new = stacked[0].copy()
    new[:30] = (new[:30] + 1) % 3
    assert integrity.distances(toy, new, stacked[:1]).tolist() == [0.1]
    blobs = [toy.encode(row) for row in stacked]
    assert integrity._block_distances(toy, gold, new, blobs).tolist() == integrity.distances(toy, new, stacked).tolist()


# --- nothing outside the family modules tells families apart --------------------------------------------

TASK_CLASSES = {cls.__name__ for task in TASK_TYPES.values() for cls in type(task).__mro__} - {"object"}
NAMES = "|".join(re.escape(name) for name in TASK_TYPES)
TASK_NAME_LITERAL = re.compile(rf"""["']({NAMES})["']""")


def _python_files() -> list[Path]:
    families = ROOT / "app" / "evaluation" / "tasks"
    return [path for path in (ROOT / "app").rglob("*.py") if families not in path.parents]


def _compares_a_task_name(node: ast.Compare) -> bool:
    def names_a_task(operand: ast.expr) -> bool:
        if isinstance(operand, ast.Constant):
            return operand.value in TASK_TYPES
        if isinstance(operand, ast.Tuple | ast.List | ast.Set):
            return any(names_a_task(element) for element in operand.elts)
        return False

    return any(names_a_task(operand) for operand in [node.left, *node.comparators])


def _isinstance_of_a_task_class(node: ast.Call) -> bool:
    if not (isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
        return False
    classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    spelled = {c.id if isinstance(c, ast.Name) else c.attr if isinstance(c, ast.Attribute) else "" for c in classes}
    return bool(spelled & TASK_CLASSES)


def test_no_code_outside_the_families_compares_task_names_or_classes():
    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and _compares_a_task_name(node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: compares a task name")
            elif isinstance(node, ast.Call) and _isinstance_of_a_task_class(node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: isinstance on a task class")
            elif isinstance(node, ast.Name) and node.id in TASK_CLASSES - {"TaskType"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: names the task class {node.id}")
    assert found == []


def test_no_template_compares_task_names():
    comparison = re.compile(rf"""(==|!=|\bin\b|\bis\b)\s*\(?\s*["']({NAMES})["']""")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "templates").rglob("*.html")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if comparison.search(line) or re.search(r"task(_type|\.name)\s*(==|!=)", line)
    ]
    assert found == []


def test_the_checks_would_see_a_comparison():
    tree = ast.parse('if task.name == "vcr" or spec.task in ("nlvr2", "x") or isinstance(task, BinaryTask): pass')
    compares = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)]
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert all(_compares_a_task_name(node) for node in compares) and len(compares) == 2
    assert _isinstance_of_a_task_class(calls[0])
    assert TASK_NAME_LITERAL.search('"nlvr-images"')
