"""split choices: a GQA split's official choices file (validity, plausibility), stored beside its gold file

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 06:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade():
    # Nullable: a split without a choices file (every split before this revision) reports no validity.
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("choices_path", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("choices_sha256", sa.String(length=64), nullable=True))


def downgrade():
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.drop_column("choices_sha256")
        batch_op.drop_column("choices_path")
