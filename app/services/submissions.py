"""Scoring uploads: a dry run for maintainers, and storing a scored submission with its scores."""
from __future__ import annotations

from flask import current_app

from app.db import db
from app.evaluation import ValidationError, get_task
from app.models import Score, Split, Submission, Team, User, utcnow
from app.services import catalog, uploads
from app.services.errors import InvalidInput

Scores = dict[str, dict[str, float]]


def max_upload_bytes() -> int:
    return int(current_app.config["MAX_UPLOAD_MB"]) * 1024 * 1024


def _parse_and_score(split: Split, data: bytes):
    task = get_task(split.benchmark.task_type)
    gold = catalog.gold_for(split)
    try:
        predictions = task.parse(data, gold, max_bytes=max_upload_bytes())
    except ValidationError as exc:
        raise InvalidInput(f"invalid prediction file: {len(exc.problems)} problem(s)", exc.problems) from exc
    scores = task.score(gold, predictions, catalog.subset_indices(split))
    return task, predictions, scores


def evaluate(benchmark_slug: str, split_slug: str, data: bytes) -> Scores:
    """Score a prediction file against a split without storing anything."""
    split = catalog.get_split(benchmark_slug, split_slug)
    _, _, scores = _parse_and_score(split, data)
    return scores


def store_scored(
    split: Split,
    team: Team,
    data: bytes,
    *,
    model_name: str,
    user: User | None = None,
    description: str = "",
    paper_url: str | None = None,
    code_url: str | None = None,
    anonymous: bool = False,
    publish: bool = False,
) -> Submission:
    """Validate, score and store one submission with its scores in one transaction."""
    task, predictions, scores = _parse_and_score(split, data)
    digest = uploads.keep_original(data)
    submission = Submission(
        split=split,
        team=team,
        user=user,
        status="scored",
        model_name=model_name,
        description=description,
        paper_url=paper_url,
        code_url=code_url,
        anonymous=anonymous,
        file_sha256=digest,
        file_size=len(data),
        predictions=task.encode(predictions),
        published_at=utcnow() if publish else None,
    )
    submission.scores = score_rows(scores)
    db.session.add(submission)
    db.session.commit()
    return submission


def score_rows(scores: Scores) -> list[Score]:
    return [
        Score(subset=subset, metric=metric, value=float(value))
        for subset, metrics in scores.items()
        for metric, value in metrics.items()
    ]
