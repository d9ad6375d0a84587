"""submissions.results: compact per-example results a board reads instead of the predictions (VQA v2's points)

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
    # Nullable and filled as submissions are scored or rescored: a board counts a submission without them (or with
    # results of an older gold file) from its predictions.
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("results", sa.LargeBinary(), nullable=True))


def downgrade():
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("results")
