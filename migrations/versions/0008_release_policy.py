"""the feedback policy each stored release was made under; scores found by value (the probe check's window)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 09:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("release_policy", sa.String(length=8), nullable=True))
    # Stored releases on a blind test before its reveal were made under the split's policy of the time; the
    # current one is the best guess (null elsewhere: every score is shown there).
    op.execute(
        "UPDATE submissions SET release_policy = (SELECT splits.feedback FROM splits WHERE splits.id = "
        "submissions.split_id AND splits.hidden AND splits.revealed_at IS NULL) WHERE status = 'scored'"
    )
    op.create_index("ix_scores_subset_metric_value", "scores", ["subset", "metric", "value"], unique=False)


def downgrade():
    op.drop_index("ix_scores_subset_metric_value", table_name="scores")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("release_policy")
