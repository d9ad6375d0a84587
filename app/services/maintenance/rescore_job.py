"""The "rescore" job: every stored score and probe summary of a split made again against its gold file and
subsets as they are when it runs (after a label correction or a new subset).

One transaction: a run that stops part-way (a killed worker, its time limit) leaves the scores as they were,
and the next run replaces them all, so each scored submission ends with one score per subset and metric.
"""

from __future__ import annotations

from app.db import db
from app.evaluation import get_task
from app.models import Split
from app.services.blind_test import integrity
from app.services.catalog import label_files, rescoring
from app.services.jobs import queue


def rescore(args: dict, deadline: queue.Deadline) -> str:
    split = db.session.get(Split, int(args["split_id"]))
    if split is None:
        return "split deleted"
    task = get_task(split.benchmark.task_type)
    gold = label_files.load_gold(split)
    subsets = {subset.name: subset.indices for subset in split.subsets}
    count = rescoring.rescore_all(split, gold, subsets, between_chunks=deadline.check)
    deadline.check()
    summarised = integrity.rebuild_probe_summaries(split, task, gold)
    # Pages that show a submission's scores depend on the board version: they change with the scores.
    split.board_version += 1
    db.session.commit()
    return f"{count} submissions rescored, {summarised} probe summaries"


queue.register(rescoring.RESCORE, rescore, eager_inline=True)
