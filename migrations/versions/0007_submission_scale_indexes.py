"""indexes for a million stored submissions: a split's submissions in id order, a split's published entries

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 08:40:00

"""

from alembic import op

# revision identifiers, used by Alembic.
revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        # Rescoring (and the probe check) read a split's submissions in id order: without this, PostgreSQL
        # sorts every row of the split, predictions included, before the first one comes back.
        batch_op.create_index("ix_submissions_split_id_id", ["split_id", "id"], unique=False)
        # A board reads its published entries: a range of this index instead of every row of the split.
        batch_op.create_index("ix_submissions_split_published", ["split_id", "published_at"], unique=False)


def downgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_split_published")
        batch_op.drop_index("ix_submissions_split_id_id")
