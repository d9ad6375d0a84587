"""idempotency keys: an upload sent with an Idempotency-Key is stored once per account and key

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 15:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("idempotency_key", sa.String(length=255), nullable=True))
        batch_op.create_unique_constraint("uq_submissions_user_id_idempotency_key", ["user_id", "idempotency_key"])


def downgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint("uq_submissions_user_id_idempotency_key", type_="unique")
        batch_op.drop_column("idempotency_key")
