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
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        # Null for every submission stored so far: the probe check reads those the old way (by score), so
        # it stays exact with no backfill; a label correction summarises them.
        batch_op.add_column(sa.Column("probe_summarised", sa.Boolean(), nullable=True))
        batch_op.create_index(
            "ix_submissions_split_probe_summarised", ["split_id", "probe_summarised", "status"], unique=False
        )


def downgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_split_probe_summarised")
        batch_op.drop_column("probe_summarised")
    op.drop_table("probe_summaries")
