"""teams serve themselves: verified addresses, password resets, mail opt-outs, token expiry, invites by mail,
public team pages (slug, members shown), split phases

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 06:00:00

"""

import re
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def _slug(name: str) -> str:
    # app/names.py team_slug as it stood at this revision (a migration does not follow later code).
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")[:80].strip("-")
    if not re.search(r"[a-z]", slug):
        slug = f"team-{slug}" if slug else "team"
    return slug


def upgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email_verified_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("reset_generation", sa.Integer(), server_default="0", nullable=False))
        for column in ("notify_reveal", "notify_rescore", "notify_invite"):
            batch_op.add_column(sa.Column(column, sa.Boolean(), server_default=sa.true(), nullable=False))
    # Accounts made before addresses were verified keep working: they count as verified since they were made.
    op.execute("UPDATE users SET email_verified_at = created_at")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email", sa.String(length=254), nullable=True))
    with op.batch_alter_table("memberships", schema=None) as batch_op:
        batch_op.add_column(sa.Column("shown", sa.Boolean(), server_default=sa.false(), nullable=False))
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.add_column(sa.Column("opens_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("closes_at", sa.DateTime(timezone=True), nullable=True))

    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("slug", sa.String(length=100), nullable=True))
    bind = op.get_bind()
    taken: set[str] = set()
    for team_id, name in bind.execute(sa.text("SELECT id, name FROM teams ORDER BY id")).all():
        base = _slug(name)
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        bind.execute(sa.text("UPDATE teams SET slug = :slug WHERE id = :id"), {"slug": slug, "id": team_id})
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.alter_column("slug", existing_type=sa.String(length=100), nullable=False)
        batch_op.create_unique_constraint(batch_op.f("uq_teams_slug"), ["slug"])


def downgrade():
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_teams_slug"), type_="unique")
        batch_op.drop_column("slug")
    with op.batch_alter_table("splits", schema=None) as batch_op:
        batch_op.drop_column("closes_at")
        batch_op.drop_column("opens_at")
    with op.batch_alter_table("memberships", schema=None) as batch_op:
        batch_op.drop_column("shown")
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.drop_column("email")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("expires_at")
    with op.batch_alter_table("users", schema=None) as batch_op:
        for column in ("notify_invite", "notify_rescore", "notify_reveal", "reset_generation", "email_verified_at"):
            batch_op.drop_column(column)
