"""Label audits and corrected gold files: the acceptance scenario of issue 14 (20 flipped labels among a
split's gold, 30 stored entries of 75-95% accuracy against the true labels) through the command line, and
the refusals."""

from __future__ import annotations

import json
import os
import stat
import tarfile

import numpy as np
import pytest
from flask import render_template
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.evaluation import get_task
from app.models import AuditEvent, ChangelogEntry, GoldVersion, Split, Submission
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots
from app.services.catalog import label_files
from app.services.errors import Conflict, InvalidInput
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.maintenance import backups, label_audits
from app.services.people import accounts, teams
from app.services.storage import checksums
from tests.support.files import write

pytestmark = pytest.mark.postgres(
    reason=("rescoring and the gold versions: bulk updates and the boards' changelog under each dialect's transactions")
)

N = 1000
FLIPPED = 20
ENTRIES = 30


def flip(gold: bytes, indices) -> bytes:
    rows = [json.loads(line) for line in gold.decode().splitlines()]
    for i in indices:
        rows[i]["label"] = "False" if rows[i]["label"] == "True" else "True"
    return ("\n".join(json.dumps(row) for row in rows) + "\n").encode()


@pytest.fixture
def scenario(ctx, tmp_path):
    true_gold = synthetic.nlvr2_gold(N, split="test", seed=11)
    flipped = sorted(np.random.default_rng(3).choice(N, FLIPPED, replace=False).tolist())
    wrong_gold = flip(true_gold, flipped)
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    catalog.add_split("nlvr2", "test-u", wrong_gold, hidden=True, name="Test-U")
    accuracies = np.random.default_rng(4).uniform(0.75, 0.95, ENTRIES)
    task = get_task("nlvr2")
    truth = task.read_gold(true_gold)
    expected = {}
    for i, accuracy in enumerate(accuracies):
        # One person a team: an account's teams share its quotas (issue 23), and these are 30 entrants.
        user = accounts.create_user(f"lead{i}@example.org", "a long password")
        team = teams.create_team(f"Team {i}", user)
        data = synthetic.predictions("nlvr2", true_gold, float(accuracy), seed=100 + i, split="test")
        result = submissions.submit(user, team.id, "nlvr2", "test-u", Upload(data=data, model_name=f"model {i}"))
        if i % 3 == 0:
            submissions.publish(user, result.submission.id, description="an entry")
        expected[result.submission.id] = task.score(truth, task.parse(data, truth), task.derive_subsets(truth))
    return {
        "true": true_gold,
        "wrong": wrong_gold,
        "flipped": flipped,
        "expected": expected,
        "true_path": write(tmp_path, "true.json", true_gold),
        "ids": truth.ids,
    }


@pytest.mark.one_backend
def test_the_audit_finds_the_flipped_labels(scenario, runner):
    """On SQLite alone: the rescoring's bulk updates run on both dialects in
    test_correcting_with_the_true_file_restores_every_score; the audit itself reads stored predictions alike."""
    result = runner.invoke(args=["labels", "audit", "nlvr2", "test-u", "--top", "40"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"nlvr2/test-u: {ENTRIES} distinct submissions voted")
    rows = [line.split("\t") for line in lines[2:]]
    assert len(rows) == 40 and [int(row[0]) for row in rows] == list(range(1, 41))
    found = {row[1] for row in rows} & {str(scenario["ids"][i]) for i in scenario["flipped"]}
    assert len(found) >= 15, f"only {len(found)} of {FLIPPED} flipped labels in the top 40"
    # The most suspect rows name the label the submissions point to, which is the true one.
    top = rows[0]
    assert top[2] == "label" and {top[3], top[4]} == {"true", "false"} and float(top[5]) > 0.5


def test_correcting_with_the_true_file_restores_every_score(scenario, runner, app, tmp_path):
    split = catalog.get_split("nlvr2", "test-u")
    version_before, old_sha = split.board_version, split.gold_sha256
    ranks_before = board_snapshots.published_ranks(split)
    result = runner.invoke(
        args=[
            "labels",
            "correct",
            "nlvr2",
            "test-u",
            "--labels",
            scenario["true_path"],
            "--note",
            "20 sentences relabelled after the audit",
        ]
    )
    assert result.exit_code == 0, result.output
    assert f"{FLIPPED} labels changed, {ENTRIES} submissions rescored" in result.output
    db.session.rollback()
    split = db.session.get(Split, split.id)
    # Every stored entry has the scores it would have had against the true labels, on every subset.
    for submission_id, expected in scenario["expected"].items():
        stored = visibility.scores_of(db.session.get(Submission, submission_id))
        assert stored.keys() == expected.keys()
        for subset, metrics in expected.items():
            assert stored[subset] == pytest.approx(metrics), (submission_id, subset)
    # A new version: the old file is kept, both checksums recorded, both files owner-only.
    version = db.session.scalar(select(GoldVersion))
    assert (version.version, version.previous_sha256, version.gold_sha256) == (
        2,
        old_sha,
        checksums.sha256(scenario["true"]),
    )
    assert version.labels_changed == FLIPPED and version.note == "20 sentences relabelled after the audit"
    # Bumped by the correction, and again by its rescoring job when the stored scores are replaced.
    assert split.gold_sha256 == version.gold_sha256 and split.board_version == version_before + 2
    for path in (version.previous_path, version.gold_path):
        full = label_files.labels_dir() / path
        assert full.exists() and stat.S_IMODE(os.stat(full).st_mode) == 0o600
    assert label_files.load_gold(split).labels.tolist() == get_task("nlvr2").read_gold(scenario["true"]).labels.tolist()
    # The changelog and the audit log say so.
    lines = board_snapshots.changelog(split)
    assert [line.message for line in lines] == [f"{FLIPPED} labels corrected"]
    with app.test_request_context("/"):
        html = render_template("public/_changelog.html", changelog=lines)
        assert render_template("public/_changelog.html", changelog=[]).strip() == ""
    assert f"{lines[0].date:%Y-%m-%d}</time>: {FLIPPED} labels corrected" in html
    board_page = app.test_client().get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    assert f"{lines[0].date:%Y-%m-%d}</time>: {FLIPPED} labels corrected" in board_page
    event = db.session.scalar(select(AuditEvent).where(AuditEvent.action == "labels.correct"))
    details = json.loads(event.details)
    ranks_after = board_snapshots.published_ranks(split)
    moved = sum(1 for sid, rank in ranks_after.items() if ranks_before[sid] != rank)
    assert details["labels_changed"] == FLIPPED and details["ranks_moved"] == moved
    assert details["old_sha256"] == old_sha and details["new_sha256"] == version.gold_sha256
    assert details["via"] == "cli" and event.target == "split nlvr2/test-u"
    # A backup keeps both versions of the gold file.
    archive = tmp_path / "backup.tar.gz"
    assert backups.backup(archive).gold_files == 2
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {f"hidden_labels/{version.previous_path}", f"hidden_labels/{version.gold_path}"} <= names
    # The labels are the true ones now: the audit no longer finds a consistently contradicted label.
    report = label_audits.audit_labels("nlvr2", "test-u", 5)
    assert all(row.probability < 0.5 for row in report.rows)


@pytest.mark.one_backend
def test_refusals_exit_2_with_the_reason(scenario, runner, tmp_path):
    """On SQLite alone: the rescoring's bulk updates run on both dialects in
    test_correcting_with_the_true_file_restores_every_score; the audit itself reads stored predictions alike."""

    def run(*args):
        return runner.invoke(args=["labels", *args])

    same = write(tmp_path, "same.json", scenario["wrong"])
    result = run("correct", "nlvr2", "test-u", "--labels", same, "--note", "nothing")
    assert result.exit_code == 2 and "changes no label" in result.output
    rows = scenario["true"].decode().splitlines()
    reordered = write(tmp_path, "reordered.json", ("\n".join([rows[1], rows[0], *rows[2:]]) + "\n").encode())
    result = run("correct", "nlvr2", "test-u", "--labels", reordered, "--note", "x")
    assert result.exit_code == 2 and "line 1: identifier" in result.output
    shorter = write(tmp_path, "short.json", ("\n".join(rows[:-1]) + "\n").encode())
    result = run("correct", "nlvr2", "test-u", "--labels", shorter, "--note", "x")
    assert result.exit_code == 2 and f"{N - 1} examples" in result.output
    broken = write(tmp_path, "broken.json", b'{"identifier": "test-1-0-0"\n')
    assert run("correct", "nlvr2", "test-u", "--labels", broken, "--note", "x").exit_code == 2
    result = run("correct", "nlvr2", "test-u", "--labels", scenario["true_path"], "--note", "  ")
    assert result.exit_code == 2 and "note" in result.output
    result = run("correct", "nlvr2", "nope", "--labels", scenario["true_path"], "--note", "x")
    assert result.exit_code == 2 and "nope" in result.output
    for top in ("0", "1001", "many"):
        result = run("audit", "nlvr2", "test-u", "--top", top)
        assert result.exit_code == 2 and "top must be a whole number" in result.output
    # Nothing was installed by any of these.
    assert db.session.scalar(select(GoldVersion)) is None and db.session.scalar(select(ChangelogEntry)) is None
    assert len(list(label_files.labels_dir().rglob("*.jsonl"))) == 1


def test_an_audit_needs_submissions(ctx):
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    catalog.add_split("nlvr2", "dev", synthetic.nlvr2_gold(80, seed=2))
    with pytest.raises(Conflict, match="no scored submissions"):
        label_audits.audit_labels("nlvr2", "dev")
    with pytest.raises(InvalidInput):
        label_audits.audit_labels("nlvr2", "dev", "-3")


@pytest.mark.one_backend
def test_vcr_audits_answers_and_rationales(ctx):
    """On SQLite alone: the rescoring's bulk updates run on both dialects in
    test_correcting_with_the_true_file_restores_every_score; the audit itself reads stored predictions alike."""
    gold = synthetic.vcr_gold(300, seed=5)
    catalog.add_benchmark("vcr", "vcr", "VCR")
    catalog.add_split("vcr", "val", gold)
    user = accounts.create_user("v@example.org", "a long password")
    teams.create_team("V", user)
    for i in range(8):
        data = synthetic.predictions("vcr", gold, 0.9, seed=i, rationale_accuracy=0.9)
        submissions.submit(user, None, "vcr", "val", Upload(data=data, model_name=f"m{i}"))
    report = label_audits.audit_labels("vcr", "val", 10)
    assert {row.field for row in report.rows} <= {"answer_label", "rationale_label"}
    assert set(report.gold_accuracy) == {"answer_label", "rationale_label"}
    assert all(row.gold in "0123" and row.likely in "0123" for row in report.rows)
