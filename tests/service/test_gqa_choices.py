"""GQA's choices file through the app: `flask splits add ... --choices` checks it against the gold file (a bad one
exits 2 naming its line and stores nothing), stores it compact beside the gold file (owner-only), and the split then
reports validity and plausibility equal to the official eval.py's; a split without one shows neither; a label
correction keeps them (and is refused where the choices lack a question it makes balanced); backup and restore
carry the choices."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app import create_app
from app.db import db
from app.evaluation import get_task
from app.models import Split
from app.services import catalog
from app.services.boards import leaderboards, listings
from app.services.catalog import label_files
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.people import teams
from app.synthetic import gqa_choices
from tests.conftest import clear_process_caches, make_config
from tests.differential.reference import official_scores
from tests.support.files import write
from tests.support.users import make_user

GQA = get_task("gqa")
SIZE = 300
TOLERANCE = 1e-9


def _benchmark(runner, slug: str = "gqa", task: str = "gqa") -> None:
    added = runner.invoke(args=["benchmarks", "add", slug, "--task", task, "--name", slug.upper()])
    assert added.exit_code == 0, added.output


def _add(runner, tmp_path: Path, slug: str, gold: bytes, choices: bytes | None, *flags: str):
    args = ["splits", "add", "gqa", slug, "--labels", write(tmp_path, f"{slug}.json", gold), *flags]
    if choices is not None:
        args += ["--choices", write(tmp_path, f"{slug}-choices.json", choices)]
    return runner.invoke(args=args)


def _labels_files(app) -> list[Path]:
    return sorted(path for path in Path(app.config["HIDDEN_LABELS_DIR"]).rglob("*") if path.is_file())


def test_a_split_with_choices_reports_validity_and_plausibility_as_the_official(app, runner, tmp_path):
    _benchmark(runner)
    gold = GQA.synthetic_gold(SIZE, seed=4)
    choices = gqa_choices(gold, seed=4)
    result = _add(runner, tmp_path, "dev", gold, choices)
    assert result.exit_code == 0, result.output
    assert "with a choices file (validity, plausibility)" in result.output
    assert _add(runner, tmp_path, "plain", GQA.synthetic_gold(SIZE, seed=5), None).exit_code == 0
    for seed, accuracy in enumerate((0.5, 0.8)):
        data = GQA.synthetic_predictions(gold, accuracy, seed=seed)
        printed = runner.invoke(args=["evaluate", "gqa", "dev", write(tmp_path, f"p{seed}.json", data)])
        assert printed.exit_code == 0, printed.output
        ours = json.loads(printed.output)["all"]
        theirs = official_scores("gqa", gold, data, choices=choices)["all"]
        assert set(ours) == set(theirs)
        for metric in ("validity", "plausibility"):
            assert abs(ours[metric] - theirs[metric]) <= TOLERANCE, metric
        assert 0 < ours["validity"] < 100 and 0 < ours["plausibility"] < 100
    with app.app_context():
        split = catalog.get_split("gqa", "dev")
        stored = label_files.labels_dir() / split.choices_path
        assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600
        assert stored.stat().st_size < len(choices)  # the balanced questions' lists alone, deduplicated
        team = teams.create_team("Lab")
        for seed, share in enumerate((0.4, 0.7, 0.9)):
            submissions.store_scored(
                split, team, GQA.synthetic_predictions(gold, share, seed=seed), model_name=f"m{seed}", publish=True
            )
        board, _ = listings.leaderboard("gqa", "dev")
        labels = [column.label for column in leaderboards.available_columns(split) if column.subset == "all"]
        assert labels[4:6] == ["Validity", "Plausibility"]
        for entry in board.entries:  # counted per balanced question: intervals like accuracy's
            for metric in ("validity", "plausibility"):
                low, high = entry.intervals["all"][metric]
                assert low is not None and low <= entry.scores["all"][metric] <= high
        plain = catalog.get_split("gqa", "plain")
        assert plain.choices_path is None
        assert not {"validity", "plausibility"} & {c.metric for c in leaderboards.available_columns(plain)}
        assert "validity" not in catalog.split_metrics(plain) and "validity" in catalog.split_metrics(split)
    page = app.test_client().get("/leaderboards/gqa/dev")
    assert page.status_code == 200 and b"Validity" in page.data and b"Plausibility" in page.data
    page = app.test_client().get("/leaderboards/gqa/plain")
    assert page.status_code == 200 and b"Validity" not in page.data


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda c: {k: v for i, (k, v) in enumerate(c.items()) if i != 0}, "no entry for balanced question"),
        (lambda c: {**c, next(iter(c)): {"valid": "yes", "plausible": []}}, "line 2: question"),
        (lambda c: list(c.values()), "one JSON object keyed by question id"),
    ],
    ids=["missing", "a string for a list", "an array"],
)
def test_a_bad_choices_file_exits_2_naming_it_and_stores_nothing(app, runner, tmp_path, change, expected):
    _benchmark(runner)
    gold = GQA.synthetic_gold(SIZE, seed=4)
    questions = json.loads(gold)
    balanced_first = {qid: questions[qid] for qid in questions if questions[qid]["isBalanced"]}
    reordered = json.dumps({**balanced_first, **questions}).encode()  # the first entry is a balanced question
    choices = json.loads(gqa_choices(reordered, seed=1))
    bad = json.dumps(change(choices), indent=1).encode()  # an entry a line or so: the problem's line is named
    result = _add(runner, tmp_path, "dev", reordered, bad)
    assert result.exit_code == 2 and "invalid choices file" in result.output and expected in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count(Split.id))) == 0
    assert _labels_files(app) == []


def test_only_a_family_with_choices_takes_a_file(app, runner, tmp_path):
    _benchmark(runner, "nlvr2", "nlvr2")
    gold = get_task("nlvr2").synthetic_gold(40, seed=1)
    result = runner.invoke(
        args=[
            "splits",
            "add",
            "nlvr2",
            "dev",
            "--labels",
            write(tmp_path, "dev.jsonl", gold),
            "--choices",
            write(tmp_path, "c.json", b"{}"),
        ]
    )
    assert result.exit_code == 2 and "takes no choices file" in result.output


def test_a_label_correction_keeps_the_choices_or_is_refused_where_they_miss_a_question(app, runner, tmp_path):
    _benchmark(runner)
    gold = GQA.synthetic_gold(SIZE, seed=4)
    questions = json.loads(gold)
    balanced_only = json.loads(gqa_choices(gold, seed=4))
    balanced_only = {qid: entry for qid, entry in balanced_only.items() if questions[qid]["isBalanced"]}
    choices = json.dumps(balanced_only).encode()
    assert _add(runner, tmp_path, "dev", gold, choices).exit_code == 0
    balanced = next(qid for qid, q in questions.items() if q["isBalanced"] and q["answer"] not in ("yes", "no"))
    corrected = {**questions, balanced: {**questions[balanced], "answer": "zebra"}}
    path = write(tmp_path, "corrected.json", json.dumps(corrected).encode())
    result = runner.invoke(args=["labels", "correct", "gqa", "dev", "--labels", path, "--note", "one answer fixed"])
    assert result.exit_code == 0, result.output
    data = GQA.synthetic_predictions(gold, 0.7, seed=3)
    printed = runner.invoke(args=["evaluate", "gqa", "dev", write(tmp_path, "p.json", data)])
    ours = json.loads(printed.output)["all"]
    theirs = official_scores("gqa", json.dumps(corrected).encode(), data, choices=choices)["all"]
    for metric in ("accuracy", "validity", "plausibility"):
        assert abs(ours[metric] - theirs[metric]) <= TOLERANCE, metric

    unbalanced = next(qid for qid, q in questions.items() if not q["isBalanced"])
    made_balanced = {**corrected, unbalanced: {**corrected[unbalanced], "isBalanced": True}}
    path = write(tmp_path, "made-balanced.json", json.dumps(made_balanced).encode())
    refused = runner.invoke(args=["labels", "correct", "gqa", "dev", "--labels", path, "--note", "balanced one"])
    assert refused.exit_code == 2 and "does not fit the split's choices file" in refused.output
    assert repr(unbalanced) in refused.output


@pytest.mark.postgres(reason="backup and restore read and write per dialect; the choices columns are migration 0018's")
def test_backup_and_restore_carry_the_choices(app, runner, tmp_path, database_backend):
    _benchmark(runner)
    gold = GQA.synthetic_gold(SIZE, seed=4)
    choices = gqa_choices(gold, seed=4)
    assert _add(runner, tmp_path, "dev", gold, choices, "--hidden").exit_code == 0
    data = write(tmp_path, "p.json", GQA.synthetic_predictions(gold, 0.7, seed=3))
    before = json.loads(runner.invoke(args=["evaluate", "gqa", "dev", data]).output)
    archive = tmp_path / "backup.tar.gz"
    result = runner.invoke(args=["backup", str(archive)])
    assert result.exit_code == 0 and "2 gold files" in result.output, result.output  # the gold and the choices

    folder = tmp_path / "restored"
    folder.mkdir()
    backend = database_backend
    url = backend.new_database(folder, name="restored")
    restored = create_app(make_config(folder, url))
    try:
        result = restored.test_cli_runner().invoke(args=["restore", str(archive)])
        assert result.exit_code == 0, result.output
        with restored.app_context():
            split = catalog.get_split("gqa", "dev")
            assert split.choices_path is not None
            stored = Path(restored.config["HIDDEN_LABELS_DIR"]) / split.choices_path
            assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        after = json.loads(restored.test_cli_runner().invoke(args=["evaluate", "gqa", "dev", data]).output)
        assert after == before and "validity" in after["all"]
    finally:
        with restored.app_context():
            db.engine.dispose()
        backend.drop(url)


def test_the_service_attaches_the_stored_choices_to_the_gold_set(app, runner, tmp_path, monkeypatch):
    """Kept from the import, choices attached, without parsing the file again; and read from the stored files
    (a process that did not import it: the folder of the parsed gold, and the choices) the same."""
    monkeypatch.setattr(label_files, "SHARE_FROM", 0)  # a folder for this small split too, as for a large one
    _benchmark(runner)
    gold = GQA.synthetic_gold(SIZE, seed=4)
    choices = gqa_choices(gold, seed=4)
    parsed = []
    read_gold = type(GQA).read_gold
    monkeypatch.setattr(type(GQA), "read_gold", lambda task, data: parsed.append(len(data)) or read_gold(task, data))
    with app.app_context():
        split = catalog.add_split("gqa", "dev", gold, choices=choices)
        assert split.choices_sha256 is not None and len(parsed) == 1  # the import's own check
        loaded = label_files.load_gold(split)
        assert getattr(loaded, "choices", None) is not None and len(parsed) == 1  # the first upload's: kept
        clear_process_caches()
        stored = label_files.load_gold(split)
        # mapped from the folder the import wrote, choices attached: not parsed again
        assert getattr(stored, "choices", None) is not None and len(parsed) == 1
        assert stored.n == loaded.n


@pytest.mark.parametrize("feedback", ["full", "ladder"])
def test_a_hidden_split_with_choices_takes_submissions_under_its_feedback(app, runner, tmp_path, feedback):
    """Validity and plausibility are counts of balanced questions like accuracy: under `full` feedback a team gets
    them at the split's count resolution; under the Ladder only the primary metric, as before."""
    _benchmark(runner)
    gold = GQA.synthetic_gold(SIZE, seed=6)
    assert _add(runner, tmp_path, "test", gold, gqa_choices(gold, seed=6), "--hidden").exit_code == 0
    policy = runner.invoke(args=["splits", "policy", "gqa", "test", "--feedback", feedback, "--per-day", "none"])
    assert policy.exit_code == 0, policy.output
    with app.app_context():
        team = teams.create_team("Lab")
        member = make_user("member@example.org", team=team)
        done = submissions.submit(
            member, None, "gqa", "test", Upload(GQA.synthetic_predictions(gold, 0.7, seed=1), model_name="M")
        )
        released = done.scores.get("all", {})
        assert "accuracy" in released
        assert ({"validity", "plausibility"} <= set(released)) == (feedback == "full")


def test_the_refusal_names_the_choices_files_the_families_take(app, runner, tmp_path, monkeypatch):
    """Which families take a choices file is theirs to say (TakesChoices.choices_file), not the service's."""
    _benchmark(runner, "vcr", "vcr")
    args = ["splits", "add", "vcr", "dev", "--labels", write(tmp_path, "dev.jsonl", get_task("vcr").synthetic_gold(8))]
    args += ["--choices", write(tmp_path, "c.json", b"{}")]
    result = runner.invoke(args=args)
    assert result.exit_code == 2
    assert "a vcr split takes no choices file (only GQA's official {tier}_choices.json)" in result.output
    monkeypatch.setattr(type(GQA), "choices_file", "GQA's choices, renamed")
    assert "(only GQA's choices, renamed)" in runner.invoke(args=args).output
