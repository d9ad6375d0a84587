"""Builders for the API tests: a small benchmark, users in two teams, an admin, and their tokens."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from app import synthetic
from app.db import db
from app.models import User
from app.services import catalog
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.support.users import bearer, make_user

ROLES = ("anonymous", "other", "member", "admin")
PASSWORD = "not-used-here"  # the world's users log in with it where a test needs a session


@dataclass
class World:
    """Benchmark nlvr2 with a public `dev` and a hidden `test-u` split; team Lab (member), Rivals (other)."""

    gold: dict[str, bytes]
    tokens: dict[str, str | None] = field(default_factory=dict)

    def headers(self, role: str) -> dict[str, str]:
        return bearer(self.tokens.get(role))

    def predictions(self, split: str = "dev", accuracy: float = 0.8, seed: int = 0) -> bytes:
        return synthetic.predictions("nlvr2", self.gold[split], accuracy, seed=seed, split=split)


def build_world(app, n: int = 160) -> World:
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2", "Synthetic NLVR2.", "https://example.org/nlvr2")
        gold = {
            "dev": synthetic.nlvr2_gold(n, split="dev", seed=1),
            "test-u": synthetic.nlvr2_gold(n, split="test-u", seed=2),
        }
        catalog.add_split("nlvr2", "dev", gold["dev"], name="Dev")
        catalog.add_split("nlvr2", "test-u", gold["test-u"], hidden=True, name="Test-U")
        member, other, admin = (
            make_user(f"{role}@example.org", admin=role == "admin", password=PASSWORD)
            for role in ("member", "other", "admin")
        )
        teams.create_team("Lab", member)
        teams.create_team("Rivals", other)
        world = World(gold=gold)
        for role, user in (("member", member), ("other", other), ("admin", admin)):
            world.tokens[role] = accounts.create_token(user, "tests")[1]
        world.tokens["anonymous"] = None
        return world


def stored_submission(app, world: World, *, split: str = "dev", publish: bool = False, **kw) -> int:
    """A scored submission of team Lab, stored outside the quota through the service."""
    with app.app_context():
        team = teams.find_team("Lab")
        user = db.session.scalar(db.select(User).where(User.email == "member@example.org"))
        submission = submissions.store_scored(
            catalog.get_split("nlvr2", split),
            team,
            world.predictions(split, seed=kw.pop("seed", 7)),
            model_name=kw.pop("model_name", "stored-model"),
            user=user,
            publish=publish,
            **kw,
        )
        return submission.id


def post_file(client, world: World, role: str, data: bytes | None, **fields):
    """POST /api/v1/submissions as multipart; fields override the defaults (None drops a field)."""
    form = {"benchmark": "nlvr2", "split": "dev", "model_name": "my-model"}
    form.update(fields)
    form = {k: v for k, v in form.items() if v is not None}
    if data is not None:
        form["file"] = (io.BytesIO(data), "predictions.csv")
    return client.post(
        "/api/v1/submissions", data=form, headers=world.headers(role), content_type="multipart/form-data"
    )
