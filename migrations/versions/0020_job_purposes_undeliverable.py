"""job purposes and dismissals, undeliverable addresses: a health check that tells operators the truth

Revision ID: 0020
Revises: 0018
Create Date: 2026-11-28 09:30:00

"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0018"
branch_labels = None
depends_on = None


def _letter_purpose(key: str, args: str) -> str:
    # As app/services/mail/outbox.purpose_of did when this revision was written: the letter's kind and the ids
    # it is about. Frozen here: a later change of that rule must not change what this revision did.
    try:
        found = json.loads(args or "{}")
    except ValueError:
        return key
    if not isinstance(found, dict) or "letter" not in found:
        return key
    ids = "".join(f":{found[name]}" for name in sorted(found) if name.endswith("_id"))
    return f"mail:{found['letter']}{ids}"[:80] if ids else key


def upgrade():
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("purpose", sa.String(length=80), nullable=True))
        batch_op.add_column(sa.Column("dismissed_at", sa.DateTime(timezone=True), nullable=True))
    jobs = sa.table(
        "jobs",
        sa.column("id", sa.Integer),
        sa.column("kind", sa.String),
        sa.column("key", sa.String),
        sa.column("args", sa.Text),
        sa.column("purpose", sa.String),
    )
    bind = op.get_bind()
    bind.execute(jobs.update().where(jobs.c.kind != "mail").values(purpose=jobs.c.key))
    # Letters had a key each (a random part): their purpose is read from their arguments, so that a failed
    # letter already stored is cleared by the next one of its kind to the same account.
    for row in bind.execute(sa.select(jobs.c.id, jobs.c.key, jobs.c.args).where(jobs.c.kind == "mail")).all():
        bind.execute(jobs.update().where(jobs.c.id == row.id).values(purpose=_letter_purpose(row.key, row.args)))
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.alter_column("purpose", existing_type=sa.String(length=80), nullable=False)
        batch_op.create_index("ix_jobs_purpose_state", ["purpose", "state"], unique=False)

    op.create_table(
        "undeliverable_addresses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=254), nullable=False),
        sa.Column("code", sa.Integer(), nullable=True),
        sa.Column("reply", sa.String(length=300), nullable=False),
        sa.Column("marked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("skipped", sa.Integer(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_undeliverable_addresses")),
        sa.UniqueConstraint("address", name=op.f("uq_undeliverable_addresses_address")),
    )


def downgrade():
    op.drop_table("undeliverable_addresses")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_purpose_state")
        batch_op.drop_column("dismissed_at")
        batch_op.drop_column("purpose")
