"""tracks: named filters over a benchmark's entry fields, and each named track's board snapshot

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 17:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "tracks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("label", sa.String(length=120), nullable=False),
        sa.Column("conditions", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["benchmark_id"], ["benchmarks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("benchmark_id", "name"),
    )
    op.create_index("ix_tracks_benchmark_id", "tracks", ["benchmark_id"])
    op.create_table(
        "track_snapshots",
        sa.Column("split_id", sa.Integer(), nullable=False),
        sa.Column("track", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["split_id"], ["splits.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("split_id", "track"),
    )


def downgrade():
    op.drop_table("track_snapshots")
    op.drop_index("ix_tracks_benchmark_id", table_name="tracks")
    op.drop_table("tracks")
