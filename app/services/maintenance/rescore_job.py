"""The "rescore" job: every stored score and probe summary of a split made again against its gold file and
subsets as they are when it runs (after a label correction or a new subset).

One transaction: a run that stops part-way (a killed worker, its time limit) leaves the scores as they were,
and the next run replaces them all, so each scored submission ends with one score per subset and metric.
"""

from __future__ import annotations

import math

from sqlalchemy import select

from app.db import db
from app.evaluation.display import score_text
from app.models import Score, Split, Submission, User
from app.services import catalog
from app.services.blind_test import integrity, visibility
from app.services.catalog import label_files, rescoring
from app.services.jobs import queue
from app.services.mail import outbox
from app.services.mail.delivery import Letter
from app.services.people import teams


def rescore(args: dict, deadline: queue.Deadline) -> str:
    split = db.session.get(Split, int(args["split_id"]))
    if split is None:
        return "split deleted"
    task = catalog.task_of(split.benchmark)
    gold = label_files.load_gold(split)
    subsets = {subset.name: subset.indices for subset in split.subsets}
    before = _headline_scores(split, task.primary_metric)
    count = rescoring.rescore_all(split, gold, subsets, between_chunks=deadline.check)
    deadline.check()
    summarised = integrity.rebuild_probe_summaries(split, task, gold)
    # Pages that show a submission's scores depend on the board version: they change with the scores.
    split.board_version += 1
    told = _post_moved(split, before, _headline_scores(split, task.primary_metric))
    db.session.commit()
    return f"{count} submissions rescored, {summarised} probe summaries, {told} told by mail"


def _headline_scores(split: Split, metric: str) -> dict[int, float]:
    """Each scored submission's score on the whole split, by the task's primary metric."""
    rows = db.session.execute(
        select(Score.submission_id, Score.value)
        .join(Submission, Submission.id == Score.submission_id)
        .where(Submission.split_id == split.id, Score.subset == "all", Score.metric == metric)
    )
    return {int(submission_id): float(value) for submission_id, value in rows}


def _post_moved(split: Split, before: dict[int, float], after: dict[int, float]) -> int:
    """Mail the members of each team whose submission's score moved, when anyone may see the score: a blind
    test before its reveal keeps even the fact to itself (its teams know only their released counts, a sealed
    part's score follows from the whole split's; the board's changelog says labels changed)."""
    if visibility.counts_only(split) or not visibility.scores_are_public(split):
        return 0
    moved = [sid for sid, value in after.items() if sid in before and not math.isclose(value, before[sid])]
    told = 0
    for submission in db.session.scalars(select(Submission).where(Submission.id.in_(moved))):
        for user in teams.mail_recipients([submission.team_id], "notify_rescore"):
            outbox.post(
                "rescore",
                user_id=user.id,
                submission_id=submission.id,
                before=before[submission.id],
                after=after[submission.id],
            )
            told += 1
    return told


def _rescore_letter(args: dict) -> Letter | None:
    user, submission = (
        db.session.get(User, int(args["user_id"])),
        db.session.get(Submission, int(args["submission_id"])),
    )
    if user is None or submission is None or not user.notify_rescore or not user.is_member(submission.team_id):
        return None
    split = submission.split
    board = f"{split.benchmark.name} {split.name}"
    metric = catalog.task_of(split.benchmark).primary_metric
    return Letter(
        to=user.email,
        subject=f"Your {board} submission #{submission.id} was rescored",
        body=(
            f"Labels of {board} were corrected, and every submission was scored again.\n\n"
            f"Your submission #{submission.id} ({submission.model_name}): {metric} "
            f"{score_text(args['before'])} -> {score_text(args['after'])} (%).\n"
            f"Its page: {outbox.link(f'/submissions/{submission.id}')}\n\n"
            f"Turn this mail off on your account page: {outbox.link('/account')}\n"
        ),
    )


outbox.writer("rescore", _rescore_letter)


queue.register(rescoring.RESCORE, rescore, eager_inline=True)
