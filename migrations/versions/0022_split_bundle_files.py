"""bundle settings: files kept as given, a planned reveal, board columns

A split keeps its annotation and choices files as the maintainer gave them (a bundle export writes them back)
and a planned reveal; a benchmark its boards' default columns.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 15:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("benchmarks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("board_columns", sa.Text(), nullable=True))
    # Nullable: splits added before this revision kept no original annotation or choices file.
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("annotations_path", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("annotations_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("choices_file_path", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("choices_file_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("reveal_planned_at", sa.DateTime(timezone=True), nullable=True))


def downgrade():
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.drop_column("reveal_planned_at")
        batch_op.drop_column("choices_file_sha256")
        batch_op.drop_column("choices_file_path")
        batch_op.drop_column("annotations_sha256")
        batch_op.drop_column("annotations_path")
    with op.batch_alter_table("benchmarks", schema=None) as batch_op:
        batch_op.drop_column("board_columns")
