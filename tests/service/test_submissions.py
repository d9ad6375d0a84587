"""Submitting: scoring, quotas (day / month / total, rejected cap), feedback policy, publication."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.models import Membership, Submission, Team
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots, submission_pages
from app.services.errors import Conflict, Forbidden, InvalidInput, NotFound, QuotaExceeded, TooLarge
from app.services.intake import quotas, submissions
from app.services.intake.submissions import Upload
from tests.support.submission_world import build_submission_world

pytestmark = pytest.mark.postgres(
    reason=(
        "quotas by day and month compare timestamptz (naive strings on SQLite) and serialise with FOR UPDATE "
        "vs BEGIN IMMEDIATE (services/intake/quotas.py)"
    )
)

NOW = datetime(2026, 3, 31, 22, 0, tzinfo=UTC)


@pytest.fixture
def world(ctx):
    return build_submission_world()


def _upload(gold: bytes, accuracy: float = 0.8, seed: int = 0, **kw) -> Upload:
    return Upload(data=synthetic.predictions("nlvr2", gold, accuracy, seed=seed), model_name="M", **kw)


def test_submit_scores_and_stores_everything(world, app):
    result = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    sub = result.submission
    assert sub.status == "scored" and sub.team.name == "Lab"
    assert set(result.scores) >= {"all", "balanced", "unbalanced"}
    assert result.scores == visibility.scores_of(sub)
    # compact aligned predictions round-trip to what a fresh evaluation gives
    fresh = submissions.evaluate("nlvr2", "dev", synthetic.predictions("nlvr2", world["gold"], 0.8, seed=0))
    assert fresh == result.scores
    from app.services.storage import upload_files

    assert upload_files.read_original(sub.file_sha256) == synthetic.predictions("nlvr2", world["gold"], 0.8, seed=0)


@pytest.mark.parametrize(
    "policy, made, expected",
    [({"per_day": 2}, 2, "today"), ({"per_month": 3}, 3, "month"), ({"total": 1}, 1, "all 1")],
)
def test_quotas_refuse_the_next_submission(world, policy, made, expected):
    catalog.set_policy("nlvr2", "dev", **policy)
    for seed in range(made):
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"], seed=seed), now=NOW)
    with pytest.raises(QuotaExceeded) as info:
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"], seed=99), now=NOW)
    assert expected in info.value.message
    assert db.session.scalar(select(func.count(Submission.id)).where(Submission.status == "scored")) == made


def test_day_quota_reopens_at_utc_midnight_and_says_when(world):
    catalog.set_policy("nlvr2", "dev", per_day=1)
    submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    with pytest.raises(QuotaExceeded) as info:
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"], seed=1), now=NOW)
    assert info.value.retry_at == datetime(2026, 4, 1, tzinfo=UTC)
    assert "2026-04-01 00:00 UTC" in info.value.message
    assert quotas.retry_after_seconds(info.value, NOW) == 2 * 3600 + 1
    later = submissions.submit(
        world["member"], None, "nlvr2", "dev", _upload(world["gold"], seed=1), now=NOW + timedelta(hours=2, minutes=1)
    )
    assert later.quota.left["today"] == 0


def test_month_quota_counts_calendar_month(world):
    catalog.set_policy("nlvr2", "dev", per_month=1)
    submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    with pytest.raises(QuotaExceeded) as info:
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"], seed=1), now=NOW)
    assert info.value.retry_at == datetime(2026, 4, 1, tzinfo=UTC)


def test_quota_is_per_team_and_per_split(world):
    catalog.set_policy("nlvr2", "dev", per_day=1)
    submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    submissions.submit(world["outsider"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    submissions.submit(world["member"], None, "nlvr2", "test-u", _upload(world["hidden_gold"]), now=NOW)


def test_rejected_file_is_stored_with_problems_and_spares_the_quota(world):
    catalog.set_policy("nlvr2", "dev", per_day=1)
    bad = Upload(data=b"dev-0-0-0-0,perhaps\n", model_name="M")
    with pytest.raises(InvalidInput) as info:
        submissions.submit(world["member"], None, "nlvr2", "dev", bad, now=NOW)
    assert any("line 1" in p.message for p in info.value.problems)
    rejected = db.session.scalar(select(Submission).where(Submission.status == "rejected"))
    assert rejected is not None and "line 1" in json.loads(rejected.errors)[0]["message"]
    assert rejected.predictions is None
    ok = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    assert ok.quota.used_today == 1 and ok.quota.rejected_today == 1


def test_rejected_files_have_their_own_daily_cap(world):
    catalog.set_policy("nlvr2", "dev", rejected_per_day=2)
    bad = Upload(data=b"garbage\n", model_name="M")
    for _ in range(2):
        with pytest.raises(InvalidInput):
            submissions.submit(world["member"], None, "nlvr2", "dev", bad, now=NOW)
    with pytest.raises(QuotaExceeded, match="invalid files"):
        submissions.submit(world["member"], None, "nlvr2", "dev", bad, now=NOW)


def test_submit_errors(world, app):
    member, gold = world["member"], world["gold"]
    with pytest.raises(NotFound, match="nope"):
        submissions.submit(member, None, "nope", "dev", _upload(gold))
    with pytest.raises(NotFound, match="test-x"):
        submissions.submit(member, None, "nlvr2", "test-x", _upload(gold))
    with pytest.raises(Forbidden, match="Other"):
        submissions.submit(member, "Other", "nlvr2", "dev", _upload(gold))
    with pytest.raises(InvalidInput, match="model_name"):
        submissions.submit(member, None, "nlvr2", "dev", Upload(data=b"x", model_name="  "))
    with pytest.raises(InvalidInput, match="paper_url"):
        submissions.submit(member, None, "nlvr2", "dev", _upload(gold, paper_url="javascript:alert(1)"))
    app.config["MAX_UPLOAD_MB"] = 0
    with pytest.raises(TooLarge, match="MB"):
        submissions.submit(member, None, "nlvr2", "dev", _upload(gold))
    app.config["MAX_UPLOAD_MB"] = 50
    catalog.set_policy("nlvr2", "dev", is_open=False)
    with pytest.raises(Conflict, match="closed"):
        submissions.submit(member, None, "nlvr2", "dev", _upload(gold))
    assert db.session.scalar(select(func.count(Submission.id))) == 0


def test_hidden_split_feedback_policies(world):
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    full = submissions.submit(world["member"], None, "nlvr2", "test-u", _upload(world["hidden_gold"]), now=NOW)
    assert full.scores is not None
    catalog.set_policy("nlvr2", "test-u", feedback="none")
    held = submissions.submit(world["member"], None, "nlvr2", "test-u", _upload(world["hidden_gold"], seed=1), now=NOW)
    assert held.scores is None
    assert held.submission.scores  # stored all the same
    page = submission_pages.page_for(world["member"], held.submission.id)
    assert page.scores is None and page.withheld_reason
    assert submission_pages.page_for(world["admin"], held.submission.id).scores is not None


def test_submission_visibility(world):
    result = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW)
    assert submissions.get_for(world["admin"], result.submission.id)
    with pytest.raises(NotFound):
        submissions.get_for(world["outsider"], result.submission.id)
    assert [s.id for s in submissions.list_for(world["member"])] == [result.submission.id]
    assert submissions.list_for(world["outsider"]) == []


def test_publish_unpublish_hide(world):
    sub = submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]), now=NOW).submission
    split = catalog.get_split("nlvr2", "dev")
    with pytest.raises(InvalidInput, match="description or a paper URL"):
        submissions.publish(world["member"], sub.id)
    with pytest.raises(NotFound):
        submissions.publish(world["outsider"], sub.id, description="x")
    with pytest.raises(Forbidden):
        submissions.publish(world["admin"], sub.id, description="x")
    submissions.publish(world["member"], sub.id, description="Our model", code_url="https://example.org/c")
    assert [e.submission_id for e in board_snapshots.leaderboard(split)] == [sub.id]
    with pytest.raises(Forbidden):
        submissions.hide(world["member"], sub.id, "spam")
    with pytest.raises(InvalidInput):
        submissions.hide(world["admin"], sub.id, " ")
    submissions.hide(world["admin"], sub.id, "duplicate of #1")
    assert board_snapshots.leaderboard(split) == []
    submissions.unhide(world["admin"], sub.id)
    assert len(board_snapshots.leaderboard(split)) == 1
    submissions.unpublish(world["member"], sub.id)
    assert board_snapshots.leaderboard(split) == []


def test_anonymous_entries_hide_the_team(world):
    sub = submissions.submit(
        world["member"], None, "nlvr2", "dev", _upload(world["gold"], anonymous=True, description="anon"), now=NOW
    ).submission
    submissions.publish(world["member"], sub.id)
    [entry] = board_snapshots.leaderboard(catalog.get_split("nlvr2", "dev"))
    assert entry.team is None


def test_several_teams_need_a_choice(world):
    db.session.add(Membership(user=world["member"], team=db.session.scalar(select(Team).where(Team.name == "Other"))))
    db.session.commit()
    with pytest.raises(InvalidInput, match="several teams"):
        submissions.submit(world["member"], None, "nlvr2", "dev", _upload(world["gold"]))
    result = submissions.submit(world["member"], "Other", "nlvr2", "dev", _upload(world["gold"]))
    assert result.submission.team.name == "Other"


def test_hidden_full_release_withholds_category_and_field_breakdowns(world, app):
    gold = synthetic.nlvr2_gold(240, split="test", seed=9)
    catalog.add_split("nlvr2", "test-c", gold, hidden=True, annotations=synthetic.nlvr2_annotations(gold, 20))
    catalog.set_policy("nlvr2", "test-c", feedback="full")
    result = submissions.submit(world["member"], None, "nlvr2", "test-c", _upload(gold), now=NOW)
    stored = visibility.scores_of(result.submission)
    assert any(name.startswith("category:") for name in stored)  # computed and kept for maintainers
    assert "all" in result.scores and "balanced" in result.scores
    assert not any(name.startswith("category:") for name in result.scores)
    page = submission_pages.page_for(world["member"], result.submission.id)
    assert not any(name.startswith("category:") for name in (page.scores or {}))
