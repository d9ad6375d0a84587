"""A release is decided once, when the submission is scored: a later feedback policy shows no more than that
release and no more than it would release itself (services/blind_test/visibility.py), for every pair of policies."""

from __future__ import annotations

import json

import pytest

from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import submission_pages
from tests.support.blind_test_world import build_blind_test_world, submit

pytestmark = pytest.mark.postgres(
    reason="stored releases are floats (REAL vs double precision) compared after rounding on each dialect"
)

POLICIES = ("full", "ladder", "none")


@pytest.fixture
def world(ctx):
    return build_blind_test_world()


def _expected(then: str, now: str, released: dict | None) -> dict | None:
    """What the team may see after the switch, from what was released at the time."""
    if then == "none" or now == "none" or released is None:
        return None
    if now == "ladder":
        return {"all": {"accuracy": released["all"]["accuracy"]}}
    return released  # `full` now: a full release as made then (no breakdowns here); a Ladder's one figure


@pytest.mark.parametrize("now", POLICIES)
@pytest.mark.parametrize("then", POLICIES)
def test_a_later_policy_never_shows_more_than_was_released(world, then, now):
    catalog.set_policy("nlvr2", "test-u", feedback=then)
    submit(world, range(30))  # the team's best: 92.5%
    # 31 wrong (92.25%): the Ladder does not move and answers with the best's 92.5, never this file's own count.
    target = submit(world, range(31))
    released = json.loads(target.submission.released) if target.submission.released else None
    assert target.submission.release_policy == then
    if then == "ladder":
        assert released == {"all": {"accuracy": 92.5}}
    if then == "none":
        assert released is None
    catalog.set_policy("nlvr2", "test-u", feedback=now)

    expected = _expected(then, now, released)
    assert visibility.released_scores(target.submission) == expected
    page = submission_pages.page_for(world["member"], target.submission.id)
    if expected is None:
        assert page.scores is None and page.withheld_reason
    else:
        assert set(page.scores) == set(expected)
        assert {s: set(m) for s, m in page.scores.items()} == {s: set(m) for s, m in expected.items()}
        if then == "ladder":
            assert page.scores == {"all": {"accuracy": 92.5}}  # not the file's own 92.25
        assert not page.intervals or now == "full"
    # Maintainers still see every stored score.
    admin = submission_pages.page_for(world["admin"], target.submission.id)
    assert admin.scores["all"]["accuracy"] == pytest.approx(92.25)


def test_a_none_release_stays_held_after_a_switch_to_ladder_even_for_the_teams_best(world):
    """The case of the issue: a file scored under `none` is stored with all its scores; switching to the
    Ladder shows nothing of it (its accuracy was never released, and the Ladder never saw it)."""
    catalog.set_policy("nlvr2", "test-u", feedback="none")
    held = submit(world, range(10))
    catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    assert visibility.released_scores(held.submission) is None
    # The next file under the Ladder is answered by the Ladder alone.
    after = submit(world, range(40))
    assert after.scores == {"all": {"accuracy": 90.0}}


@pytest.mark.parametrize("then", ("ladder", "none"))
def test_a_file_answered_under_another_policy_waits_for_the_reveal_on_a_full_board(world, then):
    """A `full` board shows each entry's count: an entry the Ladder answered (or `none` held) would show
    more than its team was told, so it appears only once the split is revealed."""
    from app.db import db
    from app.services.boards import board_snapshots
    from app.services.errors import NotFound
    from app.services.intake import submissions

    catalog.set_policy("nlvr2", "test-u", feedback=then)
    target = submit(world, range(31))
    full_one = None
    catalog.set_policy("nlvr2", "test-u", feedback="full")
    full_one = submit(world, range(50))
    for result in (target, full_one):
        submissions.publish(world["member"], result.submission.id, description="a model")
    split = catalog.get_split("nlvr2", "test-u")
    assert [e.submission_id for e in board_snapshots.leaderboard(split)] == [full_one.submission.id]
    with pytest.raises(NotFound):
        submission_pages.page_for(None, target.submission.id)
    assert submission_pages.page_for(world["member"], target.submission.id).intervals == {}
    split.revealed_at = split.created_at
    split.board_version += 1
    db.session.commit()
    assert [e.submission_id for e in board_snapshots.leaderboard(split)] == [
        target.submission.id,
        full_one.submission.id,
    ]
    assert submission_pages.page_for(None, target.submission.id).scores["all"]["accuracy"] == pytest.approx(92.25)
