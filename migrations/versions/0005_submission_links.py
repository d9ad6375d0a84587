"""submission links up to 2,000 characters

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 06:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.alter_column(
            "paper_url", existing_type=sa.String(length=500), type_=sa.String(length=2000), existing_nullable=True
        )
        batch_op.alter_column(
            "code_url", existing_type=sa.String(length=500), type_=sa.String(length=2000), existing_nullable=True
        )


def downgrade():
    # Links longer than the old width are cut to it, so that the downgrade cannot fail on stored rows.
    op.execute("UPDATE submissions SET paper_url = substr(paper_url, 1, 500) WHERE length(paper_url) > 500")
    op.execute("UPDATE submissions SET code_url = substr(code_url, 1, 500) WHERE length(code_url) > 500")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.alter_column(
            "paper_url", existing_type=sa.String(length=2000), type_=sa.String(length=500), existing_nullable=True
        )
        batch_op.alter_column(
            "code_url", existing_type=sa.String(length=2000), type_=sa.String(length=500), existing_nullable=True
        )
