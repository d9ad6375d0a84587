"""Each scored submission's compact per-example results (TaskType.results_dtype), stamped with the gold file they
were counted against (table submission_results): what a board reads in place of the predictions (VQA v2 test-std:
448 KB of points an entry before compression, where its predictions are 7.2 MB). Written with the submission and
again when its split is rescored; results stamped with another gold file are never read (the board counts them
from the predictions). Helpers for other services: they flush but never commit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from sqlalchemy import delete, insert, select

from app.db import db
from app.evaluation import GoldSet, encoding
from app.models import Split, SubmissionResults


def stamp(split: Split) -> str:
    """What a split's results are counted against: its gold file as it is now."""
    return split.gold_sha256[:16]


def packed(task, gold: GoldSet, split: Split, predictions: np.ndarray) -> bytes | None:
    """One submission's results as stored, or None for a family that keeps none apart from its predictions."""
    if task.results_dtype is None:
        return None
    return encoding.pack_results(task.results(gold, np.asarray(predictions)[None])[0], task.results_dtype, stamp(split))


def keep(submission_id: int, blob: bytes | None) -> None:
    """Store (or replace) a submission's results; None stores nothing (and removes what was kept)."""
    db.session.execute(delete(SubmissionResults).where(SubmissionResults.submission_id == submission_id))
    if blob is not None:
        db.session.execute(insert(SubmissionResults).values(submission_id=submission_id, data=blob))


def each(ids: Sequence[int], rows: int) -> Iterator[Sequence[tuple[int, bytes]]]:
    """The stored results of these submissions, `rows` at a time (streamed: a server-side cursor on PostgreSQL);
    a submission without any is left out."""
    query = (
        select(SubmissionResults.submission_id, SubmissionResults.data)
        .where(SubmissionResults.submission_id.in_(ids))
        .order_by(SubmissionResults.submission_id)
    )
    for chunk in db.session.execute(query, execution_options={"yield_per": rows}).partitions(rows):
        yield [(submission_id, data) for submission_id, data in chunk]


def unpacked(task, split: Split, blob: bytes | None, n: int) -> np.ndarray | None:
    """The stored results if they are the split's current ones (n values, its gold file's stamp), else None."""
    return encoding.unpack_results(blob, n, task.results_dtype, stamp(split))
