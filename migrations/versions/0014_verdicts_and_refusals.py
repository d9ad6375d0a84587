"""verdicts: whether the Ladder's answer to a submission was a new best, a rejected file's refusal sentence, a
team's submissions by id

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 10:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Submissions the Ladder answered before this revision: a new best always released a figure other than the
# team's previous one (a strictly smaller count of errors), and an answer that was not a new best released
# the team's previous figure again, or nothing while it had none. So a release set a new best exactly when it
# holds a figure and differs from the release of the team's previous Ladder answer on the split.
BACKFILL = """
UPDATE submissions SET ladder_improved = (
    SELECT CASE
        WHEN ranked.released IS NULL THEN FALSE
        WHEN ranked.previous IS NULL OR ranked.previous <> ranked.released THEN TRUE
        ELSE FALSE
    END
    FROM (
        SELECT id, released,
               LAG(released) OVER (PARTITION BY team_id, split_id ORDER BY id) AS previous
          FROM submissions
         WHERE release_policy = 'ladder' AND status = 'scored'
    ) AS ranked
    WHERE ranked.id = submissions.id
)
WHERE release_policy = 'ladder' AND status = 'scored'
"""


def upgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ladder_improved", sa.Boolean(), nullable=True))
        # Files rejected before it keep their problems alone (their refusal sentence was not kept).
        batch_op.add_column(sa.Column("refusal", sa.Text(), nullable=True))
        batch_op.create_index("ix_submissions_team_id_id", ["team_id", "id"], unique=False)
    op.execute(BACKFILL)


def downgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_team_id_id")
        batch_op.drop_column("refusal")
        batch_op.drop_column("ladder_improved")
