"""Winoground and NLVR2 contrast sets through the app, on SQLite: a split from the official gold shape through
`flask splits add`, `flask evaluate` at full precision with every derived subset, a stored and scored submission,
refusals that store nothing, the Ladder's statistics and the label audit (Winoground has no label to audit)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import func, select

from app.db import db
from app.evaluation import get_task
from app.models import Submission
from app.services import catalog
from app.services.errors import Conflict
from app.services.intake import submissions
from app.services.maintenance import label_audits
from app.services.people import teams
from tests.support.files import write


def _split(runner, tmp_path, task_name: str, size: int) -> bytes:
    gold = get_task(task_name).synthetic_gold(size, seed=4)
    added = runner.invoke(args=["benchmarks", "add", task_name, "--task", task_name, "--name", task_name])
    assert added.exit_code == 0, added.output
    path = write(tmp_path, "gold.jsonl", gold)
    result = runner.invoke(args=["splits", "add", task_name, "dev", "--labels", path])
    assert result.exit_code == 0, result.output
    return gold


@pytest.mark.parametrize("task_name, size", [("winoground", 400), ("nlvr2-contrast", 300)])
def test_evaluate_prints_the_family_scores_at_full_precision(runner, tmp_path, task_name, size):
    task = get_task(task_name)
    gold_bytes = _split(runner, tmp_path, task_name, size)
    data = task.synthetic_predictions(gold_bytes, 0.6, seed=2)
    result = runner.invoke(args=["evaluate", task_name, "dev", write(tmp_path, "p", data)])
    assert result.exit_code == 0, result.output
    gold = task.read_gold(gold_bytes)
    assert json.loads(result.output) == task.score(gold, task.parse(data, gold), task.derive_subsets(gold))
    if task_name == "winoground":
        assert {"collapsed_tag:Relation", "num_main_preds:2", "secondary_tag:Symbolic"} <= set(
            json.loads(result.output)
        )


def test_a_winoground_nan_is_refused_naming_the_line_and_nothing_is_stored(app, runner, tmp_path):
    gold = _split(runner, tmp_path, "winoground", 40)
    lines = get_task("winoground").synthetic_predictions(gold, 0.5, seed=1, shuffle=False).decode().splitlines()
    lines[6] = '{"label": "1_c1_i0", "score": NaN}'
    result = runner.invoke(args=["evaluate", "winoground", "dev", write(tmp_path, "p", "\n".join(lines).encode())])
    assert result.exit_code == 2 and "line 7: score 'NaN' for '1_c1_i0' is NaN" in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count(Submission.id))) == 0


def test_stored_submissions_are_audited_only_where_there_is_a_label(app, runner, tmp_path):
    golds = {name: _split(runner, tmp_path, name, 200) for name in ("winoground", "nlvr2-contrast")}
    with app.app_context():
        team = teams.create_team("Lab")
        for name, gold in golds.items():
            split = catalog.get_split(name, "dev")
            for seed in range(3):
                data = get_task(name).synthetic_predictions(gold, 0.5 + 0.1 * seed, seed=seed)
                submission = submissions.store_scored(split, team, data, model_name=f"m{seed}")
                stored = get_task(name).decode(submission.predictions, 200)
                assert np.array_equal(stored, get_task(name).parse(data, get_task(name).read_gold(gold)))
        with pytest.raises(
            Conflict, match="winoground/dev has no gold label to audit: Winoground gold files have none"
        ):
            label_audits.audit_labels("winoground", "dev")
        report = label_audits.audit_labels("nlvr2-contrast", "dev", 5)
        assert report.submissions == 3 and list(report.gold_accuracy) == ["label"] and len(report.rows) == 5
