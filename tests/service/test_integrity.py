"""The Ladder and the release rounding through submissions.submit, and probe flags."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.evaluation import get_task
from app.evaluation import ladder as ladder_rule
from app.models import LadderState, ProbeFlag
from app.services import catalog
from app.services.blind_test import integrity, visibility
from app.services.boards import submission_pages
from app.services.errors import InvalidInput, NotFound
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from tests.support.blind_test_world import N, binary_file, build_blind_test_world, submit

pytestmark = pytest.mark.postgres(
    reason=(
        "probe summaries are appended with a statement written per dialect (services/blind_test/integrity.py "
        "APPEND) and read with a PostgreSQL branch"
    )
)


@pytest.fixture
def world(ctx):
    return build_blind_test_world()


# --- the Ladder ----------------------------------------------------------------------------------------


def test_ladder_releases_what_the_pure_ladder_says_and_nothing_else(world):
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    sequences = [range(0, 120), range(0, 100), range(0, 60), range(200, 260), range(300, 356), range(0, 58)]
    expected = ladder_rule.run([np.isin(np.arange(N), list(wrong)).astype(float) for wrong in sequences])
    results = [submit(world, wrong) for wrong in sequences]
    released = [r.scores for r in results]
    assert released == [{"all": {"accuracy": ladder_rule.released_accuracy(s.ladder, N)}} for s in expected]
    # By hand (n = 400, margin = s / 20): 120 wrong -> 70%. 100 wrong, all among the 120: l - best is -1 on
    # 20 examples, s = sqrt(19/399) = 0.218, 0.25 < 0.3 - 0.0109 -> 75%. 60 wrong among those: s = 0.300,
    # 0.15 < 0.25 - 0.015 -> 85%. 60 wrong elsewhere: s = sqrt(120/399) = 0.548, 0.15 < 0.15 - 0.027 fails.
    # 56 wrong elsewhere: s = sqrt((116 - 400 * 0.01**2) / 399) = 0.539, 0.14 < 0.15 - 0.027 fails. 58 wrong
    # among the best's 60: s = 0.0706, 0.145 < 0.15 - 0.0035 -> 85.5% (a paired test sees a nested gain).
    assert [r["all"]["accuracy"] for r in released] == [70.0, 75.0, 85.0, 85.0, 85.0, 85.5]
    state = db.session.scalar(select(LadderState))
    assert state.best_loss == 58 / N and state.best_submission_id == results[5].submission.id
    # What the API and pages read back is the same single figure.
    for result in results:
        assert visibility.released_scores(result.submission) == result.scores
        assert json.loads(result.submission.released) == result.scores
    # Every metric and subset stays stored for the maintainers.
    assert {"balanced", "unbalanced"} <= set(visibility.scores_of(results[0].submission))
    page = submission_pages.page_for(world["member"], results[3].submission.id)
    assert page.scores == {"all": {"accuracy": 85.0}}
    admin_page = submission_pages.page_for(world["admin"], results[3].submission.id)
    assert admin_page.scores["all"]["accuracy"] == pytest.approx(85.0)
    assert "consistency" in admin_page.scores["all"]


@pytest.mark.one_backend
def test_ladders_are_per_team(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    assert submit(world, range(40)).scores == {"all": {"accuracy": 90.0}}
    # The rival's first submission starts its own Ladder, however it compares with the Lab's best.
    assert submit(world, range(100), who="rival").scores == {"all": {"accuracy": 75.0}}
    assert submit(world, range(41)).scores == {"all": {"accuracy": 90.0}}
    assert len(db.session.scalars(select(LadderState)).all()) == 2


@pytest.mark.one_backend
def test_switching_policy_cuts_earlier_releases_down_to_the_ladders(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    full = submit(world, range(30))
    assert set(full.scores) >= {"all", "balanced"}
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    assert visibility.released_scores(full.submission) == {"all": {"accuracy": 92.5}}
    catalog.set_policy("nlvr2", "test-u", feedback="none")
    assert visibility.released_scores(full.submission) is None


@pytest.mark.one_backend
def test_revealed_split_shows_every_score(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    result = submit(world, range(30))
    split = catalog.get_split("nlvr2", "test-u")
    split.revealed_at = split.created_at
    db.session.commit()
    assert visibility.released_scores(result.submission) == visibility.scores_of(result.submission)


@pytest.mark.one_backend
def test_vcr_ladder_uses_q_ar_per_question(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.add_benchmark("vcr", "vcr", "VCR")
    gold = synthetic.vcr_gold(200, seed=2)
    catalog.add_split("vcr", "test", gold, hidden=True)
    catalog.set_policy("vcr", "test", feedback="ladder")
    data = synthetic.predictions("vcr", gold, 0.7, seed=3)
    result = submissions.submit(world["member"], None, "vcr", "test", Upload(data=data, model_name="V"))
    q_ar = visibility.scores_of(result.submission)["all"]["q_ar"]
    assert result.scores == {"all": {"q_ar": ladder_rule.round_percentage(q_ar, 200)}}


@pytest.mark.one_backend
def test_nlvr_images_ladder_counts_images(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.add_benchmark("nlvr-img", "nlvr-images", "NLVR images")
    gold = synthetic.nlvr_gold(40, seed=2)
    catalog.add_split("nlvr-img", "test", gold, hidden=True)
    catalog.set_policy("nlvr-img", "test", feedback="ladder")
    data = synthetic.predictions("nlvr-images", gold, 0.7, seed=3, split="test")
    result = submissions.submit(world["member"], None, "nlvr-img", "test", Upload(data=data, model_name="I"))
    accuracy = visibility.scores_of(result.submission)["all"]["accuracy"]
    # 240 images: one decimal tells every count apart.
    assert result.scores == {"all": {"accuracy": ladder_rule.round_percentage(accuracy, 240)}}


# --- full feedback: the count resolution ---------------------------------------------------------------


def _units(split, subset, metric):
    gold = catalog.gold_for(split)
    if metric == "consistency":
        return gold.n_groups
    return gold.n if subset == "all" else len(catalog.scoring_inputs(split).subsets[subset])


@pytest.mark.one_backend
def test_full_feedback_rounds_every_score_to_its_count(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    data = synthetic.predictions("nlvr2", world["gold"]["test-u"], 0.71, seed=9, split="test")
    result = submissions.submit(world["member"], None, "nlvr2", "test-u", Upload(data=data, model_name="M"))
    exact = visibility.scores_of(result.submission)
    split = catalog.get_split("nlvr2", "test-u")
    assert set(result.scores) == set(exact)
    for subset, metrics in result.scores.items():
        assert set(metrics) == set(exact[subset])
        for metric, value in metrics.items():
            units = _units(split, subset, metric)
            count = round(exact[subset][metric] * units / 100)
            if subset == "all":  # the whole split to its count resolution: the value is the count
                assert value == round(100 * count / units, ladder_rule.count_decimals(units)), (subset, metric)
                assert int(round(value * units / 100)) == count
            else:  # a subset in whole percents, which tell nothing of its size
                assert value == round(100 * count / units), (subset, metric)
    # 400 examples: whole tenths; the unrounded value would carry float digits.
    assert result.scores["all"]["accuracy"] * 10 == int(result.scores["all"]["accuracy"] * 10)
    assert visibility.released_scores(result.submission) == result.scores
    assert json.loads(result.submission.released) == result.scores


@pytest.mark.one_backend
def test_public_split_scores_are_released_unrounded(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    data = synthetic.predictions("nlvr2", world["gold"]["dev"], 0.71, seed=9)
    result = submissions.submit(world["member"], None, "nlvr2", "dev", Upload(data=data, model_name="M"))
    assert result.scores == visibility.scores_of(result.submission)


@pytest.mark.one_backend
def test_store_scored_runs_the_ladder_too(world):
    """Release arithmetic on rows any dialect stores alike (the probing tests below prove the appends): SQLite alone."""
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    split = catalog.get_split("nlvr2", "test-u")
    stored = submissions.store_scored(
        split, world["lab"], binary_file(world["gold"]["test-u"], range(20)), model_name="demo"
    )
    assert visibility.released_scores(stored) == {"all": {"accuracy": 95.0}}


# --- probing -------------------------------------------------------------------------------------------


def test_a_near_copy_on_a_hidden_split_is_flagged(world):
    first = submit(world, range(50)).submission
    far = submit(world, range(60, 120)).submission  # differs on 110 of 400 from the first
    near = submit(world, list(range(50)) + [300, 301, 302]).submission  # 3 of 400 from the first: 0.75%
    flags = db.session.scalars(select(ProbeFlag)).all()
    assert [(f.submission_id, f.earlier_submission_id, f.team_id) for f in flags] == [
        (near.id, first.id, world["lab"].id)
    ]
    assert flags[0].distance == pytest.approx(3 / N)
    assert far.id not in {f.submission_id for f in flags}


def test_identical_resubmission_is_flagged_against_the_latest_copy(world):
    submit(world, range(10))
    second = submit(world, range(10)).submission
    third = submit(world, range(10)).submission
    flag = db.session.scalar(select(ProbeFlag).where(ProbeFlag.submission_id == third.id))
    assert flag.earlier_submission_id == second.id and flag.distance == 0


def test_no_flags_on_public_splits_or_above_the_threshold(world):
    submit(world, range(10), split="dev")
    submit(world, range(11), split="dev")
    submit(world, range(11), split="dev", who="rival")
    submit(world, range(10))
    submit(world, range(14))  # 4 of 400 = 1%, not fewer than 1%
    submit(world, range(6), who="rival")  # 4 of 400 from the first, another team's: not fewer than 1% either
    assert db.session.scalars(select(ProbeFlag)).all() == []


def test_probe_threshold_comes_from_the_config(world, app):
    app.config["PROBE_DISTANCE"] = 0.05
    submit(world, range(10))
    submit(world, range(25))  # 15 of 400 = 3.75%
    assert len(db.session.scalars(select(ProbeFlag)).all()) == 1


def test_probe_threshold_from_the_environment(monkeypatch, tmp_path):
    from app.settings import ConfigError, from_environment

    monkeypatch.setenv("PROBE_DISTANCE", "0.002")
    assert from_environment(str(tmp_path))["PROBE_DISTANCE"] == 0.002
    monkeypatch.delenv("PROBE_DISTANCE")
    assert from_environment(str(tmp_path))["PROBE_DISTANCE"] == 0.01
    for bad in ("lots", "2", "-0.1"):
        monkeypatch.setenv("PROBE_DISTANCE", bad)
        with pytest.raises(ConfigError, match="PROBE_DISTANCE"):
            from_environment(str(tmp_path))


def test_probing_compares_with_every_earlier_submission_in_blocks(world, monkeypatch):
    monkeypatch.setattr(integrity, "PROBE_BLOCK", 2)
    for start in range(0, 250, 50):  # five submissions far from each other
        submit(world, range(start, start + 40))
    near = submit(world, list(range(100, 140)) + [399]).submission  # 1 of 400 from the third
    flag = db.session.scalar(select(ProbeFlag))
    assert flag.submission_id == near.id and flag.distance == pytest.approx(1 / N)


def test_probing_reads_only_submissions_whose_score_could_be_that_close(world, monkeypatch):
    """A file differing on a share d of the examples scores within 100 * d points: the check reads none
    outside that window of accuracy (nor, with the probe summaries, inside it unless near: see
    tests/service/test_probe_summaries.py), so its cost does not grow with the whole split."""
    compared = []
    real = integrity._block_distances
    monkeypatch.setattr(
        integrity,
        "_block_distances",
        lambda task, gold, new, blobs: compared.append(len(blobs)) or real(task, gold, new, blobs),
    )
    for wrong in (40, 80, 120, 160):  # 90%, 80%, 70%, 60%: 10 points apart, the window is 1 point
        submit(world, range(wrong))
    assert sum(compared) == 0
    near = submit(world, range(1, 41)).submission  # 90%, 2 of 400 from the first: in its window
    assert compared == [1]
    flag = db.session.scalar(select(ProbeFlag))
    assert flag.submission_id == near.id and flag.distance == pytest.approx(2 / N)


@pytest.mark.parametrize("task_name, shape", [("nlvr2", (101,)), ("nlvr-images", (17, 6))])
def test_packed_distances_equal_unpacked_ones(task_name, shape):
    task, rng = get_task(task_name), np.random.default_rng(7)
    new = rng.random(shape) < 0.5
    stored = [rng.random(shape) < p for p in (0.0, 0.01, 0.5, 1.0)] + [new.copy()]
    gold = type("Gold", (), {"n": shape[0]})()
    fast = integrity._block_distances(task, gold, new, [task.encode(s) for s in stored])
    assert fast.tolist() == integrity.distances(task, new, np.stack(stored)).tolist()
    assert fast[-1] == 0


def test_distances_for_each_task_shape():
    binary = np.array([[True, False, True], [True, True, True]])
    assert integrity.distances(get_task("nlvr2"), np.array([True, True, True]), binary).tolist() == [1 / 3, 0.0]
    images = np.zeros((2, 2, 6), dtype=bool)
    images[0, 1, 3] = True
    assert integrity.distances(get_task("nlvr-images"), np.zeros((2, 6), bool), images).tolist() == [1 / 12, 0.0]
    vcr = np.zeros((1, 4, 5), dtype=np.int8)
    vcr[0, 2, 1:] = 3  # four choices of one question
    assert integrity.distances(get_task("vcr"), np.zeros((4, 5), np.int8), vcr).tolist() == [0.25]


def test_a_near_copy_of_another_teams_submission_is_flagged_with_both_teams(world):
    original = submit(world, range(50)).submission
    copy = submit(world, list(range(50)) + [300], who="rival").submission  # 1 of 400 from the Lab's
    flags = db.session.scalars(select(ProbeFlag)).all()
    assert [(f.submission_id, f.team_id, f.other_team_id, f.earlier_submission_id) for f in flags] == [
        (copy.id, world["rivals"].id, world["lab"].id, original.id)
    ]
    assert flags[0].distance == pytest.approx(1 / N)
    # Both kinds at once: near the team's own copy (1 of 400) and the Lab's original (2 of 400).
    again = submit(world, list(range(50)) + [300, 301], who="rival").submission
    found = db.session.scalars(
        select(ProbeFlag).where(ProbeFlag.submission_id == again.id).order_by(ProbeFlag.id)
    ).all()
    assert [(f.other_team_id, f.earlier_submission_id) for f in found] == [
        (None, copy.id),
        (world["lab"].id, original.id),
    ]
    assert [f.distance for f in found] == pytest.approx([1 / N, 2 / N])
    # A submission far from everyone's is not flagged.
    far = submit(world, range(200, 300), who="member").submission
    assert db.session.scalar(select(ProbeFlag).where(ProbeFlag.submission_id == far.id)) is None


def test_list_flags_filters_by_kind_and_names_both_teams(world):
    submit(world, range(50))
    submit(world, range(51))  # the Lab's own near-copy
    submit(world, range(52), who="rival")  # 1 of 400 from the Lab's second
    assert integrity.list_flags().total == 2
    cross = integrity.list_flags(kind_ref="cross")
    assert [(row.team, row.other_team) for row in cross.rows] == [("Rivals", "Lab")] and cross.kind == "cross"
    own = integrity.list_flags(kind_ref="own")
    assert [(row.team, row.other_team) for row in own.rows] == [("Lab", None)]
    # Filtering by a team finds the flags that name it on either side.
    lab = integrity.list_flags(team_ref=str(world["lab"].id))
    assert lab.total == 2
    assert integrity.list_flags(team_ref=str(world["rivals"].id), kind_ref="own").total == 0
    assert [team.name for team in lab.teams] == ["Lab", "Rivals"]
    with pytest.raises(InvalidInput, match="kind must be one of own, cross"):
        integrity.list_flags(kind_ref="both' OR 1=1")


def test_list_flags_filters_by_split_and_team(world):
    catalog.add_split("nlvr2", "test-2", world["gold"]["test-u"], hidden=True)
    world["gold"]["test-2"] = world["gold"]["test-u"]
    for split in ("test-u", "test-2"):
        for who, start in (("member", 0), ("rival", 100)):  # far apart: flags within each team only
            submit(world, range(start, start + 10), split=split, who=who)
            submit(world, range(start, start + 11), split=split, who=who)
    assert integrity.list_flags().total == 4
    by_split = integrity.list_flags("nlvr2/test-2")
    assert {row.split_slug for row in by_split.rows} == {"test-2"} and by_split.total == 2
    by_team = integrity.list_flags(team_ref=str(world["rivals"].id))
    assert {row.team for row in by_team.rows} == {"Rivals"}
    both = integrity.list_flags("nlvr2/test-u", str(world["lab"].id))
    assert [(row.team, row.split_slug) for row in both.rows] == [("Lab", "test-u")]
    assert [team.name for team in both.teams] == ["Lab", "Rivals"]
    assert [split.slug for split in both.splits] == ["test-u", "test-2"]
    for bad_split in ("nlvr2", "/test-u", "x' OR 1=1 --"):
        with pytest.raises(InvalidInput):
            integrity.list_flags(bad_split)
    with pytest.raises(NotFound):
        integrity.list_flags("nlvr2/nope")
    with pytest.raises(InvalidInput):
        integrity.list_flags(team_ref="1 OR 1=1")
    with pytest.raises(NotFound):
        integrity.list_flags(team_ref="999999")
