"""A blind test's sealed part against the boosting attack (issue 14's acceptance), and what it shows to whom.

On a Test-U-size NLVR2 split (6,970 synthetic examples, ~2,000 sentences) sealed at 0.5, an attacker submits
K random prediction vectors, keeps those the feedback says are good and submits their majority vote
(tests/security/test_boosting_attack.py), then publishes it; the maintainers reveal the split. Under `full`
feedback the vote climbs on the queried part (the part every release was computed on) and stays at chance on
the sealed part, and the board marks its gap. Under the Ladder the attack keeps a few vectors only: the vote
gains far less on the queried part, stays at chance on the sealed part, and its gap is measured the same way.
The seal's seed is fixed here so that both databases see the same parts. Before the reveal nothing a team or the public
sees carries a sealed-part figure or the seal's seed (every page and API answer is crawled).

K = 150: in 200 simulated attacks on 3,485 queried examples the vote's gain was 4.7 points on average
(sd 0.7, lowest 1% 3.1); K = 100 fell short of 3 points in one attack in ten. The world is built once per
database (module scope): the attack is the slow part.
"""

from __future__ import annotations

import io
import json
import logging
import math

import numpy as np
import pytest
from sqlalchemy import select

from app import create_app, synthetic
from app.db import db
from app.evaluation import get_task, sealed
from app.evaluation import ladder as ladder_rule
from app.models import Split, Submission, Team
from app.services import catalog
from app.services.blind_test import visibility
from app.services.maintenance import maintainer_actions
from app.services.people import accounts, teams
from tests.conftest import make_config
from tests.security import crawler
from tests.security.leaks import SealedFigureDetector
from tests.support.security_world import EMAILS, World
from tests.support.users import make_user

# SQLite alone: an attack on the release rule, whose stored floats and board reads are checked on PostgreSQL
# by test_policy_changes and test_crowded_boards. Each attack (module scope) runs once: make test hands a
# module whole to one worker (--dist loadfile).

N = 6970  # NLVR2 Test-U
K = 150
SEED = 2017
CHANCE = 50.0
SPLITS = {"test-full": "full", "test-ladder": "ladder"}
TASK = get_task("nlvr2")


def _csv(identifiers: list[str], predictions: np.ndarray) -> bytes:
    words = np.where(predictions, "True", "False")
    return ("\n".join(f"{i},{w}" for i, w in zip(identifiers, words, strict=True)) + "\n").encode()


def _submit(client, token: str, split: str, data: bytes, name: str) -> dict:
    response = client.post(
        "/api/v1/submissions",
        headers={"Authorization": f"Bearer {token}"},
        content_type="multipart/form-data",
        data={"benchmark": "nlvr2", "split": split, "model_name": name, "file": (io.BytesIO(data), "p.csv")},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json


def _publish(client, token: str, submission_id: int) -> None:
    response = client.post(
        f"/api/v1/submissions/{submission_id}/publish",
        json={"description": "a model"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def _vote(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    share = rows.mean(axis=0)
    return np.where(share == 0.5, rng.random(rows.shape[1]) < 0.5, share > 0.5)


def _detector(app) -> SealedFigureDetector:
    """Every stored submission's sealed-part and whole-split figures are forbidden; its queried-part figures
    (whole part and bias subsets within it) and its releases are what a viewer may see."""
    forbidden: dict[str, float] = {}
    allowed: list[float] = []
    seeds = []
    with app.app_context():
        for split in db.session.scalars(select(Split)):
            seeds.append(split.seal_seed)
            inputs = catalog.scoring_inputs(split)
            part = inputs.subsets[sealed.QUERIED]
            gold, subsets = visibility.queried_view(split, inputs.gold, inputs.subsets, part)
            for submission in db.session.scalars(
                select(Submission).where(Submission.split_id == split.id, Submission.status == "scored")
            ):
                for subset, metrics in visibility.scores_of(submission).items():
                    if subset != sealed.QUERIED:
                        for metric, value in metrics.items():
                            forbidden[f"submission {submission.id}'s {subset} {metric}"] = value
                predictions = TASK.decode(submission.predictions, inputs.gold.n)[part]
                allowed += [v for metrics in TASK.score(gold, predictions, subsets).values() for v in metrics.values()]
                released = json.loads(submission.released) if submission.released else {}
                allowed += [v for metrics in released.values() for v in metrics.values()]
    return SealedFigureDetector(forbidden, allowed, seeds)


@pytest.fixture(scope="module")
def attack(database_backend, migrated_database, tmp_path_factory):
    """The world, the two attacks, a crawl before the reveal, the reveal: what the tests below look at."""
    folder = tmp_path_factory.mktemp("sealed")
    url = database_backend.new_database(folder, template=migrated_database, name="sealed")
    app = create_app(make_config(folder, url))
    gold = synthetic.nlvr2_gold(N, split="test", seed=SEED)
    rows = [json.loads(line) for line in gold.decode().splitlines()]
    identifiers = [row["identifier"] for row in rows]
    labels = np.array([row["label"].lower() == "true" for row in rows])
    world = World(gold={}, labels={})
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        for split, feedback in SPLITS.items():
            added = catalog.add_split("nlvr2", split, gold, hidden=True, name=split.title())
            # A fixed seal (the server draws a secret one): the same parts, and figures, on every database.
            added.seal_seed = f"sealed part test {split}"
            db.session.commit()
            maintainer_actions.set_policy(
                None,
                "nlvr2",
                split,
                feedback=feedback,
                per_day=10_000,
                per_month=10_000,
                total=10_000,
                sealed_fraction=0.5,
                via="cli",
            )
        users = {role: make_user(email, admin=role == "admin") for role, email in EMAILS.items()}
        for role, name in (("owner", "Lab"), ("other", "Rivals")):
            world.team_ids[role] = teams.create_team(name, users[role]).id
        for role, user in users.items():
            world.tokens[role] = accounts.create_token(user, "sealed part")[1]
        world.invite = teams.create_invite(db.session.get(Team, world.team_ids["owner"]), users["owner"])
        parts = {
            split: {s.name: s.indices.copy() for s in catalog.get_split("nlvr2", split).subsets if s.source == "sealed"}
            for split in SPLITS
        }

    client = app.test_client()
    owner, other = world.tokens["owner"], world.tokens["other"]
    rng = np.random.default_rng(SEED)
    vectors = rng.random((K, N)) < 0.5
    kept: dict[str, list[int]] = {"test-full": [], "test-ladder": []}
    previous = None
    for i, vector in enumerate(vectors):
        data = _csv(identifiers, vector)
        if _submit(client, owner, "test-full", data, f"random {i}")["scores"]["all"]["accuracy"] > CHANCE:
            kept["test-full"].append(i)
        released = _submit(client, owner, "test-ladder", data, f"random {i}")["scores"]["all"]["accuracy"]
        if previous is None or released > previous:
            kept["test-ladder"].append(i)
        previous = released
    votes, honest = {}, {}
    for split in SPLITS:
        vote = _vote(vectors[kept[split]], rng)
        votes[split] = _submit(client, owner, split, _csv(identifiers, vote), "majority vote")["id"]
        _publish(client, owner, votes[split])
        # An honest entry beside it: 70% right everywhere, so its gap is sampling noise.
        data = synthetic.predictions("nlvr2", gold, 0.7, seed=3, split="test")
        honest[split] = _submit(client, other, split, data, "honest model")["id"]
        _publish(client, other, honest[split])

    with app.app_context():
        detector = _detector(app)
    logs = _LogCapture()
    logging.getLogger().addHandler(logs)
    try:
        visits = {role: crawler.crawl(app, world, role) for role in ("anonymous", "other", "owner", "admin")}
    finally:
        logging.getLogger().removeHandler(logs)
    before = {"visits": visits, "logs": logs.lines, "detector": detector}

    runner = app.test_cli_runner()
    for split in SPLITS:
        result = runner.invoke(args=["splits", "reveal", "nlvr2", split])
        assert result.exit_code == 0, result.output
    yield {
        "app": app,
        "client": client,
        "world": world,
        "labels": labels,
        "parts": parts,
        "kept": kept,
        "votes": votes,
        "honest": honest,
        "before": before,
        "vectors": vectors,
    }
    with app.app_context():
        db.engine.dispose()
    database_backend.drop(url)


class _LogCapture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage() + (record.exc_text or ""))


def _sampling_error(n: int) -> float:
    """Three standard errors of a chance score (50%) on n examples, in points: a vote that learned nothing of
    these labels lands within it 99.7% of the time (a 95% bound would fail one run in twenty by design)."""
    return 3.0 * 100.0 * math.sqrt(0.25 / n)


def _entry(attack, split: str, submission_id: int) -> dict:
    board = attack["client"].get(f"/api/v1/leaderboards/nlvr2/{split}").json
    return next(entry for entry in board["entries"] if entry["submission_id"] == submission_id)


def _truth(attack, split: str, submission_id: int) -> dict[str, float]:
    """The vote's accuracy on each part, from its predictions and the labels (not from the server)."""
    with attack["app"].app_context():
        blob = db.session.get(Submission, submission_id).predictions
    predictions = TASK.decode(blob, N)
    right = predictions == attack["labels"]
    return {name: 100.0 * float(right[indices].mean()) for name, indices in attack["parts"][split].items()}


@pytest.mark.slow
def test_under_full_feedback_the_vote_climbs_on_the_queried_part_only_and_the_board_marks_its_gap(attack):
    split, vote = "test-full", attack["votes"]["test-full"]
    truth = _truth(attack, split, vote)
    entry = _entry(attack, split, vote)
    scores = entry["scores"]
    assert scores["queried"]["accuracy"]["value"] == pytest.approx(truth["queried"])
    assert scores["sealed"]["accuracy"]["value"] == pytest.approx(truth["sealed"])
    for part in ("queried", "sealed"):  # each part with the split's metrics and their intervals
        assert set(scores[part]) == {"accuracy", "consistency"}
        assert scores[part]["consistency"]["ci_low"] is not None
    n_sealed = attack["parts"][split]["sealed"].size
    sampling = _sampling_error(n_sealed)
    print(
        f"\nfull feedback, k = {K}: kept {len(attack['kept'][split])}, vote {truth['queried']:.2f}% on the queried "
        f"part, {truth['sealed']:.2f}% on the sealed part; "
        f"gap {entry['gap']['value']:+.2f} (p = {entry['gap']['p']:.2g})"
    )
    assert truth["queried"] - CHANCE >= 3.0, "the attack should climb on the part the feedback was computed on"
    assert abs(truth["sealed"] - CHANCE) <= sampling, "...and stay at chance on the sealed part"
    assert entry["gap"] == {
        "metric": "accuracy",
        "value": pytest.approx(truth["queried"] - truth["sealed"]),
        "p": pytest.approx(entry["gap"]["p"]),
        "larger_than_sampling": True,
    }
    assert entry["gap"]["p"] < 0.05
    honest = _entry(attack, split, attack["honest"][split])
    assert honest["gap"]["larger_than_sampling"] is False
    # The page and the exports mark it too, and only it.
    page = attack["client"].get(f"/leaderboards/nlvr2/{split}").get_data(as_text=True)
    row = page.split(f'data-submission-id="{vote}"', 1)[1].split("</tr>", 1)[0]
    assert "†" in row and "Gap (queried − sealed accuracy)" in page
    assert "†" not in page.split(f'data-submission-id="{attack["honest"][split]}"', 1)[1].split("</tr>", 1)[0]
    exported = attack["client"].get(f"/leaderboards/nlvr2/{split}/export.csv").get_data(as_text=True).splitlines()
    header = exported[0].split(",")
    assert {"queried:accuracy", "sealed:accuracy", "gap:accuracy", "gap larger than sampling"} <= set(header)
    marks = {line.split(",")[1]: line.split(",")[header.index("gap larger than sampling")] for line in exported[1:]}
    assert marks == {"majority vote": "true", "honest model": "false"}
    markdown = attack["client"].get(f"/leaderboards/nlvr2/{split}/export.md").get_data(as_text=True)
    assert "†" in next(line for line in markdown.splitlines() if "majority vote" in line)
    document = json.loads(attack["client"].get(f"/leaderboards/nlvr2/{split}/export.json").get_data(as_text=True))
    assert {e["model"]: e["gap"]["larger_than_sampling"] for e in document["entries"]} == {
        "majority vote": True,
        "honest model": False,
    }


@pytest.mark.slow
def test_under_the_ladder_the_vote_stays_near_chance_on_both_parts(attack):
    split, vote = "test-ladder", attack["votes"]["test-ladder"]
    truth = _truth(attack, split, vote)
    entry = _entry(attack, split, vote)
    assert entry["scores"]["queried"]["accuracy"]["value"] == pytest.approx(truth["queried"])
    assert entry["scores"]["sealed"]["accuracy"]["value"] == pytest.approx(truth["sealed"])
    n_sealed = attack["parts"][split]["sealed"].size
    sampling = _sampling_error(n_sealed)
    print(
        f"\nthe Ladder, k = {K}: kept {len(attack['kept'][split])}, vote {truth['queried']:.2f}% on the queried "
        f"part, {truth['sealed']:.2f}% on the sealed part; "
        f"gap {entry['gap']['value']:+.2f} (p = {entry['gap']['p']:.2g})"
    )
    full = _truth(attack, "test-full", attack["votes"]["test-full"])
    assert truth["queried"] - CHANCE <= full["queried"] - CHANCE - 2.0, "the Ladder holds the attack down"
    assert abs(truth["sealed"] - CHANCE) <= sampling
    # The gap is measured the same way; whether it is marked depends on the few records the Ladder let through
    # (about a point on this part: 100 attacks average +0.8 on twice as many examples), so only its rule is
    # checked here: marked exactly where the one-sided p-value is under 0.05.
    assert entry["gap"]["value"] == pytest.approx(truth["queried"] - truth["sealed"])
    assert entry["gap"]["larger_than_sampling"] is (entry["gap"]["p"] < 0.05)
    # The Ladder ran on the queried part alone: the server kept exactly what a Ladder on those examples keeps.
    part = attack["parts"][split]["queried"]
    steps = ladder_rule.run((attack["vectors"][:, part] != attack["labels"][part]).astype(float))
    keeps = [i for i, step in enumerate(steps) if i == 0 or step.released_loss < steps[i - 1].released_loss]
    assert attack["kept"][split] == keeps


@pytest.mark.slow
def test_before_the_reveal_nothing_carries_a_sealed_figure_or_the_seed(attack):
    before = attack["before"]
    detector = before["detector"]
    assert len(detector.figures) > 1000 and detector.secrets  # it looks for something
    # The detector can fail: a sealed figure written as the API or a CSV would write it is caught.
    value = next(float(text) for text, what in detector.figures.items() if "sealed accuracy" in what)
    assert detector.leaks(json.dumps({"accuracy": value}))
    assert detector.leaks(f"x,{value:.6f},y")
    assert detector.leaks(f"seed {detector.secrets[0]}")
    problems, seen = [], set()
    for role, visits in before["visits"].items():
        for visit in visits:
            assert visit.status < 500, f"{role} GET {visit.url} answered {visit.status}"
            seen.add((role, visit.endpoint, visit.status))
            found = detector.leaks(visit.text)
            if role == "admin":  # maintainers see every figure, but never the seed
                found = [leak for leak in found if leak.startswith("the seal seed")]
            problems += [f"{role} GET {visit.url}: {leak}" for leak in found]
    for line in before["logs"]:
        problems += [f"log: {leak}" for leak in detector.leaks(line)]
    assert not problems, "\n".join(problems[:40])
    # The crawl saw the real pages: boards, the team's submissions (page and API), the maintainers' console.
    for role, endpoint in (
        ("anonymous", "public.leaderboard"),
        ("owner", "submissions.show"),
        ("owner", "api_v1.get_submission"),
        ("other", "api_v1.leaderboard"),
        ("admin", "console.split"),
    ):
        assert (role, endpoint, 200) in seen, f"{role} never got {endpoint}"
