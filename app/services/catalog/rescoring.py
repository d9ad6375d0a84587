"""Scoring stored submissions again, in one vectorised pass (new subset, corrected labels).

Helpers for other services: they flush but never commit.
"""

from __future__ import annotations

import numpy as np
from sqlalchemy import delete, insert, select

from app.db import db
from app.evaluation import GoldSet, get_task
from app.models import Score, Split, Submission

# Decoding and scoring in chunks bounds memory (a chunk of 2,000 NLVR2 submissions is ~14 MB of booleans).
CHUNK = 2000


def _stored(split: Split, *conditions):
    """The split's scored submissions (id, predictions) in id order, CHUNK rows at a time: streamed from the
    database (a server-side cursor on PostgreSQL), so a million stored submissions never sit in memory at
    once. The caller inserts scores while it reads, in the same transaction."""
    query = (
        select(Submission.id, Submission.predictions)
        .where(Submission.split_id == split.id, Submission.status == "scored", *conditions)
        .order_by(Submission.id)
    )
    return db.session.execute(query, execution_options={"yield_per": CHUNK}).partitions(CHUNK)


def score_new_subset(split: Split, gold: GoldSet, name: str, indices: np.ndarray) -> int:
    """Insert the scores on one new subset for every scored submission of the split."""
    task = get_task(split.benchmark.task_type)
    count = 0
    for chunk in _stored(split):
        count += len(chunk)
        stacked = np.stack([task.decode(blob, gold.n) for _, blob in chunk])
        results = task.score_batch(gold, stacked, {name: indices})
        values = [
            {"submission_id": submission_id, "subset": name, "metric": metric, "value": value}
            for (submission_id, _), result in zip(chunk, results, strict=True)
            for metric, value in result.get(name, {}).items()
        ]
        if values:
            db.session.execute(insert(Score), values)
    return count


def rescore_all(split: Split, gold: GoldSet, subsets: dict[str, np.ndarray]) -> int:
    """Replace every stored score of the split's scored submissions with scores against `gold` on the
    whole split and `subsets` (corrected labels); returns how many submissions were rescored."""
    task = get_task(split.benchmark.task_type)
    db.session.execute(
        delete(Score).where(
            Score.submission_id.in_(
                select(Submission.id).where(Submission.split_id == split.id, Submission.status == "scored")
            )
        )
    )
    count = 0
    for chunk in _stored(split, Submission.predictions.is_not(None)):
        count += len(chunk)
        results = task.score_batch(gold, task.decode_many([blob for _, blob in chunk], gold.n), subsets)
        values = [
            {"submission_id": submission_id, "subset": subset, "metric": metric, "value": value}
            for (submission_id, _), result in zip(chunk, results, strict=True)
            for subset, metrics in result.items()
            for metric, value in metrics.items()
        ]
        if values:
            db.session.execute(insert(Score), values)
    return count
