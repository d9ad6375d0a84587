"""Migrations on SQLite and PostgreSQL: an empty database up to head, down and up again with data in it,
and no drift between the models and the migrations."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask_migrate import downgrade, upgrade
from sqlalchemy import func, inspect, select, text

from app import create_app, synthetic
from app.db import db
from app.models import Score, Submission
from app.schema import MIGRATIONS, head_revision, owned_by_the_app
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import leaderboards
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.conftest import make_config

pytestmark = pytest.mark.postgres(
    reason="migrations run batch mode on SQLite and ALTER on PostgreSQL: both must reach the models"
)

CORE_TABLES = {"benchmarks", "splits", "subsets", "submissions", "scores", "teams", "users", "memberships"}


def _revisions() -> list[str]:
    """Every revision, oldest first."""
    return [script.revision for script in reversed(list(ScriptDirectory(str(MIGRATIONS)).walk_revisions()))]


@pytest.fixture
def empty_app(database_backend, tmp_path):
    url = database_backend.new_database(tmp_path, name="empty")
    app = create_app(make_config(tmp_path, url))
    yield app
    with app.app_context():
        db.engine.dispose()
    database_backend.drop(url)


def _counts() -> dict[str, int]:
    db.session.rollback()  # a fresh snapshot after each migration
    counts = {
        table: db.session.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one() for table in sorted(CORE_TABLES)
    }
    db.session.rollback()
    return counts


def _current() -> str | None:
    with db.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def test_upgrade_empty_database_then_down_and_up_with_data(empty_app, database_backend):
    revisions = _revisions()
    assert revisions[0] == "0001" and revisions[-1] == head_revision()
    with empty_app.app_context():
        upgrade()
        assert _current() == head_revision()
        assert set(inspect(db.engine).get_table_names()) >= CORE_TABLES

        # Data at head: a benchmark with a split (and its derived subsets), a team, a scored submission.
        gold = synthetic.nlvr2_gold(240, split="dev", seed=3)
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        user = accounts.create_user("ada@example.org", "a long password")
        teams.create_team("Lab", user)
        first = submissions.submit(
            user,
            None,
            "nlvr2",
            "dev",
            submissions.Upload(synthetic.predictions("nlvr2", gold, 0.8, seed=1), "model A", description="first"),
        )
        submissions.publish(user, first.submission.id)
        expected_scores = visibility.scores_of(first.submission)
        before = _counts()
        assert before["submissions"] == 1 and before["scores"] > 0 and before["subsets"] >= 2

        # Step down one revision at a time to the first: the core rows survive every step.
        for target in reversed(revisions[:-1]):
            downgrade(revision=target)
            assert _current() == target
            assert _counts() == before, f"rows lost downgrading to {target}"

        upgrade()
        assert _current() == head_revision()
        assert _counts() == before
        stored = db.session.scalar(select(Submission).where(Submission.model_name == "model A"))
        assert visibility.scores_of(stored) == expected_scores
        assert stored.split.board_version == 0  # re-added with its server default

        # The upgraded database works: the leaderboard shows the entry, and a new upload is stored.
        board = leaderboards.board("nlvr2", "dev")
        assert [entry.model_name for entry in board.entries] == ["model A"]
        user = accounts.get_user_by_email("ada@example.org")
        second = submissions.submit(
            user, None, "nlvr2", "dev", submissions.Upload(synthetic.predictions("nlvr2", gold, 0.6, seed=2), "model B")
        )
        assert second.submission.status == "scored"
        assert db.session.scalar(select(func.count(Score.id)).where(Score.submission_id == second.submission.id))

        # All the way down removes every table; up again gives an empty, working schema.
        db.session.rollback()
        downgrade(revision="base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        upgrade()
        assert _counts() == dict.fromkeys(CORE_TABLES, 0)
        assert catalog.list_benchmarks() == []


def test_migrations_match_models(app, database_backend):
    """Autogenerate would find nothing to do: the migrations create exactly what the models describe."""
    with app.app_context(), db.engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={"compare_type": True, "compare_server_default": False, "include_object": owned_by_the_app},
        )
        diff = compare_metadata(context, db.metadata)
    assert diff == [], f"models and migrations differ on {database_backend.name}: {diff}"


def test_0010_reads_stored_submissions_of_hidden_splits_the_old_way(empty_app):
    """Submissions stored before migration 0010 have no probe summary: it marks the hidden splits holding any
    (the probe check then reads them by score as before), and no other split."""
    with empty_app.app_context():
        upgrade()
        gold = synthetic.nlvr2_gold(240, split="test", seed=3)
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        catalog.add_split("nlvr2", "test-u", gold, hidden=True, name="Test-U")
        catalog.add_split("nlvr2", "test-p", gold, hidden=True, name="Test-P")  # hidden, nothing stored
        user = accounts.create_user("ada@example.org", "a long password")
        teams.create_team("Lab", user)
        data = synthetic.predictions("nlvr2", gold, 0.8, seed=1)
        for slug in ("dev", "test-u"):
            submissions.submit(user, None, "nlvr2", slug, submissions.Upload(data, "model A"))
        flags = "SELECT slug, probe_unsummarised FROM splits ORDER BY slug"
        assert {slug: bool(flag) for slug, flag in db.session.execute(text(flags))} == dict.fromkeys(
            ("dev", "test-p", "test-u"), False
        )
        assert db.session.execute(text("SELECT COUNT(*) FROM probe_summaries")).scalar_one() == 1
        db.session.rollback()
        downgrade(revision="0009")
        upgrade()
        assert {slug: bool(flag) for slug, flag in db.session.execute(text(flags))} == {
            "dev": False,
            "test-p": False,
            "test-u": True,
        }
        assert db.session.execute(text("SELECT COUNT(*) FROM probe_summaries")).scalar_one() == 0
        db.session.rollback()


def test_0013_starts_each_accounts_ladder_from_its_best_among_the_teams(empty_app):
    """Migration 0013 adds the account's Ladder: an account's state starts from the best of the teams' Ladders
    that one of its own submissions set, so an attack under way through several teams gains nothing from the
    upgrade; teams made before it have no creator."""
    with empty_app.app_context():
        upgrade()
        gold = synthetic.nlvr2_gold(400, split="test", seed=3)
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-u", gold, hidden=True, name="Test-U")
        catalog.set_policy("nlvr2", "test-u", feedback="ladder", per_day=10)
        ada = accounts.create_user("ada@example.org", "a long password")
        teams.create_team("Lab", ada)
        teams.create_team("Side", ada)
        ids = []
        for team, accuracy in (("Lab", 0.7), ("Side", 0.9), ("Lab", 0.6)):
            data = synthetic.predictions("nlvr2", gold, accuracy, seed=len(ids), split="test")
            ids.append(submissions.submit(ada, team, "nlvr2", "test-u", submissions.Upload(data, team)).id)
        states = "SELECT user_id, best_submission_id FROM account_ladder_states"
        assert db.session.execute(text(states)).all() == [(ada.id, ids[1])]
        db.session.rollback()
        downgrade(revision="0012")
        upgrade()
        assert db.session.execute(text(states)).all() == [(1, ids[1])]
        assert db.session.execute(text("SELECT COUNT(*) FROM teams WHERE created_by_id IS NULL")).scalar_one() == 2
        db.session.rollback()
