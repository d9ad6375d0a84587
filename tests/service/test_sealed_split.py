"""A blind test's sealed part through the services, the command line and the console: when it may be set,
what teams are released (the queried part's figures under every policy, and a later policy never shows
more), what maintainers see, and the reveal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.evaluation import get_task, sealed
from app.evaluation import ladder as ladder_rule
from app.models import AuditEvent, Split
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import submission_pages
from app.services.errors import Conflict, InvalidInput
from app.services.intake import submissions
from app.services.maintenance import label_audits
from app.services.people import accounts, teams
from tests.support.blind_test_world import build_blind_test_world, submit
from tests.support.browser import login, post_form
from tests.support.splits import nlvr2_split

TASK = get_task("nlvr2")
POLICIES = ("full", "ladder", "none")


@pytest.fixture
def world(ctx):
    return build_blind_test_world()


def _seal(fraction=0.5):
    return catalog.set_policy("nlvr2", "test-u", sealed_fraction=fraction)


def _parts(split_slug="test-u") -> dict[str, np.ndarray]:
    split = catalog.get_split("nlvr2", split_slug)
    return {s.name: s.indices.copy() for s in split.subsets if s.source == "sealed"}


def _queried_accuracy(world, wrong) -> tuple[float, int]:
    """(accuracy in %, examples) of a file wrong on `wrong`, on the queried part alone."""
    part = _parts()["queried"]
    right = ~np.isin(part, list(wrong))
    return 100.0 * right.mean(), part.size


# --- setting it ---------------------------------------------------------------------------------------------


def test_sealing_divides_whole_groups_once_from_a_secret_seed(world):
    split = _seal(0.5)
    parts = _parts()
    assert set(parts) == {"queried", "sealed"}
    assert split.sealed_fraction == 0.5 and len(split.seal_seed) == 64
    gold = catalog.gold_for(split)
    assert np.array_equal(np.sort(np.concatenate(list(parts.values()))), np.arange(gold.n))
    assert not set(gold.groups[parts["queried"]]) & set(gold.groups[parts["sealed"]])
    assert np.array_equal(parts["sealed"], np.flatnonzero(sealed.sealed_mask(gold.groups, 0.5, split.seal_seed)))
    seed = split.seal_seed
    _seal(0)  # removed...
    assert _parts() == {} and catalog.get_split("nlvr2", "test-u").sealed_fraction is None
    _seal(0.3)  # ...and set again from the same seed
    assert catalog.get_split("nlvr2", "test-u").seal_seed == seed
    assert np.array_equal(_parts()["sealed"], np.flatnonzero(sealed.sealed_mask(gold.groups, 0.3, seed)))


def test_sealing_is_refused_on_public_splits_out_of_range_and_after_the_first_scored_submission(world):
    with pytest.raises(Conflict, match="public split"):
        catalog.set_policy("nlvr2", "dev", sealed_fraction=0.5)
    with pytest.raises(InvalidInput, match="0 to 0.9"):
        _seal(0.95)
    _seal(0.5)
    submit(world, range(40))
    with pytest.raises(Conflict, match="already has scored submissions"):
        _seal(0.4)
    with pytest.raises(Conflict, match="already has scored submissions"):
        _seal(0)
    _seal(0.5)  # the part it has: nothing changes, nothing is refused
    assert catalog.get_split("nlvr2", "test-u").sealed_fraction == 0.5


def test_subset_names_of_the_parts_are_reserved(world):
    with pytest.raises(InvalidInput, match="'queried' or 'sealed'"):
        catalog.add_subset("nlvr2", "test-u", "sealed", b"test-0-0-0\n")


# --- what teams are released ----------------------------------------------------------------------------


def test_full_feedback_releases_the_queried_parts_figures_alone(world):
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    _seal(0.5)
    wrong = range(0, 400, 3)
    answer = submit(world, wrong)
    accuracy, n = _queried_accuracy(world, wrong)
    assert answer.scores["all"]["accuracy"] == ladder_rule.round_percentage(accuracy, n)
    assert "queried" not in answer.scores and "sealed" not in answer.scores
    stored = visibility.scores_of(answer.submission)
    assert stored["queried"]["accuracy"] == pytest.approx(accuracy)
    assert set(stored["sealed"]) == {"accuracy", "consistency"}
    # The bias subsets a team is told are the queried part's too.
    split = catalog.get_split("nlvr2", "test-u")
    part = _parts()["queried"]
    balanced = np.intersect1d(next(s.indices for s in split.subsets if s.name == "balanced"), part)
    expected = 100.0 * (~np.isin(balanced, list(wrong))).mean()
    # In whole percents, as every subset's figure before the reveal (finer ones would tell the subset's size).
    assert answer.scores["balanced"]["accuracy"] == ladder_rule.round_percentage(expected, balanced.size, 0)
    # Its page says so and shows the queried part's size; its intervals are the queried count's.
    page = submission_pages.page_for(world["member"], answer.submission.id)
    assert page.queried_only and page.queried_examples == n and set(page.sizes) == {"all"}
    assert page.sizes["all"]["accuracy"] == n  # each metric's n on the queried part (consistency: its sentences)
    assert set(page.scores) == {"all", "balanced", "unbalanced"}
    admin = submission_pages.page_for(world["admin"], answer.submission.id)
    assert not admin.queried_only and {"queried", "sealed"} <= set(admin.scores)
    assert admin.scores["all"]["accuracy"] == pytest.approx(100.0 * (1 - len(wrong) / 400))


def test_the_ladder_runs_on_the_queried_part(world):
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    _seal(0.5)
    part = _parts()["queried"]
    sequences = [range(120), range(100), range(200, 260), range(60)]
    released = [submit(world, wrong).scores for wrong in sequences]
    steps = ladder_rule.run([np.isin(part, list(wrong)).astype(float) for wrong in sequences])
    assert released == [{"all": {"accuracy": ladder_rule.released_accuracy(s.ladder, part.size)}} for s in steps]


@pytest.mark.parametrize("now", POLICIES)
@pytest.mark.parametrize("then", POLICIES)
def test_on_a_sealed_split_a_later_policy_never_shows_more_than_was_released(world, then, now):
    catalog.set_policy("nlvr2", "test-u", feedback=then)
    _seal(0.5)
    submit(world, range(30))
    target = submit(world, range(31))
    released = json.loads(target.submission.released) if target.submission.released else None
    catalog.set_policy("nlvr2", "test-u", feedback=now)
    shown = visibility.released_scores(target.submission)
    if then == "none" or now == "none":
        assert shown is None
    elif now == "ladder" or then == "ladder":
        assert shown == {"all": {"accuracy": released["all"]["accuracy"]}}
    else:
        assert shown == released
    accuracy, n = _queried_accuracy(world, range(31))
    if then == "full" and shown:
        assert shown["all"]["accuracy"] == ladder_rule.round_percentage(accuracy, n)
    if then == now == "full":
        # Its "all" is the queried part's, every metric (the stored part's scores, rounded to its counts).
        queried = visibility.scores_of(target.submission)["queried"]
        groups = np.unique(catalog.gold_for(catalog.get_split("nlvr2", "test-u")).groups[_parts()["queried"]]).size
        assert shown["all"] == {
            "accuracy": ladder_rule.round_percentage(queried["accuracy"], n),
            "consistency": ladder_rule.round_percentage(queried["consistency"], groups),
        }


def test_a_label_correction_rescores_both_parts_and_keeps_them(world):
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    _seal(0.5)
    answer = submit(world, range(50))
    before = _parts()
    rows = [json.loads(line) for line in world["gold"]["test-u"].decode().splitlines()]
    flipped = int(before["sealed"][0])
    rows[flipped]["label"] = "False" if rows[flipped]["label"] == "True" else "True"
    corrected = ("\n".join(json.dumps(row) for row in rows) + "\n").encode()
    label_audits.correct_labels(world["admin"], "nlvr2", "test-u", corrected, "one sealed label fixed")
    after = _parts()
    assert all(np.array_equal(before[name], after[name]) for name in before)
    db.session.expire_all()
    stored = visibility.scores_of(db.session.get(type(answer.submission), answer.id))
    assert set(stored["sealed"]) == {"accuracy", "consistency"} and set(stored["queried"]) == {
        "accuracy",
        "consistency",
    }


# --- reveal ---------------------------------------------------------------------------------------------


def test_a_full_split_is_revealable_only_with_a_sealed_part(world):
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    with pytest.raises(Conflict, match="no sealed part"):
        catalog.reveal_split("nlvr2", "test-u")
    _seal(0.5)
    split = catalog.reveal_split("nlvr2", "test-u")
    assert split.revealed_at is not None
    with pytest.raises(Conflict, match="revealed"):
        _seal(0.4)


# --- command line and console ---------------------------------------------------------------------------


def test_cli_sets_the_part_then_refuses_after_the_first_scored_submission(app, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path, split="test-u", hidden=True)
    result = runner.invoke(args=["splits", "policy", "nlvr2", "test-u", "--sealed", "0.5"])
    assert result.exit_code == 0, result.output
    assert "sealed part 0.5 of its groups" in result.output
    with app.app_context():
        split = db.session.scalar(select(Split))
        assert split.seal_seed not in result.output
        assert {s.name for s in split.subsets if s.source == "sealed"} == {"queried", "sealed"}
        [event] = db.session.scalars(select(AuditEvent).where(AuditEvent.action == "split.policy"))
        assert json.loads(event.details)["sealed_fraction"] == "no sealed part → 0.5 of the groups sealed"
        assert split.seal_seed not in event.details
    assert "\t0.5 (sealed)\t" in runner.invoke(args=["splits", "list"]).output
    for fraction, message in (("0.95", "0 to 0.9"), ("half", "half")):
        result = runner.invoke(args=["splits", "policy", "nlvr2", "test-u", "--sealed", fraction])
        assert result.exit_code == 2 and message in result.output
    with app.app_context():
        user = accounts.create_user("member@example.org", "password123")
        teams.create_team("Lab", creator=user)
        submissions.submit(
            user,
            None,
            "nlvr2",
            "test-u",
            submissions.Upload(data=synthetic.predictions("nlvr2", gold, 0.7, split="test-u"), model_name="M"),
        )
    result = runner.invoke(args=["splits", "policy", "nlvr2", "test-u", "--sealed", "0.3"])
    assert result.exit_code == 2
    assert "already has scored submissions" in result.output and "before the first one" in result.output
    result = runner.invoke(args=["splits", "reveal", "nlvr2", "test-u"])
    assert result.exit_code == 0, result.output
    assert "revealed on" in result.output
    assert "\t0.5 (revealed)\t" in runner.invoke(args=["splits", "list"]).output
    result = runner.invoke(args=["splits", "reveal", "nlvr2", "test-u"])
    assert result.exit_code == 2 and "already revealed" in result.output


def test_console_sets_the_part_then_answers_409_after_the_first_scored_submission(app, client):
    gold = synthetic.nlvr2_gold(240, split="test", seed=8)
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-u", gold, hidden=True)
        accounts.create_user("root@example.org", "password123", admin=True)
        member = accounts.create_user("member@example.org", "password123")
        teams.create_team("Lab", creator=member)
    assert login(client, "root@example.org", "password123").status_code == 302
    form = {"per_day": "", "per_month": "", "total": "", "rejected_per_day": "50", "feedback": "ladder", "is_open": "y"}
    page = "/console/splits/nlvr2/test-u"

    def send(**fields):
        return post_form(client, f"{page}/policy", {**form, **fields}, form_page=page)

    def split() -> Split:
        with app.app_context():
            found = catalog.get_split("nlvr2", "test-u")
            db.session.expunge(found)
            return found

    assert "Sealed part" in client.get(page).get_data(as_text=True)
    response = send(sealed_fraction="0.5")
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    assert split().sealed_fraction == 0.5
    response = send(sealed_fraction="nine")
    assert response.status_code == 422 and "is not a number" in response.get_data(as_text=True)
    with app.app_context():
        user = accounts.get_user_by_email("member@example.org")
        submissions.submit(
            user,
            None,
            "nlvr2",
            "test-u",
            submissions.Upload(data=synthetic.predictions("nlvr2", gold, 0.7, split="test"), model_name="M"),
        )
    response = send(sealed_fraction="0.2")
    assert response.status_code == 409
    assert "already has scored submissions" in response.get_data(as_text=True)
    # Saving the rest of the policy with the part it has is fine.
    assert send(sealed_fraction="0.5", per_day="3").status_code == 303
    assert split().per_day == 3 and split().sealed_fraction == 0.5
    assert split().seal_seed not in client.get(page).get_data(as_text=True)
    # The console's reveal of a sealed split (feedback ladder here; a full one is revealable too, see above).
    response = post_form(client, f"{page}/reveal", form_page=page)
    assert response.status_code == 303
    assert split().revealed_at is not None


def test_before_the_reveal_the_public_board_is_the_queried_parts(app, world):
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    _seal(0.5)
    answer = submit(world, range(0, 400, 4))
    submissions.publish(world["member"], answer.id, description="a model")
    stored = visibility.scores_of(answer.submission)
    n = _parts()["queried"].size
    client = app.test_client()
    board = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    [entry] = board["entries"]
    assert entry["scores"]["all"]["accuracy"]["value"] == pytest.approx(stored["queried"]["accuracy"])
    assert entry["scores"]["all"]["consistency"]["value"] == pytest.approx(stored["queried"]["consistency"])
    assert not {"queried", "sealed", "gap"} & set(entry["scores"]) and "gap" not in entry
    page = client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    assert "computed on its queried part alone" in page and f"n = {n:,}" in page
    whole = catalog.get_split("nlvr2", "test-u").example_count
    assert f"{n:,} examples (its queried part; {whole:,} in all)" in page
    models = client.get("/leaderboards/nlvr2/models").get_data(as_text=True)
    assert f'test-u accuracy<span class="n" title="examples">n = {n:,}</span>' in models
    public = client.get(f"/submissions/{answer.id}").get_data(as_text=True)
    assert "queried part alone" in public
    catalog.reveal_split("nlvr2", "test-u")
    [entry] = client.get("/api/v1/leaderboards/nlvr2/test-u").json["entries"]
    assert entry["scores"]["all"]["accuracy"]["value"] == pytest.approx(stored["all"]["accuracy"])
    assert entry["scores"]["sealed"]["accuracy"]["value"] == pytest.approx(stored["sealed"]["accuracy"])
    assert entry["gap"]["value"] == pytest.approx(stored["queried"]["accuracy"] - stored["sealed"]["accuracy"])
