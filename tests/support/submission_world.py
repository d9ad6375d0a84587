"""The submission service tests' world: NLVR2 with a public `dev` and a hidden `test-u` split (240 examples
each), team Lab with a member, team Other with an outsider, and an admin; built in an application context."""

from __future__ import annotations

from app import synthetic
from app.db import db
from app.models import Team
from app.services import catalog
from tests.support.users import make_user


def build_submission_world() -> dict:
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    gold = synthetic.nlvr2_gold(240, seed=4)
    catalog.add_split("nlvr2", "dev", gold)
    catalog.add_split("nlvr2", "test-u", synthetic.nlvr2_gold(240, split="test", seed=5), hidden=True)
    lab, other = Team(name="Lab"), Team(name="Other")
    db.session.add_all([lab, other])
    db.session.commit()
    member = make_user("member@example.org", team=lab)
    outsider = make_user("outsider@example.org", team=other)
    admin = make_user("admin@example.org", admin=True)
    return {
        "gold": gold,
        "hidden_gold": synthetic.nlvr2_gold(240, split="test", seed=5),
        "lab": lab,
        "member": member,
        "outsider": outsider,
        "admin": admin,
    }
