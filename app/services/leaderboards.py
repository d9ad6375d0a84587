"""Public rankings of published submissions, read from stored scores."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from app.db import db
from app.evaluation import get_task
from app.models import Benchmark, Score, Split, Submission, Team, as_utc
from app.services import catalog


@dataclass
class Entry:
    rank: int
    submission_id: int
    model_name: str
    team: str | None  # None when the team chose to appear anonymously
    submitted_at: datetime
    paper_url: str | None
    code_url: str | None
    description: str
    scores: dict[str, dict[str, float]] = field(default_factory=dict)


def scores_are_public(split: Split) -> bool:
    """Hidden splits under a withholding policy keep scores private until a maintainer reveals them."""
    return not split.hidden or split.feedback == "full" or split.revealed_at is not None


def leaderboard(split: Split) -> list[Entry]:
    """Published, visible, scored submissions ranked by the primary metric, then tie-break, then time."""
    if not scores_are_public(split):
        return []
    task = get_task(split.benchmark.task_type)
    rows = db.session.execute(
        select(Submission, Team.name)
        .join(Team, Submission.team_id == Team.id)
        .where(
            Submission.split_id == split.id,
            Submission.status == "scored",
            Submission.published_at.is_not(None),
            Submission.hidden_at.is_(None),
        )
    ).all()
    if not rows:
        return []
    ids = [submission.id for submission, _ in rows]
    scores: dict[int, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for submission_id, subset, metric, value in db.session.execute(
        select(Score.submission_id, Score.subset, Score.metric, Score.value).where(Score.submission_id.in_(ids))
    ):
        scores[submission_id][subset][metric] = value

    def key(row):
        submission, _ = row
        overall = scores[submission.id].get("all", {})
        tie = overall.get(task.tie_break_metric, 0.0) if task.tie_break_metric else 0.0
        return (-overall.get(task.primary_metric, 0.0), -tie, as_utc(submission.created_at), submission.id)

    entries: list[Entry] = []
    previous = None
    for position, (submission, team_name) in enumerate(sorted(rows, key=key), start=1):
        overall = scores[submission.id].get("all", {})
        shown = (overall.get(task.primary_metric), overall.get(task.tie_break_metric or ""))
        rank = entries[-1].rank if entries and shown == previous else position
        previous = shown
        entries.append(
            Entry(
                rank=rank,
                submission_id=submission.id,
                model_name=submission.model_name,
                team=None if submission.anonymous else team_name,
                submitted_at=as_utc(submission.created_at),
                paper_url=submission.paper_url,
                code_url=submission.code_url,
                description=submission.description,
                scores={subset: dict(metrics) for subset, metrics in scores[submission.id].items()},
            )
        )
    return entries


@dataclass
class Board:
    benchmark: Benchmark
    split: Split | None
    entries: list[Entry]
    scores_public: bool
    columns: list[Column] = field(default_factory=list)


def default_split(benchmark: Benchmark) -> Split | None:
    """The blind test (the last hidden split) where there is one, else the last split added."""
    hidden = [split for split in benchmark.splits if split.hidden]
    if hidden:
        return hidden[-1]
    return benchmark.splits[-1] if benchmark.splits else None


def board(benchmark_slug: str, split_slug: str | None = None) -> Board:
    benchmark = catalog.get_benchmark(benchmark_slug)
    split = catalog.get_split(benchmark_slug, split_slug) if split_slug else default_split(benchmark)
    if split is None:
        return Board(benchmark, None, [], True)
    return Board(benchmark, split, leaderboard(split), scores_are_public(split), columns(split))


METRIC_LABELS = {"accuracy": "Accuracy", "consistency": "Consistency", "q_a": "Q→A", "qa_r": "QA→R", "q_ar": "Q→AR"}


@dataclass(frozen=True)
class Column:
    subset: str
    metric: str
    label: str


def columns(split: Split) -> list[Column]:
    """Every metric on the whole split, then accuracy on the derived bias subsets (NLVR2)."""
    task = get_task(split.benchmark.task_type)
    result = [Column("all", metric, METRIC_LABELS.get(metric, metric)) for metric in task.metrics]
    for subset in split.subsets:
        if subset.source == "derived":
            for metric in task.subset_metrics:
                label = f"{subset.name.capitalize()} {METRIC_LABELS.get(metric, metric).lower()}"
                result.append(Column(subset.name, metric, label))
    return result
