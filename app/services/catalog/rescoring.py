"""Scoring stored submissions again, in one vectorised pass (new subset, corrected labels), and queueing it.

Helpers for other services: they flush but never commit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sqlalchemy import delete, func, insert, select

from app.db import db
from app.evaluation import GoldSet
from app.models import Score, Split, Submission
from app.services.catalog import stored_results
from app.services.catalog.task_types import task_of
from app.services.jobs import queue

# Decoding and scoring in chunks bounds memory (a chunk of 2,000 NLVR2 submissions is ~14 MB of booleans).
CHUNK = 2000


def _stored(split: Split, *conditions, rows: int = CHUNK):
    """The split's scored submissions (id, predictions) in id order, `rows` at a time: streamed from the
    database (a server-side cursor on PostgreSQL), so a million stored submissions never sit in memory at
    once. The caller inserts scores while it reads, in the same transaction."""
    query = (
        select(Submission.id, Submission.predictions)
        .where(Submission.split_id == split.id, Submission.status == "scored", *conditions)
        .order_by(Submission.id)
    )
    return db.session.execute(query, execution_options={"yield_per": rows}).partitions(rows)


_CHUNK_BYTES = 64 * 2**20  # decoded predictions of a chunk at most (2,000 VQA v2 test-std entries are 14 GB)


RESCORE = "rescore"  # the job's kind (app/services/maintenance/rescore_job.py runs it)


def queue_rescoring(split: Split) -> int:
    """Queue the split's rescoring (a job, in the caller's transaction): every stored score made again
    against the gold file and subsets as they are when it runs. Returns how many submissions it will rescore."""
    queue.enqueue(RESCORE, f"rescore:{split.id}", {"split_id": split.id})
    return (
        db.session.scalar(select(func.count()).where(Submission.split_id == split.id, Submission.status == "scored"))
        or 0
    )


def rescore_all(
    split: Split, gold: GoldSet, subsets: dict[str, np.ndarray], between_chunks: Callable[[], None] | None = None
) -> int:
    """Replace every stored score of the split's scored submissions with scores against `gold` on the
    whole split and `subsets` (corrected labels); returns how many submissions were rescored.
    `between_chunks` is called after each chunk (a job's time limit: it raises to stop)."""
    task = task_of(split.benchmark)
    db.session.execute(
        delete(Score).where(
            Score.submission_id.in_(
                select(Submission.id).where(Submission.split_id == split.id, Submission.status == "scored")
            )
        )
    )
    count = 0
    size = 8 * int(np.prod(task.prediction_shape(gold.n)))  # decoded, at most 8 bytes a value
    rows = max(1, min(CHUNK, _CHUNK_BYTES // max(size, 1)))
    for chunk in _stored(split, Submission.predictions.is_not(None), rows=rows):
        count += len(chunk)
        stacked = task.decode_many([blob for _, blob in chunk], gold.n)
        if task.results_dtype is not None:  # the board's results, counted against the gold as it is now
            for (submission_id, _), predictions in zip(chunk, stacked, strict=True):
                stored_results.keep(submission_id, stored_results.packed(task, gold, split, predictions))
        results = task.score_batch(gold, stacked, subsets)
        values = [
            {"submission_id": submission_id, "subset": subset, "metric": metric, "value": value}
            for (submission_id, _), result in zip(chunk, results, strict=True)
            for subset, metrics in result.items()
            for metric, value in metrics.items()
        ]
        if values:
            db.session.execute(insert(Score), values)
        if between_chunks is not None:
            between_chunks()
    return count
