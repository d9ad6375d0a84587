"""configured task types: a benchmark's task config (canonical JSON), none for a built-in family

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 14:20:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("benchmarks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("task_config", sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table("benchmarks", schema=None) as batch_op:
        batch_op.drop_column("task_config")
