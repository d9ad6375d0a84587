"""One's own file (issue 27): a former member and the public never get a team's file, published or hidden.

A test whose docstring says FAILS demonstrated a problem found in a hostile review of issue 27 (each is fixed,
and the test now guards the fix); every other one pins behaviour that held under attack."""

from __future__ import annotations

from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.support.api_world import PASSWORD as WORLD_PASSWORD
from tests.support.api_world import build_world, post_file
from tests.support.browser import login
from tests.support.users import bearer, make_user


def test_a_former_member_and_the_public_never_get_a_teams_file_published_or_hidden(app, client):
    """A member who left keeps a working token and session: the team's files are no longer theirs (404, as
    for any stranger). A published entry is public, its predictions are not; a hidden one neither."""
    world = build_world(app)
    with app.app_context():
        leaver = make_user("leaver@example.org", team=teams.find_team("Lab"), password=WORLD_PASSWORD)
        _, leaver_token = accounts.create_token(leaver, "ci")
    data = b"\xef\xbb\xbf" + world.predictions().replace(b"\n", b"\r\n")
    created = post_file(client, world, "member", data)
    assert created.status_code == 201, created.get_json()
    sid = created.get_json()["id"]
    published = client.post(
        f"/api/v1/submissions/{sid}/publish", json={"description": "x"}, headers=world.headers("member")
    )
    assert published.status_code == 200
    api, web = f"/api/v1/submissions/{sid}/file", f"/submissions/{sid}/file"
    assert client.get(api, headers=bearer(leaver_token)).get_data() == data  # a member still
    session = app.test_client()
    assert login(session, "leaver@example.org", WORLD_PASSWORD).status_code == 302
    assert session.get(web).get_data() == data
    with app.app_context():
        teams.leave_team(teams.find_team("Lab"), accounts.get_user_by_email("leaver@example.org"))
    assert client.get(api, headers=bearer(leaver_token)).status_code == 404
    assert session.get(web).status_code == 404
    for hidden in (False, True):
        if hidden:
            with app.app_context():
                submissions.hide(accounts.get_user_by_email("admin@example.org"), sid, "moderated")
        assert client.get(api, headers=world.headers("other")).status_code == 404
        assert app.test_client().get(web).status_code == 404
        assert client.get(api).status_code == 401
        kept = client.get(api, headers=world.headers("member"))
        assert kept.status_code == 200 and kept.get_data() == data
        assert kept.headers["Content-Disposition"] == f'attachment; filename="nlvr2-dev-submission-{sid}.csv"'
