"""A team's public page, /teams/<slug> (issue 27): its published entries as the public boards show them and
nothing else (no unpublished, anonymous or held entry), its members counted and named only by their own choice,
linked from the boards; an unknown slug is a 404."""

from __future__ import annotations

from app.db import db
from app.models import Team
from tests.support.api_world import PASSWORD, build_world, stored_submission
from tests.support.browser import login, post_form


def test_the_public_page_shows_published_entries_only_and_members_by_choice(app):
    world = build_world(app)
    stored_submission(app, world, publish=True, model_name="shown-model", paper_url="https://papers.test/lab")
    stored_submission(app, world, seed=7, publish=True, model_name="later-model", description="a second one")
    stored_submission(app, world, seed=8, model_name="draft-model")  # never published
    stored_submission(app, world, seed=9, publish=True, anonymous=True, model_name="anonymous-model")
    stored_submission(app, world, split="test-u", publish=True, model_name="held-model")  # ladder: held
    with app.app_context():
        slug = db.session.scalar(db.select(Team.slug).where(Team.name == "Lab"))
    assert slug == "lab"
    visitor = app.test_client(use_cookies=False)
    page = visitor.get(f"/teams/{slug}")
    assert page.status_code == 200 and page.headers["ETag"]
    text = page.get_data(as_text=True)
    assert "shown-model" in text and "/leaderboards/nlvr2/dev" in text and 'class="progress-chart"' in text
    for absent in ("draft-model", "anonymous-model", "held-model", "Test-U", "member@", ">member<"):
        assert absent not in text, absent
    assert "1 member." in text
    # The board links the team's name to its page; its anonymous entry links nothing.
    board = visitor.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert board.count(f'href="/teams/{slug}"') == 2 and "Anonymous" in board  # its two named entries

    # A member chooses to be named (CSRF-protected form on the members' own page), by the address's local part.
    member = app.test_client()
    assert login(member, "member@example.org", PASSWORD).status_code == 302
    assert post_form(member, "/teams/1/shown", {"shown": "yes"}, form_page="/teams/1").status_code == 303
    assert member.post("/teams/1/shown", data={"shown": "no"}).status_code == 400  # no token: refused
    named = visitor.get(f"/teams/{slug}").get_data(as_text=True)
    assert "1 member: member." in named and "example.org" not in named

    assert visitor.get("/teams/no-such-team").status_code == 404
    assert visitor.get("/teams/Lab%00").status_code == 404
