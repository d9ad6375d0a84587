"""Migration 0014 gives every submission the Ladder answered before it the verdict the Ladder gave: a new best
where its release holds a figure other than the team's previous answer's, not one elsewhere."""

from __future__ import annotations

import pytest
from flask_migrate import downgrade, upgrade
from sqlalchemy import text

from app import create_app, synthetic
from app.db import db
from app.services import catalog
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.conftest import make_config

pytestmark = pytest.mark.postgres(reason="the backfill's window function and booleans run on both databases")

VERDICTS = "SELECT id, ladder_improved FROM submissions ORDER BY id"


@pytest.fixture
def empty_app(database_backend, tmp_path):
    url = database_backend.new_database(tmp_path, name="empty")
    app = create_app(make_config(tmp_path, url))
    yield app
    with app.app_context():
        db.engine.dispose()
    database_backend.drop(url)


def test_0014_backfills_the_ladders_verdicts(empty_app):
    with empty_app.app_context():
        upgrade()
        gold = synthetic.nlvr2_gold(400, split="test", seed=3)
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-u", gold, hidden=True, name="Test-U")
        catalog.add_split("nlvr2", "dev", synthetic.nlvr2_gold(400, seed=4), name="Dev")
        catalog.set_policy("nlvr2", "test-u", feedback="ladder", per_day=20)
        ada = accounts.create_user("ada@example.org", "a long password")
        teams.create_team("Lab", ada)
        teams.create_team("Side", ada)
        sent = [("Lab", 0.7), ("Lab", 0.6), ("Lab", 0.95), ("Side", 0.5), ("Side", 0.6), ("Lab", 0.7)]
        for i, (team, accuracy) in enumerate(sent):
            data = synthetic.predictions("nlvr2", gold, accuracy, seed=i, split="test")
            submissions.submit(ada, team, "nlvr2", "test-u", submissions.Upload(data, f"m{i}"))
        dev = synthetic.predictions("nlvr2", synthetic.nlvr2_gold(400, seed=4), 0.7, seed=9)
        submissions.submit(ada, "Lab", "nlvr2", "dev", submissions.Upload(dev, "public"))
        recorded = db.session.execute(text(VERDICTS)).all()
        db.session.rollback()
        # Lab: new best, worse, new best, worse; Side (its sender has Lab's best): nothing to release twice.
        improved = [bool(value) if value is not None else None for _, value in recorded]
        assert improved == [True, False, True, False, False, False, None]

        downgrade(revision="0013")
        upgrade()
        backfilled = db.session.execute(text(VERDICTS)).all()
        db.session.rollback()
        assert backfilled == recorded
