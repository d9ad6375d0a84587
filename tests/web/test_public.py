"""The first public pages: the benchmark list, a leaderboard table, health."""

from __future__ import annotations

import pytest

from app import synthetic
from app.services import catalog
from app.services.intake import submissions
from app.services.people import teams
from tests.support.splits import nlvr2_split


def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json == {
        "status": "ok",
        "queue": {"waiting": 0, "running": 0, "oldest_s": 0.0, "failed": 0, "stuck": 0},
    }


def test_index_empty_explains_how_to_start(client):
    page = client.get("/").get_data(as_text=True)
    assert "No benchmarks yet" in page


def _publish(app, gold, split_slug="dev", **kw):
    with app.app_context():
        split = catalog.get_split("nlvr2", split_slug)
        team = teams.find_team("Lab") or teams.create_team("Lab")
        return submissions.store_scored(
            split,
            team,
            synthetic.predictions("nlvr2", gold, **kw),
            model_name=f"model-{kw['seed']}",
            publish=kw.get("seed") != 99,
        ).id


def test_index_links_each_leaderboard(app, client, runner, tmp_path):
    nlvr2_split(runner, tmp_path)
    page = client.get("/").get_data(as_text=True)
    assert 'href="/leaderboards/nlvr2"' in page
    assert 'href="/leaderboards/nlvr2/dev"' in page


def test_leaderboard_lists_published_scores_in_order(app, client, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path)
    _publish(app, gold, accuracy=0.6, seed=1)
    _publish(app, gold, accuracy=0.9, seed=2)
    _publish(app, gold, accuracy=0.95, seed=99)  # stored, not published
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert page.index("model-2") < page.index("model-1")
    assert "model-99" not in page
    assert "Balanced accuracy" in page and "Consistency" in page


def test_leaderboard_defaults_to_hidden_split(app, client, runner, tmp_path):
    nlvr2_split(runner, tmp_path, split="dev")
    nlvr2_split(runner, tmp_path, split="test-u", hidden=True, seed=2)
    page = client.get("/leaderboards/nlvr2").get_data(as_text=True)
    assert 'aria-current="page" class="current">test-u' in page


def test_hidden_split_under_none_policy_holds_scores(app, client, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path, split="test-u", hidden=True)
    _publish(app, gold, split_slug="test-u", accuracy=0.8, seed=3)
    with app.app_context():
        from app.db import db

        split = catalog.get_split("nlvr2", "test-u")
        split.feedback = "none"
        db.session.commit()
    page = client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    assert "held until the maintainers reveal" in page
    assert "model-3" not in page


@pytest.mark.parametrize("path", ["/leaderboards/nope", "/leaderboards/nlvr2/nope", "/no-such-page"])
def test_unknown_pages_404(client, runner, tmp_path, path):
    nlvr2_split(runner, tmp_path)
    response = client.get(path)
    assert response.status_code == 404
    assert "Traceback" not in response.get_data(as_text=True)
