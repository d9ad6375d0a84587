"""verified entries: a maintainer's check of a published entry

A submission keeps when a maintainer marked it verified, the note and link they gave, and who did.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 15:30:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("verified_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("verified_note", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("verified_url", sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column("verified_by_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_submissions_verified_by_id_users"), "users", ["verified_by_id"], ["id"], ondelete="SET NULL"
        )


def downgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_submissions_verified_by_id_users"), type_="foreignkey")
        batch_op.drop_column("verified_by_id")
        batch_op.drop_column("verified_url")
        batch_op.drop_column("verified_note")
        batch_op.drop_column("verified_at")
