"""Probe summaries (issue 15): the probe check reads only the earlier files its summaries cannot rule out, and
its flags are exactly those of comparing a new submission with every earlier one on the split, for every task
shape (NLVR2 examples, NLVR images, VCR questions), near-copies just under and over the threshold, a team's own
and other teams', submissions stored before the summaries (migration 0010), and after a label correction."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import delete, select

from app import synthetic
from app.db import db
from app.evaluation import get_task, probes
from app.evaluation.tasks.vcr.formats import VCR_COLUMNS
from app.models import ProbeFlag, ProbeSummary, Submission, Team
from app.services import catalog
from app.services.blind_test import integrity
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.maintenance import label_audits
from tests.support.users import make_user

pytestmark = pytest.mark.postgres(
    reason="probe summaries are kept with per-dialect upserts and appends (services/blind_test/integrity.py)"
)

# (task, number of examples): 400 examples, 360 images, 300 questions; 1% is 4, 3.6 and 3 units. The dialect's
# upserts and appends are the same statements whatever the task's shape: one world proves them on PostgreSQL,
# and SQLite runs all three (the shapes are the pure code's concern).
WORLDS = [
    ("nlvr2", 400),
    pytest.param("nlvr-images", 60, marks=pytest.mark.one_backend),
    pytest.param("vcr", 300, marks=pytest.mark.one_backend),
]


def _gold(task_name: str, n: int) -> bytes:
    if task_name == "nlvr2":
        return synthetic.nlvr2_gold(n, split="test", seed=5)
    if task_name == "nlvr-images":
        return synthetic.nlvr_gold(n, seed=5)
    return synthetic.vcr_gold(n, seed=5)


def _file(task_name: str, gold, predictions: np.ndarray) -> bytes:
    """The upload that parses to `predictions` (aligned to the gold order)."""
    ids = gold.ids.tolist()
    if task_name == "nlvr2":
        lines = [f"{i},{bool(p)}" for i, p in zip(ids, predictions.tolist(), strict=True)]
    elif task_name == "nlvr-images":
        lines = [
            f"{i}-{k},{str(bool(p)).lower()}"
            for i, row in zip(ids, predictions.tolist(), strict=True)
            for k, p in enumerate(row)
        ]
    else:
        lines = [",".join(VCR_COLUMNS)]
        for i, row in zip(ids, predictions.tolist(), strict=True):
            scores = np.full((5, 4), 0.1)
            scores[np.arange(5), row] = 0.7  # the answer's argmax, then the rationale's given each answer
            lines.append(",".join([str(i), *(f"{v:.1f}" for v in scores.ravel())]))
    return ("\n".join(lines) + "\n").encode()


def _base(task_name: str, gold, rng, accuracy: float) -> np.ndarray:
    if task_name == "vcr":
        predictions = rng.integers(0, 4, size=(gold.n, 5)).astype(np.int8)
        right = rng.random(gold.n) < accuracy
        answer, rationale = gold.labels[:, 0].astype(np.intp), gold.labels[:, 1]
        predictions[right, 0] = answer[right]
        predictions[right, 1 + answer[right]] = rationale[right]
        return predictions
    labels = gold.labels if task_name == "nlvr2" else np.repeat(gold.labels[:, None], 6, axis=1)
    return np.where(rng.random(labels.shape) < accuracy, labels, ~labels)


def _near(task_name: str, predictions: np.ndarray, rng, h: int) -> np.ndarray:
    """A copy that differs on exactly h units (a VCR question counts once, however many choices change)."""
    near = predictions.copy()
    if task_name == "vcr":
        for q in rng.choice(near.shape[0], size=h, replace=False):
            columns = rng.choice(5, size=int(rng.integers(1, 4)), replace=False)
            near[q, columns] = (near[q, columns] + 1) % 4
        return near
    flat = near.reshape(-1)
    units = rng.choice(flat.size, size=h, replace=False)
    flat[units] = ~flat[units]
    return near


def _plain_flags(split_id: int, task, new: np.ndarray, team_id: int, before_id: int, threshold: float):
    """What comparing with every earlier scored submission on the split flags: (earlier id, distance, other
    team), the team's own nearest first, ties to the latest."""
    rows = db.session.execute(
        select(Submission.id, Submission.team_id, Submission.predictions)
        .where(Submission.split_id == split_id, Submission.status == "scored", Submission.id < before_id)
        .order_by(Submission.id)
    ).all()
    if not rows:
        return []
    found = integrity.distances(task, new, np.stack([task.decode(blob, new.shape[0]) for _, _, blob in rows]))
    flags = []
    for own in (True, False):
        picked = [i for i, row in enumerate(rows) if (row.team_id == team_id) == own]
        if not picked:
            continue
        best = min(found[i] for i in picked)
        i = max(i for i in picked if found[i] == best)
        if best < threshold:
            flags.append((rows[i].id, float(best), None if own else rows[i].team_id))
    return flags


def _flags_of(submission_id: int):
    return [
        (f.earlier_submission_id, f.distance, f.other_team_id)
        for f in db.session.scalars(
            select(ProbeFlag).where(ProbeFlag.submission_id == submission_id).order_by(ProbeFlag.id)
        )
    ]


def _stored_records(split_id: int, units: int) -> dict[int, tuple[int, tuple[int, ...]]]:
    """id -> (count of correct units, block counts), from probe_summaries."""
    found = {}
    for row in db.session.scalars(select(ProbeSummary).where(ProbeSummary.split_id == split_id)):
        for record in probes.decode_records(row.records, units):
            assert int(record["id"]) not in found
            found[int(record["id"])] = (row.correct, tuple(record["blocks"].tolist()))
    return found


def _expected_records(split, task, gold) -> dict[int, tuple[int, tuple[int, ...]]]:
    expected = {}
    for submission_id, blob in db.session.execute(
        select(Submission.id, Submission.predictions).where(
            Submission.split_id == split.id, Submission.status == "scored"
        )
    ):
        correct = probes.unit_correct(task, gold, task.decode(blob, gold.n)[None])
        expected[submission_id] = (int(correct.sum()), tuple(probes.block_counts(correct)[0].tolist()))
    return expected


def _forget_summaries(split) -> None:
    """The state migration 0010 leaves: the split's submissions so far without summaries, and it says so."""
    db.session.execute(delete(ProbeSummary).where(ProbeSummary.split_id == split.id))
    split.probe_unsummarised = True
    db.session.commit()


def _corrected(task_name: str, gold_bytes: bytes, rows: range) -> bytes:
    """The gold file with the labels of `rows` changed."""
    lines = gold_bytes.decode().splitlines()
    for i in rows:
        row = json.loads(lines[i])
        if task_name == "vcr":
            row["answer_label"] = (int(row["answer_label"]) + 1) % 4
        else:
            label = row["label"]
            flipped = "false" if label.lower() == "true" else "true"
            row["label"] = flipped.capitalize() if label[0].isupper() else flipped
        lines[i] = json.dumps(row)
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("task_name, n", WORLDS)
def test_flags_equal_the_plain_comparison_on_a_random_world(ctx, app, monkeypatch, task_name, n):
    task, rng = get_task(task_name), np.random.default_rng(11)
    catalog.add_benchmark("bench", task_name, "Bench")
    gold_bytes = _gold(task_name, n)
    catalog.add_split("bench", "test", gold_bytes, hidden=True)
    catalog.set_policy("bench", "test", per_day=None, per_month=None, total=None)
    teams = [Team(name=name) for name in ("Lab", "Rivals", "Third")]
    db.session.add_all(teams)
    db.session.commit()
    users = [make_user(f"user{i}@example.org", team=team) for i, team in enumerate(teams)]
    team_ids = [team.id for team in teams]
    admin = make_user("admin@example.org", admin=True)
    split = catalog.get_split("bench", "test")
    gold = catalog.gold_for(split)
    units = probes.unit_correct(task, gold, _base(task_name, gold, rng, 0.7)[None]).shape[1]
    threshold = app.config["PROBE_DISTANCE"]
    t = probes.threshold_units(threshold, units)
    assert t == {"nlvr2": 3, "nlvr-images": 3, "vcr": 2}[task_name]
    compared: list[int] = []
    real = integrity._block_distances
    monkeypatch.setattr(integrity, "_block_distances", lambda *args: compared.append(len(args[3])) or real(*args))

    files: list[np.ndarray] = []
    flagged = 0
    for step in range(60):
        if step == 20:  # the state after migration 0010: every submission so far stored without a summary
            _forget_summaries(split)
        if step == 40:
            label_audits.correct_labels(admin, "bench", "test", _corrected(task_name, gold_bytes, range(3)), "fix")
            gold = catalog.gold_for(catalog.get_split("bench", "test"))
            assert catalog.get_split("bench", "test").probe_unsummarised is False
        if not files or rng.random() < 0.3:  # same accuracies: the windows of counts overlap
            predictions = _base(task_name, gold, rng, float(rng.choice([0.7, 0.71, 0.72])))
        else:  # a near-copy of an earlier file, by its team or another, just under, at or over the threshold
            source = files[int(rng.integers(len(files)))]
            predictions = _near(task_name, source, rng, int(rng.choice([0, 1, t - 1, t, t + 1, t + 2, 3 * t])))
        who = int(rng.integers(len(users)))
        before = len(compared)
        result = submissions.submit(
            users[who], None, "bench", "test", Upload(data=_file(task_name, gold, predictions), model_name="M")
        )
        files.append(predictions)
        expected = _plain_flags(split.id, task, predictions, team_ids[who], result.id, threshold)
        assert _flags_of(result.id) == expected, step
        flagged += len(expected)
        if step >= 20:  # a window's unsummarised files are read; summarised ones only when near
            assert sum(compared[before:]) <= len(files)
    assert flagged >= 10  # the world has near-copies of both kinds
    assert _stored_records(split.id, units) == _expected_records(split, task, gold)


def test_far_files_of_the_same_accuracy_are_not_read(ctx, monkeypatch):
    """Twenty files at 90% accuracy (all within one another's window of counts) and far apart: none is read
    for the next; a near-copy reads the one it copies."""
    from tests.support.blind_test_world import build_blind_test_world, submit

    world = build_blind_test_world()
    compared: list[int] = []
    real = integrity._block_distances
    monkeypatch.setattr(integrity, "_block_distances", lambda *args: compared.append(len(args[3])) or real(*args))
    for start in range(0, 400, 20):
        submit(world, range(start, start + 40) if start + 40 <= 400 else [*range(start, 400), *range(start - 360)])
    assert compared == []
    near = submit(world, [*range(100, 140), 0, 1]).submission  # 2 of 400 from the sixth
    assert compared == [1]
    assert _flags_of(near.id)[0][1] == pytest.approx(2 / 400)


def test_submissions_stored_before_the_summaries_are_compared_until_summarised(ctx, runner, monkeypatch):
    from tests.support.blind_test_world import build_blind_test_world, submit

    world = build_blind_test_world()
    old = submit(world, range(50)).submission
    far = submit(world, range(200, 250)).submission  # the same accuracy, 100 of 400 away
    _forget_summaries(catalog.get_split("nlvr2", "test-u"))
    compared: list[int] = []
    real = integrity._block_distances
    monkeypatch.setattr(integrity, "_block_distances", lambda *args: compared.append(len(args[3])) or real(*args))
    near = submit(world, [*range(50), 300], who="rival").submission
    assert _flags_of(near.id) == [(old.id, pytest.approx(1 / 400), world["lab"].id)]
    assert compared == [2]  # both unsummarised ones in the window of scores are read
    # The new one has its summary; the old ones are read by score until summarised.
    split = catalog.get_split("nlvr2", "test-u")
    assert set(_stored_records(split.id, 400)) == {near.id} and split.probe_unsummarised

    done = runner.invoke(args=["labels", "summarise", "nlvr2", "test-u"])
    assert done.exit_code == 0 and "3 submissions summarised" in done.output
    db.session.expire_all()
    assert set(_stored_records(split.id, 400)) == {old.id, far.id, near.id} and not split.probe_unsummarised
    again = submit(world, [*range(50), 300, 301], who="rival").submission
    assert _flags_of(again.id) == [(near.id, pytest.approx(1 / 400), None), (old.id, 2 / 400, world["lab"].id)]
    assert compared[1:] == [2]  # the near ones alone
    refused = runner.invoke(args=["labels", "summarise", "nlvr2", "dev"])
    assert refused.exit_code == 2 and "not hidden" in refused.output
