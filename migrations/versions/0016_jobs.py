"""jobs: heavy work off the request (board snapshots, rescoring), and procrastinate's tables on PostgreSQL

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 03:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

WAITING = "state = 'queued' AND attempts = 0"


def upgrade():
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=80), nullable=False),
        sa.Column("args", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_after", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("worker", sa.String(length=120), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.CheckConstraint("state IN ('queued', 'running', 'done', 'failed')", name="ck_jobs_state"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_jobs_waiting_key",
        "jobs",
        ["key"],
        unique=True,
        sqlite_where=sa.text(WAITING),
        postgresql_where=sa.text(WAITING),
    )
    op.create_index("ix_jobs_state_run_after", "jobs", ["state", "run_after"])
    op.create_index("ix_jobs_key_state", "jobs", ["key", "state"])
    if op.get_bind().dialect.name == "postgresql":
        # procrastinate (the worker's transport on PostgreSQL) keeps its queue in tables of its own: its schema
        # as the pinned version ships it (a later version's migrations go in a revision of their own).
        from procrastinate.schema import SchemaManager

        op.execute(SchemaManager.get_schema())


def downgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs, "
            "procrastinate_workers CASCADE"
        )
        op.execute(
            "DO $$ DECLARE f record; BEGIN FOR f IN SELECT p.oid::regprocedure AS sig FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema() "
            "AND p.proname LIKE 'procrastinate%' LOOP EXECUTE 'DROP FUNCTION IF EXISTS ' || f.sig || ' CASCADE'; "
            "END LOOP; END $$"
        )
        op.execute(
            "DROP TYPE IF EXISTS procrastinate_job_event_type, procrastinate_job_status, "
            "procrastinate_job_to_defer_v1 CASCADE"
        )
    op.drop_index("ix_jobs_key_state", table_name="jobs")
    op.drop_index("ix_jobs_state_run_after", table_name="jobs")
    op.drop_index("uq_jobs_waiting_key", table_name="jobs")
    op.drop_table("jobs")
