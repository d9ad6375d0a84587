"""people, not teams: who created a team, an account's Ladder across its teams, the quota count per account

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 16:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# An account's Ladder starts from the best its own submissions hold among the teams' Ladders (the team's best
# set by one of its submissions), so an attack already under way through several teams gains nothing from the
# upgrade either. Ties go to the earliest submission.
BACKFILL = """
INSERT INTO account_ladder_states (user_id, split_id, best_loss, best_submission_id, updated_at)
SELECT user_id, split_id, best_loss, best_submission_id, updated_at FROM (
    SELECT s.user_id AS user_id, l.split_id AS split_id, l.best_loss AS best_loss,
           l.best_submission_id AS best_submission_id, l.updated_at AS updated_at,
           ROW_NUMBER() OVER (PARTITION BY s.user_id, l.split_id ORDER BY l.best_loss, l.best_submission_id) AS place
      FROM ladder_states AS l JOIN submissions AS s ON s.id = l.best_submission_id
     WHERE s.user_id IS NOT NULL AND l.best_loss IS NOT NULL
) AS ranked
WHERE place = 1
"""


def upgrade():
    # Teams made before this revision have no recorded creator: they count against nobody's daily creations.
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("created_by_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_teams_created_by_id"), ["created_by_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_teams_created_by_id_users"), "users", ["created_by_id"], ["id"], ondelete="SET NULL"
        )
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        # The quota count per account: one account's attempts on one split in a time window.
        batch_op.create_index("ix_submissions_user_split_created", ["user_id", "split_id", "created_at"], unique=False)
    op.create_table(
        "account_ladder_states",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("split_id", sa.Integer(), nullable=False),
        sa.Column("best_loss", sa.Float(), nullable=True),
        sa.Column("best_submission_id", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["best_submission_id"],
            ["submissions.id"],
            name=op.f("fk_account_ladder_states_best_submission_id_submissions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["split_id"], ["splits.id"], name=op.f("fk_account_ladder_states_split_id_splits"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_account_ladder_states_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_account_ladder_states")),
        sa.UniqueConstraint("user_id", "split_id", name=op.f("uq_account_ladder_states_user_id_split_id")),
    )
    with op.batch_alter_table("account_ladder_states", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_account_ladder_states_split_id"), ["split_id"], unique=False)
    op.execute(BACKFILL)


def downgrade():
    with op.batch_alter_table("account_ladder_states", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_account_ladder_states_split_id"))
    op.drop_table("account_ladder_states")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_user_split_created")
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_teams_created_by_id_users"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_teams_created_by_id"))
        batch_op.drop_column("created_by_id")
