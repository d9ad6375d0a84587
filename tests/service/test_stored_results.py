"""Compact per-example results (TaskType.results_dtype: VQA v2's points, a byte a question) kept with each scored
submission and read by the board in place of the predictions: stored at upload, stamped with the gold file they
were counted against, and never read once that file changes (the board counts the entry from its predictions)."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import delete, select, update

from app.db import db
from app.evaluation import encoding, get_task
from app.evaluation.tasks.vqa_v2.family import points_of
from app.models import Submission, SubmissionResults
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.catalog import stored_results
from app.services.intake import submissions
from app.services.people import teams
from tests.support.files import write

VQA = get_task("vqa-v2")


@pytest.fixture
def vqa_board(app, runner, tmp_path):
    gold_bytes = VQA.synthetic_gold(300, seed=4)
    assert runner.invoke(args=["benchmarks", "add", "vqa", "--task", "vqa-v2", "--name", "VQA"]).exit_code == 0
    added = runner.invoke(args=["splits", "add", "vqa", "dev", "--labels", write(tmp_path, "gold.jsonl", gold_bytes)])
    assert added.exit_code == 0, added.output
    with app.app_context():
        team = teams.create_team("Lab")
        split = catalog.get_split("vqa", "dev")
        for seed in range(6):
            data = VQA.synthetic_predictions(gold_bytes, 0.4 + 0.08 * seed, seed=seed)
            submissions.store_scored(split, team, data, model_name=f"m{seed}", publish=True)
        yield split, VQA.read_gold(gold_bytes)


def _board(split):
    return [
        (e.submission_id, e.scores, e.intervals, e.rank, e.rank_low, e.rank_high)
        for e in board_snapshots._compute(split, split.board_version).entries
    ]


def test_each_submission_keeps_its_points_stamped_with_the_gold_file(vqa_board):
    split, gold = vqa_board
    rows = db.session.execute(
        select(Submission.predictions, SubmissionResults.data)
        .join(SubmissionResults, SubmissionResults.submission_id == Submission.id)
        .order_by(Submission.id)
    ).all()
    assert len(rows) == 6
    for predictions, blob in rows:
        points = stored_results.unpacked(VQA, split, blob, gold.n)
        assert points is not None and points.dtype == np.uint8
        assert np.array_equal(points, points_of(gold, VQA.decode(predictions, gold.n)[None])[0])
        assert len(blob) < gold.n  # compressed under a byte a question, where the predictions take 16
    # Counted against another gold file, or cut short: not read.
    assert encoding.unpack_results(blob, gold.n, np.uint8, "0" * 16) is None
    assert encoding.unpack_results(blob[:-5], gold.n, np.uint8, stored_results.stamp(split)) is None
    assert encoding.unpack_results(blob, gold.n + 1, np.uint8, stored_results.stamp(split)) is None


def test_the_board_reads_the_results_not_the_predictions(vqa_board, monkeypatch):
    split, _ = vqa_board
    expected = _board(split)

    def no_predictions(*_args, **_kwargs):
        raise AssertionError("the board decoded predictions although every entry has current results")

    monkeypatch.setattr(type(VQA), "decode_many", no_predictions)
    monkeypatch.setattr(type(VQA), "decode", no_predictions)
    assert _board(split) == expected


def test_missing_or_stale_results_are_counted_from_the_predictions_with_the_same_board(vqa_board):
    split, _ = vqa_board
    expected = _board(split)
    ids = db.session.scalars(select(Submission.id).order_by(Submission.id)).all()
    db.session.execute(delete(SubmissionResults).where(SubmissionResults.submission_id == ids[0]))
    stale = encoding.pack_results(np.zeros(300, dtype=np.uint8), np.uint8, "f" * 16)  # another gold file's
    db.session.execute(
        update(SubmissionResults).where(SubmissionResults.submission_id.in_(ids[2:4])).values(data=stale)
    )
    db.session.commit()
    assert _board(split) == expected


def test_rescoring_keeps_the_results_of_the_gold_as_it_is_now(vqa_board):
    """A corrected gold file: the split's rescoring counts every entry's results again, under the new stamp."""
    from app.services.catalog import label_files, rescoring

    split, gold = vqa_board
    split.gold_sha256 = "0" * 64  # as a correction leaves it: the old results no longer match
    ids = db.session.scalars(select(Submission.id).order_by(Submission.id)).all()
    before = db.session.scalars(select(SubmissionResults.data).order_by(SubmissionResults.submission_id)).all()
    assert all(stored_results.unpacked(VQA, split, blob, gold.n) is None for blob in before)
    label_files.remember(split, gold)
    assert rescoring.rescore_all(split, gold, VQA.derive_subsets(gold)) == len(ids)
    after = db.session.scalars(select(SubmissionResults.data).order_by(SubmissionResults.submission_id)).all()
    assert len(after) == len(ids)
    assert all(stored_results.unpacked(VQA, split, blob, gold.n) is not None for blob in after)


def test_a_deleted_submission_takes_its_results_with_it(vqa_board):
    first = db.session.scalars(select(Submission).order_by(Submission.id)).first()
    db.session.delete(first)
    db.session.commit()
    assert db.session.get(SubmissionResults, first.id) is None


def test_an_entry_given_twice_is_read_twice(vqa_board):
    """Two rows of the same submission (an entry compared with itself) get its results in both."""
    split, gold = vqa_board
    ids = db.session.scalars(select(Submission.id).order_by(Submission.id)).all()
    found = board_snapshots._results_matrix(split, VQA, gold, [ids[1], ids[1], ids[0]])
    alone = board_snapshots._results_matrix(split, VQA, gold, [ids[1], ids[0]])
    assert np.array_equal(found[0], alone[0]) and np.array_equal(found[1], alone[0])
    assert np.array_equal(found[2], alone[1])
