"""a blind test's sealed part: its fraction and secret seed

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 09:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sealed_fraction", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("seal_seed", sa.String(length=64), nullable=True))


def downgrade():
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.drop_column("seal_seed")
        batch_op.drop_column("sealed_fraction")
