"""The security tests' world, built through the API as teams would build it.

Benchmark `nlvr2` with a public split `dev` and three hidden splits, one per feedback policy: `test-full`,
`test-ladder`, `test-none`. The hidden splits' identifiers carry a recognisable prefix (`hfull-...`,
`hladder-...`, `hnone-...`) so a response that names one next to its label can be found. Two teams (Lab:
the owner; Rivals: the other team) submit on every split, publish one submission each and leave one
unpublished; Lab also sends rejected files to every hidden split, whose faulty lines predict the opposite
of the gold label (so an error message that echoes the team's own line can never pass for the gold one).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

from sqlalchemy import func, literal, select, union_all

from app import synthetic
from app.db import db
from app.models import Submission, Team
from app.services import catalog
from app.services.people import accounts, teams
from tests.support.users import bearer, make_user

EMAILS = {"owner": "owner@example.org", "other": "other@example.org", "admin": "admin@example.org"}
ROLES = ("anonymous", "other", "owner", "admin")
TEAM_OF = {"owner": "Lab", "other": "Rivals"}
HIDDEN = {"test-full": ("hfull", "full"), "test-ladder": ("hladder", "ladder"), "test-none": ("hnone", "none")}
N = 160


@dataclass
class World:
    gold: dict[str, bytes]  # split slug -> gold file bytes
    labels: dict[str, dict[str, bool]]  # hidden split slug -> identifier -> label
    tokens: dict[str, str] = field(default_factory=dict)  # role -> API token
    submissions: dict[str, int] = field(default_factory=dict)  # name -> id
    team_ids: dict[str, int] = field(default_factory=dict)
    invite: str = ""
    answers: list[tuple[str, str, str]] = field(default_factory=list)  # (role, what, body) of world-building
    _rows: dict[str, list[dict]] = field(default_factory=dict, repr=False)

    def headers(self, role: str) -> dict[str, str]:
        return bearer(self.tokens.get(role))

    def rows(self, split: str) -> list[dict]:
        if split not in self._rows:
            self._rows[split] = [json.loads(line) for line in self.gold[split].decode().splitlines()]
        return self._rows[split]

    def negated_line(self, split: str, index: int) -> str:
        row = self.rows(split)[index]
        return f"{row['identifier']},{'False' if row['label'].lower() == 'true' else 'True'}"


def _post(client, world: World, role: str, split: str, data: bytes, **fields):
    form = {
        "benchmark": "nlvr2",
        "split": split,
        "model_name": fields.pop("model_name", f"{role} model"),
        "file": (io.BytesIO(data), fields.pop("filename", "predictions.csv")),
        **fields,
    }
    response = client.post(
        "/api/v1/submissions", data=form, headers=world.headers(role), content_type="multipart/form-data"
    )
    world.answers.append((role, f"POST /api/v1/submissions {split}", response.get_data(as_text=True)))
    return response


def build(app, *, published_fields: dict | None = None, team_names: dict | None = None) -> World:
    """The world described above; `published_fields` override what published submissions say about
    themselves (model_name, description, paper_url, code_url) and `team_names` the teams' names (role ->
    name), e.g. with XSS payloads."""
    gold = {"dev": synthetic.nlvr2_gold(N, split="dev", seed=11)}
    for slug, (prefix, _) in HIDDEN.items():
        gold[slug] = synthetic.nlvr2_gold(N, split=prefix, seed=len(prefix))
    world = World(gold=gold, labels={})
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2", "Synthetic NLVR2.", "https://example.org/nlvr2")
        catalog.add_split("nlvr2", "dev", gold["dev"], name="Dev")
        for slug, (_, feedback) in HIDDEN.items():
            catalog.add_split("nlvr2", slug, gold[slug], hidden=True, name=slug.title())
            catalog.set_policy("nlvr2", slug, feedback=feedback)
        users = {role: make_user(email, admin=role == "admin") for role, email in EMAILS.items()}
        for role in ("owner", "other"):
            team = teams.create_team((team_names or TEAM_OF)[role], users[role])
            world.team_ids[role] = team.id
        for role, user in users.items():
            world.tokens[role] = accounts.create_token(user, "security tests")[1]
        world.invite = teams.create_invite(db.session.get(Team, world.team_ids["owner"]), users["owner"])
        for slug in HIDDEN:
            world.labels[slug] = {row["identifier"]: row["label"].lower() == "true" for row in world.rows(slug)}
    client = app.test_client()
    fields = published_fields or {}
    for split in ("dev", *HIDDEN):
        for role in ("owner", "other"):
            for seed, publish in ((1, True), (2, False)):
                data = synthetic.predictions("nlvr2", gold[split], 0.7, seed=seed, split=split)
                extra = {key: value for key, value in fields.items() if publish}
                response = _post(client, world, role, split, data, **extra)
                assert response.status_code == 201, response.get_data(as_text=True)
                name = f"{role}:{split}:{'published' if publish else 'unpublished'}"
                world.submissions[name] = response.json["id"]
                if publish:
                    body = {"description": fields.get("description", f"{role}'s model on {split}")}
                    answer = client.post(
                        f"/api/v1/submissions/{response.json['id']}/publish", json=body, headers=world.headers(role)
                    )
                    world.answers.append((role, "publish", answer.get_data(as_text=True)))
                    assert answer.status_code == 200, answer.get_data(as_text=True)
    for split in HIDDEN:
        lines = [world.negated_line(split, i) for i in range(N)]
        # A duplicate, an unknown identifier, a bad label for a real identifier, a bad column count, and
        # the rest missing: every kind of problem that names a line or an identifier.
        identifier = world.rows(split)[5]["identifier"]
        faulty = lines[:4] + [lines[2], f"{HIDDEN[split][0]}-9999-0-0,true", f"{identifier},maybe", "x,y,z"]
        response = _post(client, world, "owner", split, ("\n".join(faulty) + "\n").encode())
        assert response.status_code == 422, response.get_data(as_text=True)
        world.submissions[f"owner:{split}:rejected"] = _last_rejected(app)
        truncated = "\n".join(lines[: N // 2]) + "\n"
        response = _post(client, world, "owner", split, truncated.encode())
        assert response.status_code == 422
    return world


def _last_rejected(app) -> int:
    with app.app_context():
        return db.session.scalar(
            select(Submission.id).where(Submission.status == "rejected").order_by(Submission.id.desc()).limit(1)
        )


def table_counts(app) -> dict[str, int]:
    """Rows per table: a snapshot to compare before and after requests that must change nothing."""
    # One query for every table: the security tests take hundreds of snapshots, and on PostgreSQL a round
    # trip per table made them most of those tests' time.
    counts = union_all(
        *(
            select(literal(table.name).label("name"), func.count().label("rows")).select_from(table)
            for table in db.metadata.sorted_tables
        )
    )
    with app.app_context():
        return dict(db.session.execute(counts).tuples().all())
