"""Two entries of one split compared (/compare), and one entry's per-example results: from the board's own
procedure (app.evaluation.statistics: the board's resamples and paired test) and under the one visibility rule
(services/blind_test/visibility.py: what anyone may see, per_example_public for ids and per-example facts).

On a split whose scores are public and not counts-only, the difference of every column the board shows, its 95%
interval and the paired test's p-value (primary metric), and where per_example_public also the discordant
examples. On a blind test before its reveal whose board shows scores (`full`), the released figures' differences
alone, and the unpaired test the board ranks with (counts only); while held, nothing but that it is held. The
sealed part never contributes: a counts-only board is its queried part's already.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

import numpy as np

from app.db import db
from app.evaluation import per_example, statistics
from app.models import Split, Submission
from app.services import catalog
from app.services.blind_test import integrity, visibility
from app.services.boards import board_snapshots
from app.services.errors import NotFound, ServiceError

MAX_ID = 2**31 - 1  # ids are INTEGER columns (32-bit on PostgreSQL)
HELD = visibility.HELD


@dataclass
class Row:
    """One column of the board compared: a's and b's figures, a - b, its interval and the paired test's p."""

    subset: str
    metric: str
    label: str
    a: float | None
    b: float | None
    difference: float | None
    low: float | None = None
    high: float | None = None
    p: float | None = None  # the primary metric's alone: the board tests pairs on it


@dataclass
class Discordant:
    identifier: str
    a_correct: bool
    b_correct: bool


@dataclass
class Comparison:
    split: Split
    a: Submission
    b: Submission
    held: bool = False  # a blind test's scores held: nothing else is said
    counts_only: bool = False  # a blind test before its reveal: released figures, no interval, no example
    rows: list[Row] = field(default_factory=list)
    per_example: bool = False  # whether ids and per-example facts are shown (visibility.per_example_public)
    discordant: list[Discordant] = field(default_factory=list)
    a_only: int = 0  # examples a got right and b wrong
    b_only: int = 0
    why_no_examples: str | None = None


def _entry(raw: str | None, name: str) -> Submission:
    """A published, visible, scored entry by its id in the query parameter `name` (else 400/404 naming it). The
    same answer for an entry that does not exist and one that is not published: nothing is told of the latter."""
    text = (raw or "").strip()
    if not text:
        raise ServiceError(f"{name}: give the id of a published entry (?{name}=ID)", field=name)
    if not text.isdigit():
        raise ServiceError(f"{name}: an entry's id is a whole number, got {text[:40]!r}", field=name)
    number = int(text)
    found = db.session.get(Submission, number) if 1 <= number <= MAX_ID else None
    if found is None or found.status != "scored" or found.published_at is None or found.hidden_at is not None:
        raise NotFound(f"{name}: no published entry {number}", field=name)
    return found


def _pair(a_raw: str | None, b_raw: str | None) -> tuple[Submission, Submission]:
    a, b = _entry(a_raw, "a"), _entry(b_raw, "b")
    if a.id == b.id:
        raise ServiceError("b: the same entry as a; pick another entry of the split", field="b")
    if a.split_id != b.split_id:
        raise ServiceError(f"b: entry {b.id} is not on entry {a.id}'s split; compare entries of one split", field="b")
    return a, b


def compare(a_raw: str | None, b_raw: str | None) -> Comparison:
    """Entries a and b (the query's ids) compared as anyone may see them: the same for every viewer, maintainers
    included (a maintainer reads per-example results on the console, never here)."""
    a, b = _pair(a_raw, b_raw)
    split = a.split
    if not (visibility.on_public_board(a) and visibility.on_public_board(b)):
        return Comparison(split, a, b, held=True)
    if visibility.counts_only(split):
        return _from_counts(split, a, b)
    return _from_predictions(split, a, b)


def _from_predictions(split: Split, a: Submission, b: Submission) -> Comparison:
    task = catalog.task_of(split.benchmark)
    # The board's own inputs (gold, the columns it shows, the pair's predictions stacked in its layout).
    gold, pair, wanted, _ = board_snapshots.board_inputs(split, task, [a, b])
    differences = statistics.difference_intervals(task, gold, pair, wanted)
    values = {key: (float(d.value), d) for key, d in differences.items()}
    scores = visibility.scores_of(a), visibility.scores_of(b)
    rows = []
    for subset, (indices, metrics) in wanted.items():
        for metric in metrics:
            found = values.get((subset, metric))
            if found is None:
                continue
            _, diff = found
            p = statistics.pair_p(task, gold, pair, indices) if metric == task.primary_metric else None
            rows.append(
                Row(
                    subset,
                    metric,
                    task.column_label(subset, metric),
                    scores[0].get(subset, {}).get(metric),
                    scores[1].get(subset, {}).get(metric),
                    _finite(diff.value),
                    _finite(diff.low),
                    _finite(diff.high),
                    p,
                )
            )
    result = Comparison(split, a, b, rows=_ordered(task, rows))
    if not visibility.per_example_public(split):
        result.why_no_examples = visibility.NO_PER_EXAMPLE
        return result
    outcomes = per_example.outcomes(task, gold, pair)
    ids = gold.ids
    result.per_example = True
    result.discordant = [
        Discordant(str(ids[i]), bool(outcomes.correct[0, i]), bool(outcomes.correct[1, i]))
        for i in per_example.discordant(outcomes).tolist()
    ]
    result.a_only = sum(1 for d in result.discordant if d.a_correct)
    result.b_only = len(result.discordant) - result.a_only
    return result


def _from_counts(split: Split, a: Submission, b: Submission) -> Comparison:
    """A blind test before its reveal whose board shows scores: the board's released figures and their
    differences; the p-value of the board's unpaired test on the primary counts (statistics.count_ranks), which
    depends on the released counts alone. No interval, no example."""
    task = catalog.task_of(split.benchmark)
    entries = {entry.submission_id: entry for entry in board_snapshots.leaderboard(split)}
    first, second = entries.get(a.id), entries.get(b.id)
    if first is None or second is None:
        return Comparison(split, a, b, held=True)  # not on the board shown now (it is being rebuilt)
    inputs = catalog.scoring_inputs(split)
    gold, subsets = inputs.gold, inputs.subsets
    part = visibility.queried_indices(split)
    if part is not None:
        gold, subsets = visibility.queried_view(split, gold, subsets, part)
    rows = []
    for subset, metrics in first.scores.items():
        for metric, value in metrics.items():
            other = second.scores.get(subset, {}).get(metric)
            if other is None or subset == board_snapshots.GAP:
                continue
            p = None
            if subset == "all" and metric == task.primary_metric:
                found = integrity.resolution(task, gold, {}, "all", metric)
                if found is not None:
                    units = found[0]
                    counts = [round(float(v) * units / 100.0) for v in (value, other)]
                    high, low = max(counts), min(counts)
                    one_sided = statistics.unpaired_p(np.array([high]), np.array([low]), units)[0]
                    p = 1.0 if high == low else float(min(1.0, 2.0 * one_sided))
            decimals = getattr(value, "decimals", None)
            difference = float(value) - float(other)
            if decimals is not None:
                difference = round(difference, decimals)
            rows.append(Row(subset, metric, task.column_label(subset, metric), value, other, difference, p=p))
    return Comparison(
        split, a, b, counts_only=True, rows=_ordered(task, rows), why_no_examples=visibility.NO_PER_EXAMPLE
    )


def _ordered(task, rows: list[Row]) -> list[Row]:
    """The whole split first, then the subsets in the task's order; metrics in the task's order."""
    metric_order = {metric: i for i, metric in enumerate(task.metrics)}
    return sorted(
        rows,
        key=lambda r: (r.subset != "all", task.subset_order(r.subset), metric_order.get(r.metric, len(metric_order))),
    )


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def discordant_csv(comparison: Comparison) -> str:
    """id,a_correct,b_correct of every discordant example (1 right, 0 wrong)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "a_correct", "b_correct"])
    for row in comparison.discordant:
        writer.writerow([row.identifier, int(row.a_correct), int(row.b_correct)])
    return out.getvalue()


def compare_csv(a_raw: str | None, b_raw: str | None) -> tuple[str, str]:
    """(file name, CSV) of the discordant examples; 404 with the reason where the split shows none."""
    found = compare(a_raw, b_raw)
    if not found.per_example:
        raise NotFound(found.why_no_examples or HELD)
    return f"compare-{found.a.id}-{found.b.id}.csv", discordant_csv(found)


# --- one entry's per-example results -----------------------------------------------------------------------


@dataclass
class ExampleResults:
    submission: Submission
    filename: str
    body: str


def example_results(submission_id: int) -> ExampleResults:
    """A published entry's per-example results as CSV: id, correct (1, 0, or empty where the primary metric does
    not count the example), and each counted metric's judgements (or points) right, with out of how many where
    that is not one. Only where per_example_public; the same for every viewer."""
    found = db.session.get(Submission, submission_id) if 1 <= submission_id <= MAX_ID else None
    if found is None or found.predictions is None or not visibility.on_public_board(found):
        raise NotFound(f"no published entry {submission_id}")
    split = found.split
    if not visibility.per_example_public(split):
        raise NotFound(visibility.NO_PER_EXAMPLE)
    inputs = catalog.scoring_inputs(split)
    task, gold = inputs.task, inputs.gold
    predictions = task.decode(found.predictions, gold.n)
    outcomes = per_example.outcomes(task, gold, np.asarray(predictions)[None])
    metrics = list(outcomes.counts)
    spread = [m for m in metrics if not bool((outcomes.of[m] == 1).all())]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "correct", *metrics, *(f"{m}_of" for m in spread)])
    for i, identifier in enumerate(gold.ids.tolist()):
        correct = int(outcomes.correct[0, i]) if outcomes.counted[i] else ""
        counts = [int(outcomes.counts[m][0, i]) if outcomes.of[m][i] > 0 else "" for m in metrics]
        writer.writerow([str(identifier), correct, *counts, *(int(outcomes.of[m][i]) for m in spread)])
    slug = f"{split.benchmark.slug}-{split.slug}"
    return ExampleResults(found, f"{slug}-submission-{found.id}-examples.csv", out.getvalue())
