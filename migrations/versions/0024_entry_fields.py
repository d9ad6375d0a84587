"""entry fields: a benchmark's fact sheet, and each submission's values

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 16:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "entry_fields",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=120), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("choices", sa.Text(), nullable=True),
        sa.Column("unit", sa.String(length=40), nullable=True),
        sa.Column("required", sa.Boolean(), nullable=False),
        sa.Column("column", sa.Boolean(), nullable=False),
        sa.Column("filterable", sa.Boolean(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "type IN ('yesno', 'choice', 'integer', 'text', 'url')", name="ck_entry_fields_entry_field_type"
        ),
        sa.ForeignKeyConstraint(["benchmark_id"], ["benchmarks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("benchmark_id", "key"),
    )
    op.create_index("ix_entry_fields_benchmark_id", "entry_fields", ["benchmark_id"])
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fields", sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("fields")
    op.drop_index("ix_entry_fields_benchmark_id", table_name="entry_fields")
    op.drop_table("entry_fields")
