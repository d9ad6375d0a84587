"""The task-type interface and its registry: everything a benchmark family is, behind one class.

A task type knows its gold format, its prediction format, its metrics and subsets, how its aligned
predictions are stored, which units its statistics, the Ladder and the probe check count, what its
boards call a resampled group, and how to make synthetic data of its shape. The rest of the app asks
the task type and never branches on its name; adding a family is one folder in this package (its
``family.py`` defines a registered subclass; the package's ``__init__`` finds the folder).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from .. import encoding, layout
from ..gold import GoldSet
from ..subsets import field_subsets
from .synthetic_files import SyntheticOptions

Scores = dict[str, dict[str, float]]
# Per-example outcomes for the statistics: {"counts": {metric: (by-example (n, k) uint8 right counts,
# judgements per example: an int, or an (n,) array where examples differ, 0 for one not counted)},
# "all_right": (n, k) uint8 (left out by a family with no consistency whose primary metric is counted: VQA v2),
# optionally "points": {metric: points a judgement is scored in} where a count is of points (VQA v2)}; see
# TaskType.example_outcomes.
Outcomes = dict[str, Any]
# Score columns of k stacked submissions: {subset: {metric: (k,) percentages}} (metrics.accuracy and its kin).
Columns = dict[str, dict[str, Any]]
TASK_TYPES: dict[str, TaskType] = {}


def register(cls: type[TaskType]) -> type[TaskType]:
    task = cls()
    _check_declared(task)
    TASK_TYPES[task.name] = task
    return cls


def _check_declared(task: TaskType) -> None:
    """Every metric a family scores is declared once, and what ranks is declared to rank: a family that adds a
    metric without its declaration fails at import, not on the first page that shows it."""
    names = [metric.name for metric in task.declared_metrics]
    if len(set(names)) != len(names) or not names:
        raise TypeError(f"{task.name}: declared_metrics must name each metric once, got {names}")
    for metric in (task.primary_metric, task.tie_break_metric, *task.subset_metrics):
        if metric is not None and metric not in names:
            raise TypeError(f"{task.name}: {metric!r} is not among its declared metrics {names}")
    for metric in (task.primary_metric, task.tie_break_metric):
        if metric is not None and not task.metric(metric).ranks:
            raise TypeError(f"{task.name}: {metric!r} decides ranks but is declared not to rank")


def get_task(name: str) -> TaskType:
    if not isinstance(name, str) or name not in TASK_TYPES:
        raise ValueError(f"unknown task type {name!r}; choose one of {', '.join(TASK_TYPES)}")
    return TASK_TYPES[name]


def read_gold(task: str, data: bytes) -> GoldSet:
    """Read the gold file of a task type by name (see TASK_TYPES)."""
    return get_task(task).read_gold(data)


@dataclass(frozen=True)
class Metric:
    """One metric of a family as every view shows it: boards, submission and team pages, the models view, the API
    and the exports read this and nothing else. A family's metrics are shown in the order it declares them."""

    name: str  # the key scores are stored under ("q_ar", "mc_accuracy"): never changes once stored
    label: str  # as the family's paper or official board writes it ("Q→AR", "Yes/No", "MC accuracy")
    short: str | None = None  # for narrow headers (LaTeX, Markdown) where the label is long; None: the label
    # A percentage (0-100, the figure's own decimals: one, or a released figure's) or a plain number (GQA's
    # distribution, a chi-square) written with ``decimals``.
    unit: Literal["percent", "plain"] = "percent"
    lower_is_better: bool = False  # less is better (the distribution): its best value is its least
    decimals: int | None = None  # None: a percentage's own; a plain number's always
    # Whether it may decide a rank, a tie or a column's bold best: a figure whose differences no test backs (the
    # distribution) is shown and never ranks.
    ranks: bool = True
    # What its n counts, in words (the count itself is TaskType.metric_units of a gold set): "balanced questions".
    counts: str = "examples"

    @property
    def short_label(self) -> str:
        return self.short or self.label

    @property
    def direction(self) -> str:
        return "lower is better" if self.lower_is_better else "higher is better"

    @property
    def percent(self) -> bool:
        return self.unit == "percent"


ACCURACY = Metric("accuracy", "Accuracy", "Acc.")
CONSISTENCY = Metric("consistency", "Consistency", "Cons.", counts="sentences")


@dataclass(frozen=True)
class LabelVotes:
    """One gold label field as the submissions vote on it, for a label audit."""

    field: str  # the gold file's field, e.g. "label" or "answer_label"
    gold: np.ndarray  # (n,) class ids of the gold labels
    votes: np.ndarray  # (k, n, m) class ids each submission predicts (m: votes per example, e.g. NLVR images)
    classes: tuple[str, ...]  # how each class id is written in the gold file


class TaskType:
    """The interface of a benchmark family. Subclasses set the attributes and implement the methods that
    raise NotImplementedError; the others have defaults in terms of ``unit_correctness``."""

    name: str
    label: str
    # What one resampled group (a consistency group) is called on boards: "sentences", "questions".
    unit_noun: str
    # Every metric the family scores, declared once, in the order every view shows them (Metric): the names,
    # labels and which is lower-is-better below are read from it.
    declared_metrics: tuple[Metric, ...]
    # Metrics shown without an interval: not a ratio of per-group sums a bootstrap can resample (GQA's
    # consistency over entailed questions, its distribution). Their values come from score_batch; every other
    # metric is counted in example_outcomes (or is "consistency" over the groups).
    estimate_only_metrics: tuple[str, ...] = ()
    # How a board explains the test its ranks come from (statistics.view_ranks; paired_view_ranks for points).
    rank_test = "an exact McNemar test on {metric} (the examples only one of the two got right)"
    # Which derived subsets a board shows by default (the rest a visitor may choose): None, all of them (NLVR2's
    # bias subsets); else those of these gold fields (VQA v2: answer_type, not its 65 question types).
    default_subset_fields: tuple[str, ...] | None = None
    # How the family's paper or official board names its subsets ("answer_type:yes/no": "Yes/No"), in the order
    # it shows them; a subset not named here reads as its name does ("region west").
    subset_labels: Mapping[str, str] = {}
    primary_metric: str
    tie_break_metric: str | None
    subset_metrics: tuple[str, ...]
    # Where the app lists the family among the others (pages, tables, the demo): lower first, ties by name. A
    # subclass sets its own (it would otherwise share its parent's place).
    list_position: int = 1000
    # Compact per-example results a board reads in place of the predictions (VQA v2: a question's points in a byte,
    # where its predictions are 16 bytes): None where the predictions are as compact (binary answers are bits).
    # A family that sets it gives them (results) and takes a (k, n) matrix of them wherever the statistics take
    # stacked predictions (unit_scores, unit_correctness, example_outcomes).
    results_dtype: np.dtype | None = None

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(metric.name for metric in self.declared_metrics)

    @property
    def metric_labels(self) -> dict[str, str]:
        return {metric.name: metric.label for metric in self.declared_metrics}

    @property
    def lower_is_better(self) -> tuple[str, ...]:
        """Metrics where less is better (GQA's distribution): a board's best value is their least."""
        return tuple(metric.name for metric in self.declared_metrics if metric.lower_is_better)

    def metric(self, name: str) -> Metric:
        """The declaration of one of the family's metrics; KeyError for a name it does not score."""
        for metric in self.declared_metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"{self.name} has no metric {name!r}")

    def subset_label(self, subset: str) -> str:
        """'Yes/No', 'Balanced', 'Region west', 'Hard-cardinality': as the family writes a subset."""
        if subset in self.subset_labels:
            return self.subset_labels[subset]
        if subset.startswith("category:"):
            readable = subset.split(":", 1)[1]
        else:  # a field's underscores read as spaces (answer_type:number), its value as written
            field, colon, value = subset.partition(":")
            readable = f"{field.replace('_', ' ')} {value}" if colon else subset
        return f"{readable[:1].upper()}{readable[1:]}"

    def column_label(self, subset: str, metric: str, *, short: bool = False) -> str:
        """A column's header: the metric's label on the whole split, else the subset's and the metric's
        ('Balanced accuracy', 'Region west Q→AR'); ``short``: with the metric's short label (narrow headers)."""
        declared = self.metric(metric)
        label = declared.short_label if short else declared.label
        if subset == "all":
            return label
        word = label.lower() if label in ("Accuracy", "Consistency", "Acc.", "Cons.") else label
        return f"{self.subset_label(subset)} {word}"

    def subset_order(self, subset: str) -> tuple[int, str]:
        """Where a subset's columns go among the others: those the family names in its order, then the rest."""
        names = list(self.subset_labels)
        return (names.index(subset), "") if subset in names else (len(names), subset)

    def metric_units(self, gold: GoldSet, metric: str, indices: np.ndarray | None = None) -> int | None:
        """n of a metric: how many units it counts on the examples ``indices`` (None: all). Consistency counts
        groups (sentences); an estimate-only figure (GQA's consistency, its distribution) counts no units of its
        own: None; the rest, counted_units (NLVR images: images; GQA: balanced questions; A-OKVQA's DA accuracy:
        the questions not marked difficult)."""
        if metric in self.estimate_only_metrics:
            return None
        if metric == "consistency":
            groups = gold.groups if indices is None else gold.groups[np.asarray(indices)]
            return int(np.unique(groups).size)
        return self.counted_units(gold, metric, indices)

    # How a prediction file of this task is written, for the "How to submit" section of a benchmark.
    file_format: str
    example: tuple[str, str, str]  # three lines of a valid file
    file_suffix = "csv"  # a prediction file's (and its sample's) extension
    media_type = "text/csv"

    def sample(self, gold: GoldSet) -> bytes:
        """A valid prediction file for ``gold``: every identifier (an input, never a label) with one
        constant prediction, to check the format end to end."""
        raise NotImplementedError

    def read_gold(self, data: bytes) -> GoldSet:
        raise NotImplementedError

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        """An uploaded prediction file -> array aligned to the gold order; raises ValidationError."""
        raise NotImplementedError

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        raise NotImplementedError

    def derive_subsets(self, gold: GoldSet, field: str | None = None) -> dict[str, np.ndarray]:
        """Subsets every split of this task gets, plus one per value of ``field`` if given."""
        subsets = self._derived_subsets(gold)
        if field:
            subsets.update(field_subsets(gold, field))
        return subsets

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        return {}

    def score(self, gold: GoldSet, predictions: np.ndarray, subsets: dict[str, np.ndarray] | None = None) -> Scores:
        """{'all': {metric: percentage}, subset: {subset metric: percentage}}; empty subsets are left out."""
        predictions = np.asarray(predictions)
        self._check_shape(predictions.shape, gold.n)
        return self.score_batch(gold, predictions[None], subsets)[0]

    def score_batch(
        self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray] | None = None
    ) -> list[Scores]:
        """``score`` for k submissions stacked on a leading axis, in one vectorised pass."""
        stacked = np.asarray(stacked)
        self._check_shape(stacked.shape[1:], gold.n)
        columns = self._score_columns(gold, stacked, subsets or {})
        # One conversion per column, then plain Python floats per submission.
        values = {
            subset: {metric: array.tolist() for metric, array in metrics.items()} for subset, metrics in columns.items()
        }
        return [
            {subset: {metric: column[i] for metric, column in metrics.items()} for subset, metrics in values.items()}
            for i in range(stacked.shape[0])
        ]

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        raise NotImplementedError

    def _check_shape(self, shape: tuple[int, ...], gold_n: int) -> None:
        expected = self.prediction_shape(gold_n)
        if tuple(shape) != expected:
            raise ValueError(f"{self.name} predictions must have shape {expected}, not {tuple(shape)}")

    def results(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """(k, n) results_dtype: the compact per-example results of k stacked predictions (see results_dtype)."""
        raise NotImplementedError(f"{self.name} keeps no results apart from its predictions")

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        """The gold label fields of this task and what k stacked submissions predict for each."""
        raise NotImplementedError

    def encode(self, predictions: np.ndarray) -> bytes:
        raise NotImplementedError

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        raise NotImplementedError

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        """Stored predictions of k submissions -> one stacked array (k, *prediction_shape)."""
        raise NotImplementedError

    # --- units: what the statistics, the Ladder and the probe check count -------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """(k, units) bool: each judgement the primary metric counts, for k stacked predictions (k, *shape),
        example-major (NLVR images: every image; VCR: a question, right when Q->AR is)."""
        raise NotImplementedError

    def counted_units(self, gold: GoldSet, metric: str, indices: np.ndarray | None = None) -> int:
        """How many units a percentage on ``metric`` counts over, on the examples ``indices`` (None: all): what a
        released count is of. Accuracy over NLVR images counts images; other metrics count examples. Families
        that leave examples out of a metric (GQA: unbalanced questions) say so here."""
        examples = gold.n if indices is None else len(indices)
        return examples * (gold.n_images if metric == "accuracy" else 1)

    def unit_points(self, gold: GoldSet) -> int:
        """Points a unit scores on the primary metric at most: 1 where a unit is right or wrong (ranks by McNemar's
        exact test on unit_correctness); more for soft scores (VQA v2: 30 a question), whose ranks come from a
        paired permutation test on unit_scores (statistics.paired_view_ranks)."""
        return 1

    def unit_scores(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """(k, units) uint8: the points each unit scores on the primary metric, 0..unit_points(gold)."""
        return self.unit_correctness(gold, stacked).astype(np.uint8)

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """Per-example outcomes of k stacked predictions for the statistics, laid out by example (n, k): the
        primary metric's judgements right per example and how many an example has, and whether all are right.
        Families with more counted metrics (VCR's three stages) or a faster layout override it."""
        k = stacked.shape[0]
        correct = self.unit_correctness(gold, stacked).reshape(k, gold.n, -1)
        counts = layout.by_example(correct.sum(axis=-1, dtype=np.uint8))
        return {
            "counts": {self.primary_metric: (counts, correct.shape[-1])},
            "all_right": layout.by_example(np.asarray(correct.all(axis=-1))),
        }

    def zero_one_losses(self, gold: GoldSet, predictions: np.ndarray) -> np.ndarray:
        """The Ladder's loss vector of one submission's predictions (*shape): float64 (units,), 1.0 = wrong."""
        right: np.ndarray = self.unit_correctness(gold, np.asarray(predictions)[None])[0]
        return (~right).astype(np.float64)

    def probe_distances(self, new: np.ndarray, stacked: np.ndarray) -> np.ndarray:
        """Share of units on which each of k stacked earlier predictions (k, *shape) differs from the new one
        (*shape): floats in [0, 1], shape (k,). By default an example is one unit, whichever of its values
        changed; families whose units are finer (NLVR images) override it."""
        k = stacked.shape[0]
        differs = (stacked != new[None]).reshape(k, new.shape[0], -1).any(axis=-1)
        distances: np.ndarray = differs.mean(axis=1)
        return distances

    def stored_probe_distances(self, new: np.ndarray, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        """``probe_distances`` against stored predictions (blobs of ``encode``); a family may compare the
        stored bytes directly."""
        return self.probe_distances(new, self.decode_many(blobs, gold_n))

    def split_probe_distances(self, gold: GoldSet, new: np.ndarray, blobs: Sequence[bytes]) -> np.ndarray:
        """What the probe check compares on a split: ``stored_probe_distances``, over the units unit_correctness
        counts. A family whose units are not every example (GQA: the balanced questions alone, which the gold set
        tells) overrides it, so that the distance counts what the probe summaries and the released figures do."""
        return self.stored_probe_distances(new, blobs, gold.n)

    # --- synthetic data of this family's shape (the demo, the tests, the scale runs) -------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        """A synthetic gold file of ``size`` examples, deterministic for ``seed`` (``split``: the split's slug
        where the family's identifiers name it)."""
        raise NotImplementedError

    def synthetic_predictions(self, gold: bytes, accuracy: float, seed: int = 0, **options: Any) -> bytes:
        """A valid prediction file for a synthetic ``gold`` whose expected accuracy is ``accuracy``, deterministic
        for ``seed``; the other options are SyntheticOptions' (``header``, ``shuffle``, ``split``,
        ``group_correlation``, a family's own by name). Checked here, made by the family's ``synthetic_file``."""
        return self.synthetic_file(gold, SyntheticOptions.of(accuracy, seed, **options))

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """The family's synthetic prediction file for ``gold`` made as ``options`` ask (already checked)."""
        raise NotImplementedError

    def synthetic_constant(
        self, gold: bytes, *, header: bool = False, shuffle: bool = False, split: str = "dev", seed: int = 0
    ) -> bytes:
        """One constant prediction for every example of a synthetic ``gold`` (the all-true baseline of a
        true/false family); ValueError where the family has none."""
        raise ValueError(f"task type {self.name!r} has no constant prediction file")

    def demo_split_options(self, split_slug: str) -> dict[str, Any]:
        """Options the demo passes to ``synthetic_predictions`` on a split (e.g. the split prefix of names)."""
        return {}

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        """Reference rows as the family's papers report them: (name, scores, url) for a demo split."""
        return []


class FixedDtypeTask(TaskType):
    """A family whose aligned predictions are stored whole in one fixed dtype (``stored_dtype``: VQA v2's and
    GQA's answer hashes, Winoground's float64 scores): encode and decode, once for all of them."""

    stored_dtype: np.dtype

    def encode(self, predictions: np.ndarray) -> bytes:
        return encoding.pack_fixed(predictions, self.stored_dtype)

    def decode(self, blob: bytes, gold_n: int) -> np.ndarray:
        return encoding.unpack_fixed(blob, self.prediction_shape(gold_n), self.stored_dtype)

    def decode_many(self, blobs: Sequence[bytes], gold_n: int) -> np.ndarray:
        return encoding.unpack_fixed_many(blobs, self.prediction_shape(gold_n), self.stored_dtype)


@runtime_checkable
class TakesChoices(Protocol):
    """A family whose split may carry an official choices file (GQA): the services store it beside the gold file
    and attach it to the gold set; `choices_metrics` are reported only where a split has one. `choices_file`: the
    file as a message names it to someone who gave one to a family that takes none."""

    choices_metrics: tuple[str, ...]
    choices_file: str

    def read_choices(self, gold: GoldSet, data: bytes, max_bytes: int | None = None) -> bytes: ...

    def with_choices(self, gold: GoldSet, compact: bytes) -> GoldSet: ...
