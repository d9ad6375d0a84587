"""submission_results: compact per-example results a board reads instead of the predictions (VQA v2's points)

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 20:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade():
    # Filled as submissions are scored or rescored: a board counts a submission without results (or with results of
    # an older gold file) from its predictions. A table apart from submissions: SQLite reads a row's later values
    # through its earlier ones' pages (the predictions: 7.2 MB a VQA v2 test-std entry).
    op.create_table(
        "submission_results",
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("submission_id"),
    )


def downgrade():
    op.drop_table("submission_results")
