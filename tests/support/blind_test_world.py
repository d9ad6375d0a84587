"""A small blind test: NLVR2 dev and a hidden Test-U of 400 examples, two teams and a maintainer, and
prediction files wrong exactly where a test says (for the release, Ladder, probing and policy tests)."""

from __future__ import annotations

import io
import json

from app import synthetic
from app.db import db
from app.models import Team, User
from app.services import catalog
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from tests.support.users import make_user

N = 400


def gold_rows(gold: bytes) -> list[dict]:
    return [json.loads(line) for line in gold.decode().splitlines()]


def binary_file(gold: bytes, wrong) -> bytes:
    """A prediction file that is right everywhere except on the examples (gold order) in `wrong`."""
    wrong = set(wrong)
    lines = []
    for i, row in enumerate(gold_rows(gold)):
        right = row["label"].lower() == "true"
        lines.append(f"{row['identifier']},{(not right) if i in wrong else right}")
    return ("\n".join(lines) + "\n").encode()


def build_blind_test_world() -> dict:
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    gold = {"dev": synthetic.nlvr2_gold(N, seed=4), "test-u": synthetic.nlvr2_gold(N, split="test", seed=5)}
    catalog.add_split("nlvr2", "dev", gold["dev"])
    catalog.add_split("nlvr2", "test-u", gold["test-u"], hidden=True)
    catalog.set_policy("nlvr2", "test-u", per_day=None, per_month=None)  # these tests submit more than 5 a day
    lab, rivals = Team(name="Lab"), Team(name="Rivals")
    db.session.add_all([lab, rivals])
    db.session.commit()
    return {
        "gold": gold,
        "lab": lab,
        "rivals": rivals,
        "member": make_user("member@example.org", team=lab),
        "rival": make_user("rival@example.org", team=rivals),
        "admin": make_user("admin@example.org", admin=True),
    }


def submit(world, wrong, *, split="test-u", who="member", benchmark="nlvr2", data=None):
    upload = Upload(data=data if data is not None else binary_file(world["gold"][split], wrong), model_name="M")
    return submissions.submit(world[who], None, benchmark, split, upload)


def public_split(n: int = 120) -> bytes:
    """NLVR2 with a public `dev` split of `n` examples (in an application context); its gold file."""
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    gold = synthetic.nlvr2_gold(n, seed=4)
    catalog.add_split("nlvr2", "dev", gold)
    return gold


def api_upload(client, token, gold, *, split="dev", wrong=(), key=None, **extra):
    """POST /api/v1/submissions with a file wrong exactly at `wrong`, as the token's owner."""
    headers = {"Authorization": f"Bearer {token}"}
    if key:
        headers["Idempotency-Key"] = key
    return client.post(
        "/api/v1/submissions",
        data={
            "benchmark": "nlvr2",
            "split": split,
            "model_name": "M",
            **extra,
            "file": (io.BytesIO(binary_file(gold, wrong)), "predictions.csv"),
        },
        headers=headers,
        content_type="multipart/form-data",
    )


def hidden_test_u(feedback: str, sealed_fraction: float | None = None) -> tuple[bytes, User]:
    """NLVR2's hidden Test-U of 200 examples under ``feedback`` (no quota), and Ann, of the team Lab: its gold
    file and Ann (the mail tests' blind test)."""
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    gold = synthetic.nlvr2_gold(200, split="test", seed=5)
    catalog.add_split("nlvr2", "test-u", gold, hidden=True)
    catalog.set_policy(
        "nlvr2", "test-u", feedback=feedback, per_day=None, per_month=None, total=None, sealed_fraction=sealed_fraction
    )
    lab = Team(name="Lab", slug="lab")
    db.session.add(lab)
    db.session.commit()
    return gold, make_user("ann@example.org", team=lab)
