"""probe summaries: a hidden split's submissions by count of correct units, with block counts (the probe check)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 12:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade():
    # One row per (split, count of correct units), the records of its submissions packed together: the probe
    # check reads a window of counts as ~140 rows, however many submissions the split holds.
    op.create_table(
        "probe_summaries",
        sa.Column("split_id", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("records", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["split_id"], ["splits.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("split_id", "correct"),
    )
    if op.get_bind().dialect.name == "postgresql":
        # Appended to on every upload and read whole: stored uncompressed, neither step recompresses.
        op.execute("ALTER TABLE probe_summaries ALTER COLUMN records SET STORAGE EXTERNAL")
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("probe_unsummarised", sa.Boolean(), server_default=sa.false(), nullable=False))
    # The submissions stored so far have no summary: on a hidden split the probe check reads them the old way
    # (by score), so it stays exact with no backfill here (`flask labels summarise` makes them).
    splits = sa.table(
        "splits",
        sa.column("id", sa.Integer),
        sa.column("hidden", sa.Boolean),
        sa.column("probe_unsummarised", sa.Boolean),
    )
    submissions = sa.table(
        "submissions", sa.column("split_id", sa.Integer), sa.column("status", sa.String), sa.column("id", sa.Integer)
    )
    stored = sa.select(submissions.c.id).where(submissions.c.split_id == splits.c.id, submissions.c.status == "scored")
    op.execute(
        splits.update().where(splits.c.hidden == sa.true(), stored.exists()).values(probe_unsummarised=sa.true())
    )


def downgrade():
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.drop_column("probe_unsummarised")
    op.drop_table("probe_summaries")
