"""The maintainers' command line, end to end on a migrated database."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.evaluation import TASK_TYPES
from app.models import Job, LeaderboardCache, Score, Split, Submission
from app.services.blind_test import visibility
from app.services.boards import board_snapshots
from tests.support.files import write
from tests.support.splits import nlvr2_split


def test_benchmarks_add_and_list(runner):
    result = runner.invoke(
        args=[
            "benchmarks",
            "add",
            "nlvr2",
            "--task",
            "nlvr2",
            "--name",
            "NLVR2",
            "--paper-url",
            "https://arxiv.org/abs/1811.00491",
        ]
    )
    assert result.exit_code == 0, result.output
    listed = runner.invoke(args=["benchmarks", "list"])
    assert "nlvr2\tnlvr2\tNLVR2" in listed.output


def test_benchmarks_add_duplicate_exits_2(runner):
    runner.invoke(args=["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "NLVR2"])
    result = runner.invoke(args=["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "Again"])
    assert result.exit_code == 2
    assert "already exists" in result.output


def test_benchmarks_add_unknown_task_exits_2(runner):
    result = runner.invoke(args=["benchmarks", "add", "x", "--task", "pong", "--name", "X"])
    assert result.exit_code == 2
    assert "pong" in result.output


def test_benchmarks_add_bad_slug_exits_2(runner):
    result = runner.invoke(args=["benchmarks", "add", "Bad Slug!", "--task", "nlvr2", "--name", "X"])
    assert result.exit_code == 2
    assert "Bad Slug!" in result.output


def test_splits_add_copies_gold_privately_and_derives_subsets(app, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path, split="test-u", hidden=True)
    with app.app_context():
        split = db.session.scalar(select(Split))
        stored = Path(app.config["HIDDEN_LABELS_DIR"]) / split.gold_path
        assert stored.read_bytes() == gold
        assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600
        import hashlib

        assert split.gold_sha256 == hashlib.sha256(gold).hexdigest()
        assert split.hidden and split.example_count == 400
        names = {s.name: s.size for s in split.subsets}
        assert names["balanced"] > 0 and names["unbalanced"] > 0
    listed = runner.invoke(args=["splits", "list"])
    assert "nlvr2\ttest-u\ttest-u\thidden\t400" in listed.output


def test_splits_add_rejects_bad_gold_without_storing(app, runner, tmp_path):
    runner.invoke(args=["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "NLVR2"])
    bad = write(tmp_path, "bad.json", b'{"identifier": "dev-1-0-0", "label": "True"}\nnot json\n')
    result = runner.invoke(args=["splits", "add", "nlvr2", "dev", "--labels", bad])
    assert result.exit_code == 2
    assert "line 2" in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count(Split.id))) == 0
    hidden = Path(app.config["HIDDEN_LABELS_DIR"])
    assert not hidden.exists() or not any(p.is_file() for p in hidden.rglob("*"))


def test_splits_add_unknown_benchmark_exits_2(runner, tmp_path):
    path = write(tmp_path, "g.json", synthetic.nlvr2_gold(16))
    result = runner.invoke(args=["splits", "add", "nope", "dev", "--labels", path])
    assert result.exit_code == 2
    assert "unknown benchmark 'nope'" in result.output


def test_splits_add_missing_file_exits_2(runner, tmp_path):
    runner.invoke(args=["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "NLVR2"])
    result = runner.invoke(args=["splits", "add", "nlvr2", "dev", "--labels", str(tmp_path / "absent.json")])
    assert result.exit_code == 2


def test_vcr_split_with_field_subsets(app, runner, tmp_path):
    runner.invoke(args=["benchmarks", "add", "vcr", "--task", "vcr", "--name", "VCR"])
    gold = synthetic.vcr_gold(200, seed=3)
    result = runner.invoke(
        args=["splits", "add", "vcr", "val", "--labels", write(tmp_path, "v.jsonl", gold), "--subset-field", "region"]
    )
    assert result.exit_code == 0, result.output
    with app.app_context():
        split = db.session.scalar(select(Split))
        regions = [s for s in split.subsets if s.name.startswith("region:")]
        assert len(regions) >= 2
        assert sum(s.size for s in regions) == 200


def test_evaluate_prints_json_scores(runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path)
    predictions = write(tmp_path, "p.csv", synthetic.predictions("nlvr2", gold, 0.8, seed=2))
    result = runner.invoke(args=["evaluate", "nlvr2", "dev", predictions])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.output)
    assert set(scores) >= {"all", "balanced", "unbalanced"}
    assert set(scores["all"]) == {"accuracy", "consistency"}
    assert set(scores["balanced"]) == {"accuracy"}
    assert 70 < scores["all"]["accuracy"] < 90


def test_evaluate_all_true_matches_hand_count(runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path)
    rows = [json.loads(line) for line in gold.decode().splitlines()]
    expected = 100 * sum(r["label"] == "True" for r in rows) / len(rows)
    predictions = write(tmp_path, "p.csv", synthetic.all_true("nlvr2", gold))
    result = runner.invoke(args=["evaluate", "nlvr2", "dev", predictions])
    assert json.loads(result.output)["all"]["accuracy"] == expected


def test_evaluate_invalid_file_exits_2_naming_line(app, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path)
    lines = synthetic.all_true("nlvr2", gold).decode().splitlines()
    lines[4] = lines[4].split(",")[0] + ",maybe"
    predictions = write(tmp_path, "p.csv", ("\n".join(lines) + "\n").encode())
    result = runner.invoke(args=["evaluate", "nlvr2", "dev", predictions])
    assert result.exit_code == 2
    assert "line 5" in result.output and "maybe" in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count(Submission.id))) == 0


def test_subsets_add_rescores_stored_submissions(app, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path)
    with app.app_context():
        from app.services import catalog
        from app.services.intake import submissions
        from app.services.people import teams

        team = teams.create_team("Lab")
        split = catalog.get_split("nlvr2", "dev")
        for seed in range(3):
            submissions.store_scored(
                split, team, synthetic.predictions("nlvr2", gold, 0.7, seed=seed), model_name=f"m{seed}"
            )
    ids = [json.loads(line)["identifier"] for line in gold.decode().splitlines()][:50]
    path = write(tmp_path, "ids.txt", ("\n".join(ids) + "\n").encode())
    result = runner.invoke(args=["subsets", "add", "nlvr2", "dev", "first-fifty", "--ids", path])
    assert result.exit_code == 0, result.output
    assert "50 examples" in result.output and "rescored 3 submissions" in result.output
    with app.app_context():
        values = db.session.scalars(select(Score.value).where(Score.subset == "first-fifty")).all()
        assert len(values) == 3 and all(0 <= v <= 100 for v in values)
        # The same subset evaluated afresh gives the same number as the rescoring pass.
        sub = db.session.scalar(select(Submission).order_by(Submission.id))
        stored = {s.metric: s.value for s in sub.scores if s.subset == "first-fifty"}
    fresh = runner.invoke(
        args=["evaluate", "nlvr2", "dev", write(tmp_path, "p0.csv", synthetic.predictions("nlvr2", gold, 0.7, seed=0))]
    )
    assert json.loads(fresh.output)["first-fifty"] == stored


def test_subsets_add_unknown_id_exits_2(runner, tmp_path):
    nlvr2_split(runner, tmp_path)
    path = write(tmp_path, "ids.txt", b"dev-0-0-0-0\nnot-an-id\n")
    result = runner.invoke(args=["subsets", "add", "nlvr2", "dev", "odd", "--ids", path])
    assert result.exit_code == 2
    assert "not-an-id" in result.output


def test_demo_is_idempotent_and_lands_healthy(app, runner):
    """`make run` is `flask demo`, then the server: /healthz must say ok with no job waiting as soon as it starts
    (issue 34: the held boards' jobs waited for a reader that never comes and were flagged stuck, and the public
    boards' waited for their first reader). A job waiting now is one nobody will run, so it is counted at once,
    not after JOB_STUCK_AFTER. (One test with the idempotence check: loading the demo takes ~10 s.)"""
    first = runner.invoke(args=["demo"])
    assert first.exit_code == 0, first.output
    health = app.test_client().get("/healthz").get_json()
    assert health["status"] == "ok", health
    assert health["queue"]["waiting"] == 0 and health["queue"]["running"] == 0, health["queue"]
    with app.app_context():
        count = db.session.scalar(select(func.count(Submission.id)))
        assert count > 0
        splits = db.session.scalars(select(Split)).all()
        held = [split for split in splits if not visibility.scores_are_public(split)]
        assert held, "the demo has blind tests whose scores are held"
        # A held board's job either ran or was never queued.
        keys = {board_snapshots.board_key(split.id) for split in held}
        assert not db.session.scalars(select(Job).where(Job.key.in_(keys), Job.state != "done")).all()
        # Every public board was built before the demo ended (in-process no job waits for its reader).
        for split in splits:
            if visibility.scores_are_public(split):
                stored = db.session.get(LeaderboardCache, split.id)
                assert stored is not None and stored.version == split.board_version, split.slug
        tasks = {s.benchmark.task_type for s in splits}
        assert tasks == set(TASK_TYPES)  # every family has a demo benchmark
        nlvr2_dev = next(s for s in splits if s.benchmark.task_type == "nlvr2" and s.slug == "dev")
        sizes = {s.name: s.size for s in nlvr2_dev.subsets}
        assert sizes["balanced"] > 0 and sizes["unbalanced"] > 0
        assert any(name.startswith("category:") for name in sizes)
    second = runner.invoke(args=["demo"])
    assert second.exit_code == 0, second.output
    assert "0 submissions" in second.output
    with app.app_context():
        assert db.session.scalar(select(func.count(Submission.id))) == count
