"""The ranks of a soft family (VQA v2's points test) on a board of near-identical entries: each rank inside its
interval, ties together, for bounded work; and two entries that differ on three questions are not ranked apart
(VQA v2's ranks used the normal approximation of the paired permutation test alone, which ranked them apart: an
exact sign-flip p of 1/8)."""

from __future__ import annotations

import json

import numpy as np
from sqlalchemy import event

from app.db import db
from app.evaluation import get_task, statistics
from app.services import catalog
from app.services.boards import leaderboards
from app.services.intake import submissions
from app.services.people import teams
from tests.support.work import python_lines

BOARD_LINES = 120 * 7140  # lines of Python a 120-entry board may cost: 120 a pair of entries (about 30 here)


def test_a_board_of_near_identical_vqa_entries_ranks_each_inside_its_interval_and_ties_together(app):
    task = get_task("vqa-v2")
    gold_bytes = task.synthetic_gold(150, seed=2)
    base = json.loads(task.synthetic_predictions(gold_bytes, 0.7, seed=1, shuffle=False))
    rng = np.random.default_rng(0)
    with app.app_context():
        catalog.add_benchmark("v", "vqa-v2", "V")
        catalog.add_split("v", "dev", gold_bytes, name="Dev")
        split = catalog.get_split("v", "dev")
        team = teams.create_team("Lab")
        for i in range(120):
            entries = [dict(entry) for entry in base]
            for row in rng.choice(len(entries), size=int(rng.integers(0, 4)), replace=False).tolist():
                entries[row]["answer"] = f"wrong{i % 7}"  # 0 to 3 questions changed: many ties, many near ties
            submissions.store_scored(split, team, json.dumps(entries).encode(), model_name=f"m{i}", publish=True)
        statements: list[str] = []
        listener = lambda conn, cursor, statement, *_: statements.append(statement)  # noqa: E731
        event.listen(db.engine, "before_cursor_execute", listener)
        try:
            board, _ = python_lines(lambda: leaderboards.board("v", "dev", paginate=False), limit=BOARD_LINES)
        finally:
            event.remove(db.engine, "before_cursor_execute", listener)
    entries = board.entries
    assert len(entries) == 120
    # Bounded work, not a time: a fixed number of queries (not one an entry), and Python's share bounded by the
    # pairs (about 30 lines a pair here; the comparisons themselves are numpy's).
    assert len(statements) <= 40, statements
    primary = np.array([entry.scores["all"]["accuracy"] for entry in entries])
    ranks = np.array([entry.rank for entry in entries])
    lows, highs = (np.array([getattr(entry, name) for entry in entries]) for name in ("rank_low", "rank_high"))
    assert (np.diff(primary) <= 0).all()
    assert ((lows >= 1) & (lows <= ranks) & (ranks <= highs) & (highs <= 120)).all()
    for score in np.unique(primary):
        tied = primary == score
        assert len(set(ranks[tied])) == 1 and len(set(highs[tied])) == 1, score


def test_two_vqa_entries_that_differ_on_three_questions_are_not_ranked_apart():
    """Three questions out of 300 where one entry has full credit and the other none, equal elsewhere: the exact
    one-sided sign-flip p is 1/8, the normal approximation's 0.042 < 0.05, so the two get ranks 1 and 2 with rank
    intervals [1, 1] and [2, 2], a certainty the data cannot give (McNemar's exact test on the same three
    discordant 0/1 judgements keeps them at [1, 2])."""
    points = np.full((2, 300), 30, dtype=np.uint8)
    points[1, :3] = 0
    primary = points.sum(axis=1) / 9000 * 100
    (ranks,) = statistics.paired_view_ranks(points, primary, [None])
    correct = points == 30
    (exact,) = statistics.view_ranks(correct, correct.mean(axis=1) * 100, [None])
    assert exact.highs.tolist() == [2, 2]
    assert ranks.highs.tolist() == [2, 2]
