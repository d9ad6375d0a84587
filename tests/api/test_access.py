"""Who may call what: (anonymous, member of another team, member, admin) x every API v1 endpoint."""

from __future__ import annotations

import pytest

from tests.support.api_world import ROLES, build_world, post_file, stored_submission

# endpoint -> expected status for (anonymous, other, member, admin). The admin belongs to no team: it may
# read any submission but cannot submit for, publish or unpublish a team's work.
MATRIX = {
    "GET /benchmarks": (200, 200, 200, 200),
    "GET /leaderboards/nlvr2/dev": (200, 200, 200, 200),
    "GET /openapi.json": (200, 200, 200, 200),
    "GET /submissions": (401, 200, 200, 200),
    "POST /submissions": (401, 403, 201, 403),
    "GET /submissions/{id}": (401, 404, 200, 200),
    "GET /submissions/{id}/file": (401, 404, 200, 200),
    "POST /submissions/{id}/publish": (401, 404, 200, 403),
    "POST /submissions/{id}/unpublish": (401, 404, 200, 403),
}
CASES = [
    pytest.param(endpoint, role, statuses[i], id=f"{endpoint}-{role}")
    for endpoint, statuses in MATRIX.items()
    for i, role in enumerate(ROLES)
]


@pytest.mark.parametrize(("endpoint", "role", "expected"), CASES)
def test_access(app, client, endpoint, role, expected):
    world = build_world(app)
    submission_id = stored_submission(app, world, description="Lab's model")
    method, path = endpoint.split(" ")
    path = "/api/v1" + path.replace("{id}", str(submission_id))
    if endpoint == "POST /submissions":
        response = post_file(client, world, role, world.predictions(), team="Lab")
    else:
        response = client.open(path, method=method, headers=world.headers(role))
    assert response.status_code == expected, response.get_data(as_text=True)
    assert response.mimetype == ("text/csv" if path.endswith("/file") and expected == 200 else "application/json")
    if expected >= 400:
        assert set(response.json) >= {"error", "details"}


@pytest.mark.parametrize(("role", "sees_lab"), [("other", False), ("member", True), ("admin", False)])
def test_list_shows_only_own_teams(app, client, role, sees_lab):
    world = build_world(app)
    submission_id = stored_submission(app, world)
    listed = client.get("/api/v1/submissions", headers=world.headers(role)).json["submissions"]
    assert (submission_id in [s["id"] for s in listed]) is sees_lab
