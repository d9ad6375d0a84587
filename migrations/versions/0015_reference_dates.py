"""a reference row's date: the day its figures were published

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 19:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade():
    # Rows added before this revision keep no date rather than the day they were added, which is not the
    # day their paper appeared (boards showed that day as the reference's date).
    with op.batch_alter_table("reference_rows", schema=None) as batch_op:
        batch_op.add_column(sa.Column("published_on", sa.Date(), nullable=True))


def downgrade():
    with op.batch_alter_table("reference_rows", schema=None) as batch_op:
        batch_op.drop_column("published_on")
