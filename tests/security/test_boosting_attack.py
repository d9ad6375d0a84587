"""The boosting attack of Blum & Hardt (2015, section 5) against a hidden NLVR2-size split.

The attacker knows nothing about the images: it submits k random prediction vectors, keeps those the
feedback says are good, and submits their majority vote (ties broken by a fair coin). Under exact scores
(`full`, rounded to the count) it keeps every vector scored above chance (50%), and the vote's accuracy on
the hidden labels climbs by several points: the threat. Under the Ladder it can keep only the vectors that
raised the released score; a raise needs a paired margin of s/sqrt(n) (about 0.85 points here), so it keeps
two or three vectors and the vote stays near chance.

One attack runs through the API (300 vectors per policy, the same vectors for both: two hidden splits with
the same labels) and shows the server keeps exactly the vectors the pure Ladder keeps. The Ladder's gain
is a noisy quantity: the best of a few records still carries luck (about +0.8 points on average, with a
standard deviation of about 0.6 points from one attack to the next, at this n and k), so a single run can
land above a point. The acceptance figure is therefore the expected gain, estimated as the mean over 100
attacks run on the same Ladder code (app/evaluation/ladder.py) the server runs, with its 95% confidence
bound (standard error about 0.05 points). The paper's own attack code (Ladder.jl, examples/attacks.jl)
reports the same kind of figure: the vote's loss averaged over repeated attacks.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from sqlalchemy import select

from app.db import db
from app.evaluation import ladder as ladder_rule
from app.models import Submission
from app.services import catalog
from app.services.blind_test import visibility
from app.services.people import accounts, teams
from tests.support.boosting import attack_gold, ladder_keeps, majority_vote, prediction_file
from tests.support.users import bearer, make_user

N = 6970  # NLVR2 Test-U
K = 300
SEED = 2015
CHANCE = 50.0


def _submit(client, token: str, split: str, data: bytes, name: str) -> dict:
    response = client.post(
        "/api/v1/submissions",
        headers=bearer(token),
        content_type="multipart/form-data",
        data={"benchmark": "attack", "split": split, "model_name": name, "file": (io.BytesIO(data), "p.csv")},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json


@pytest.mark.slow
def test_boosting_attack_full_feedback_versus_the_ladder(app):
    gold, identifiers, labels = attack_gold(N, SEED)
    with app.app_context():
        catalog.add_benchmark("attack", "nlvr2", "Attack")
        for split, feedback in (("full", "full"), ("ladder", "ladder")):
            catalog.add_split("attack", split, gold, hidden=True)
            catalog.set_policy("attack", split, feedback=feedback, per_day=10_000, per_month=10_000, total=10_000)
        user = make_user("attacker@example.org")
        teams.create_team("Attackers", user)
        token = accounts.create_token(user, "attack")[1]

    rng = np.random.default_rng(SEED)
    vectors = rng.random((K, N)) < 0.5
    client = app.test_client()
    kept = {"full": [], "ladder": []}
    previous = None
    for i, vector in enumerate(vectors):
        data = prediction_file(identifiers, vector)
        released = _submit(client, token, "full", data, f"random {i}")["scores"]["all"]["accuracy"]
        if released > CHANCE:
            kept["full"].append(i)
        scores = _submit(client, token, "ladder", data, f"random {i}")["scores"]
        assert set(scores) == {"all"} and set(scores["all"]) == {"accuracy"}  # the Ladder's one figure
        released = scores["all"]["accuracy"]
        if previous is None or released > previous:
            kept["ladder"].append(i)
        previous = released

    figures = {}
    for split in ("full", "ladder"):
        vote = majority_vote(vectors[kept[split]], rng)
        answer = _submit(client, token, split, prediction_file(identifiers, vote), "majority vote")
        true_accuracy = 100.0 * float((vote == labels).mean())
        with app.app_context():  # the server's own (unreleased) score of the vote agrees
            stored = visibility.scores_of(db.session.get(Submission, answer["id"]))["all"]["accuracy"]
        assert stored == pytest.approx(true_accuracy)
        figures[split] = (true_accuracy, len(kept[split]))
    with app.app_context():
        assert db.session.scalar(select(db.func.count(Submission.id))) == 2 * K + 2

    # The server's Ladder is the pure one: it kept exactly the vectors the pure Ladder keeps.
    assert kept["ladder"] == ladder_keeps(vectors, labels)
    full, ladder = figures["full"][0] - CHANCE, figures["ladder"][0] - CHANCE
    print(f"\none boosting attack through the API, n = {N}, k = {K} random vectors per policy, chance {CHANCE:.0f}%:")
    for label, policy, gain in (("full feedback", "full", full), ("Ladder", "ladder", ladder)):
        accuracy, count = figures[policy]
        print(f"  {label + ':':14} kept {count:3d}, majority vote {accuracy:.2f}% ({gain:+.2f} points)")
    assert full >= 3.0, "exact scores should let the attack gain several points (the threat)"
    assert ladder <= full - 2.0, "the Ladder should hold the attack far below what exact scores allow"


@pytest.mark.slow
def test_the_ladder_keeps_the_attack_within_a_point_of_chance_on_average():
    """100 attacks of k = 300 random vectors on the labels above, through the same Ladder and rounding code
    the server runs (the API test checks the server keeps what this keeps)."""
    _, _, labels = attack_gold(N, SEED)
    gains: dict[str, list[float]] = {"full": [], "ladder": []}
    for attack in range(100):
        rng = np.random.default_rng(SEED + 1 + attack)
        vectors = rng.random((K, N)) < 0.5
        released = [ladder_rule.round_percentage(a, N) for a in 100.0 * (vectors == labels).mean(axis=1)]
        keeps = {
            "full": [i for i, value in enumerate(released) if value > CHANCE],
            "ladder": ladder_keeps(vectors, labels),
        }
        for policy, kept in keeps.items():
            vote = majority_vote(vectors[kept], rng)
            gains[policy].append(100.0 * float((vote == labels).mean()) - CHANCE)
    full, ladder = np.array(gains["full"]), np.array(gains["ladder"])
    bounds = {}
    print(f"\nboosting attack, expected gain over chance in points (mean of 100 attacks, n = {N}, k = {K}):")
    for label, values in (("full feedback", full), ("Ladder", ladder)):
        half_width = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
        bounds[label] = (values.mean() - half_width, values.mean() + half_width)
        print(
            f"  {label + ':':14} {values.mean():+.2f} (95% CI {bounds[label][0]:+.2f} to {bounds[label][1]:+.2f}; "
            f"one attack: sd {values.std(ddof=1):.2f}, range {values.min():+.2f} to {values.max():+.2f})"
        )
    assert bounds["full feedback"][0] >= 3.0, "exact scores should let the attack gain several points"
    assert bounds["Ladder"][1] < 1.0, "the Ladder should hold the attack within a point of chance"
