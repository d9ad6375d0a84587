"""GET /api/v1/leaderboards/<benchmark>/<split>: every score with its interval, significance-aware ranks."""

from __future__ import annotations

import numpy as np

from app import synthetic
from app.db import db
from app.evaluation import get_task
from app.models import Submission
from app.services import catalog
from app.services.intake import submissions
from app.services.people import teams

TASK = get_task("nlvr2")


def _store(app, gold: bytes, predictions: np.ndarray, name: str, split: str = "dev") -> int:
    """Publish a submission whose aligned predictions are given (as the CSV a team would upload)."""
    with app.app_context():
        parsed = TASK.read_gold(gold)
        text = "".join(
            f"{identifier},{'true' if p else 'false'}\n" for identifier, p in zip(parsed.ids, predictions, strict=True)
        )
        team = teams.find_team("Lab") or teams.create_team("Lab")
        return submissions.store_scored(
            catalog.get_split("nlvr2", split), team, text.encode(), model_name=name, description="d", publish=True
        ).id


def _flip(right: np.ndarray, to_wrong: int, to_right: int, seed: int) -> np.ndarray:
    """Turn `to_wrong` right answers wrong and `to_right` wrong ones right."""
    rng = np.random.default_rng(seed)
    out = right.copy()
    out[rng.choice(np.flatnonzero(right), to_wrong, replace=False)] = False
    out[rng.choice(np.flatnonzero(~right), to_right, replace=False)] = True
    return out


def test_every_score_has_an_interval_and_ranks_know_significance(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(2000, seed=5)
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
    labels = TASK.read_gold(gold).labels
    rng = np.random.default_rng(1)
    best = rng.random(labels.size) < 0.85
    close = _flip(best, 16, 10, seed=2)  # 0.3 points below, differing both ways: not significantly worse
    far = _flip(close, 200, 0, seed=3)  # 10 points below: significantly worse
    ids = [
        _store(app, gold, np.where(mask, labels, ~labels), name)
        for name, mask in (("far", far), ("best", best), ("close", close))
    ]
    body = client.get("/api/v1/leaderboards/nlvr2/dev").json
    entries = body["entries"]
    assert [e["model_name"] for e in entries] == ["best", "close", "far"]
    assert [e["rank"] for e in entries] == [1, 1, 3]
    assert {e["submission_id"] for e in entries} == set(ids)
    for entry in entries:
        assert set(entry["scores"]) == {"all", "balanced", "unbalanced"}
        for subset, metrics in entry["scores"].items():
            for metric, score in metrics.items():
                assert set(score) == {"value", "ci_low", "ci_high", "text", "ci_low_text", "ci_high_text"}
                assert score["ci_low"] <= score["value"] <= score["ci_high"], (subset, metric)
                assert score["ci_high"] - score["ci_low"] > 0.5  # a real interval, not a point
    # The values are the stored scores.
    with app.app_context():
        stored = {s.subset + ":" + s.metric: s.value for s in db.session.get(Submission, ids[1]).scores}
    top = entries[0]["scores"]
    assert abs(top["all"]["accuracy"]["value"] - stored["all:accuracy"]) < 1e-9
    assert abs(top["unbalanced"]["accuracy"]["value"] - stored["unbalanced:accuracy"]) < 1e-9


def test_held_scores_give_no_entries(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(200, split="test", seed=6)
        catalog.add_split("nlvr2", "test-u", gold, hidden=True, name="Test-U")
        catalog.set_policy("nlvr2", "test-u", feedback="none")
    labels = TASK.read_gold(gold).labels
    _store(app, gold, labels, "perfect", split="test-u")
    body = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    assert body["scores_public"] is False and body["entries"] == []


def test_a_held_board_counts_the_entries_and_teams_waiting_and_names_its_policy(app, client):
    """Counts only: published entries not hidden by a maintainer, and their teams (an anonymous entry's
    team counted, never named); the page says the same; after the reveal, `held` is null."""
    from app.services.people import accounts

    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(200, split="test", seed=6)
        catalog.add_split("nlvr2", "test-u", gold, hidden=True, name="Test-U")  # held: the Ladder by default
        split = catalog.get_split("nlvr2", "test-u")
        admin = accounts.create_user("admin@example.org", "password123", admin=True)
        one, two, three = (teams.create_team(name) for name in ("One", "Two", "Three"))
        stored = {}
        for number, (team, published, anonymous) in enumerate(
            [(one, True, False), (one, True, True), (two, True, True), (two, False, False), (three, True, False)]
        ):
            stored[number] = submissions.store_scored(
                split,
                team,
                synthetic.predictions("nlvr2", gold, 0.7, seed=number, split="test"),
                model_name=f"waiting-{number}",
                description="d",
                anonymous=anonymous,
                publish=published,
            ).id
        submissions.hide(admin, stored[4], "a copy")  # team Three's only entry: neither it nor Three waits

    body = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    assert body["entries"] == [] and body["scores_public"] is False
    held = body["held"]
    assert (held["entries"], held["teams"], held["feedback"]) == (3, 2, "ladder")
    assert held["policy"].startswith("Feedback policy ladder:") and held["opens"] == "when the maintainers reveal them"
    assert held["about_url"] == "/about/blind-test#feedback"
    page = client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    assert "<strong>3 entries from 2 teams are waiting</strong>; scores open when the maintainers reveal them." in page
    assert "Feedback policy ladder:" in page and 'href="/about/blind-test#feedback"' in page
    assert "waiting-" not in page
    assert client.get("/about/blind-test").status_code == 200

    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="none")
    held = client.get("/api/v1/leaderboards/nlvr2/test-u").json["held"]
    assert held["feedback"] == "none" and held["policy"].startswith("Feedback policy none:")
    with app.app_context():
        catalog.reveal_split("nlvr2", "test-u")
    body = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    assert body["held"] is None and len(body["entries"]) == 3
