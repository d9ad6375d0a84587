"""GQA through the app, on SQLite: a split from the official questions file through `flask splits add`, `flask
evaluate` at full precision with its typed subsets, a refusal that stores nothing, a board (intervals for the
ratios, none for the consistency and the distribution), a hidden split's sealed part and Ladder over the balanced
questions, the sample file and the label audit."""

from __future__ import annotations

import json
import math

import numpy as np
from sqlalchemy import func, select

from app.db import db
from app.evaluation import get_task
from app.evaluation import ladder as ladder_rule
from app.models import Submission
from app.services import catalog
from app.services.blind_test import integrity
from app.services.boards import listings
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.maintenance import label_audits
from app.services.people import teams
from tests.support.files import write
from tests.support.users import make_user

GQA = get_task("gqa")
SIZE = 240


def _benchmark(runner) -> None:
    added = runner.invoke(args=["benchmarks", "add", "gqa", "--task", "gqa", "--name", "GQA"])
    assert added.exit_code == 0, added.output


def _split(runner, tmp_path, slug: str = "dev", *flags: str) -> bytes:
    gold = GQA.synthetic_gold(SIZE, seed=4 if slug == "dev" else 5)
    path = write(tmp_path, f"{slug}.json", gold)
    result = runner.invoke(args=["splits", "add", "gqa", slug, "--labels", path, *flags])
    assert result.exit_code == 0, result.output
    return gold


def test_evaluate_prints_every_metric_and_typed_subset_at_full_precision(app, runner, tmp_path):
    _benchmark(runner)
    gold_bytes = _split(runner, tmp_path)
    data = GQA.synthetic_predictions(gold_bytes, 0.6, seed=2)
    result = runner.invoke(args=["evaluate", "gqa", "dev", write(tmp_path, "p.json", data)])
    assert result.exit_code == 0, result.output
    gold = GQA.read_gold(gold_bytes)
    printed = json.loads(result.output)
    assert printed == GQA.score(gold, GQA.parse(data, gold), GQA.derive_subsets(gold))
    # No choices file: no validity or plausibility (the next test's split has one).
    assert set(printed["all"]) == set(GQA.metrics) - set(GQA.choices_metrics)
    assert {"structural:query", "semantic:attr"} <= set(printed)
    entries = json.loads(data)
    entries[3]["prediction"] = None
    refused = runner.invoke(args=["evaluate", "gqa", "dev", write(tmp_path, "bad.json", json.dumps(entries).encode())])
    assert refused.exit_code == 2 and "entry 4: question" in refused.output and "'prediction' must be" in refused.output
    with app.app_context():
        assert db.session.scalar(select(func.count(Submission.id))) == 0
        name, body, media_type = catalog.sample_file("gqa", "dev", "json")
        assert name.endswith(".json") and media_type == "application/json"
        assert GQA.parse(body, gold).shape == (gold.n,)


def test_a_board_a_sealed_hidden_split_and_a_label_audit(app, runner, tmp_path):
    _benchmark(runner)
    dev = _split(runner, tmp_path)
    test = _split(runner, tmp_path, "test", "--hidden")
    assert (
        runner.invoke(args=["splits", "policy", "gqa", "test", "--sealed", "0.3", "--feedback", "ladder"]).exit_code
        == 0
    )
    with app.app_context():
        team = teams.create_team("Lab")
        member = make_user("member@example.org", team=team)
        split = catalog.get_split("gqa", "dev")
        for seed, share in enumerate((0.4, 0.6, 0.8, 0.9)):
            data = GQA.synthetic_predictions(dev, share, seed=seed)
            submissions.store_scored(split, team, data, model_name=f"m{seed}", publish=True)
        board, _ = listings.leaderboard("gqa", "dev")
        assert len(board.entries) == 4 and board.entries[0].model_name == "m3"
        entry = board.entries[0]
        for metric in ("accuracy", "binary", "open"):
            low, high = entry.intervals["all"][metric]
            assert low is not None and low <= entry.scores["all"][metric] <= high
        for metric in ("consistency", "distribution"):
            assert math.isfinite(entry.scores["all"][metric]) and entry.intervals["all"][metric] == (None, None)
        assert entry.rank == 1 and board.entries[-1].rank > 1

        catalog.set_policy("gqa", "test", per_day=None, per_month=None)
        gold = GQA.read_gold(test)
        first = submissions.submit(
            member, None, "gqa", "test", Upload(GQA.synthetic_predictions(test, 0.7, seed=1), model_name="M")
        )
        released = first.scores["all"]["accuracy"]
        hidden = catalog.get_split("gqa", "test")
        part = next(s.indices for s in hidden.subsets if s.name == "queried")
        balanced = gold.labels["balanced"][part]
        right = (GQA.parse(GQA.synthetic_predictions(test, 0.7, seed=1), gold) == gold.labels["answer"])[part]
        # The Ladder counts the part's balanced questions, written to the decimals their number carries (the
        # seal is drawn at random: some draws leave 100 or fewer, a whole percentage point apart).
        counted = int(balanced.sum())
        assert released == ladder_rule.percentage_of_count(int(right[balanced].sum()), counted)
        assert released.decimals == ladder_rule.count_decimals(counted)
        # A file that changes only unbalanced predictions is a probe of nothing: distance 0 on the units.
        stored = db.session.get(Submission, first.submission.id).predictions
        changed = GQA.decode(stored, gold.n)
        changed[~gold.labels["balanced"]] = 0
        assert GQA.split_probe_distances(gold, changed, [stored]).tolist() == [0.0]
        assert integrity.probe_summary(GQA, gold, changed).units == gold.labels["balanced"].sum()

        report = label_audits.audit_labels("gqa", "dev", 5)
        assert report.submissions == 4 and list(report.gold_accuracy) == ["answer"] and len(report.rows) == 5
        assert np.isfinite(report.gold_accuracy["answer"])
