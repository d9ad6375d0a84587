"""accounts nobody can borrow, cross-team probe flags, label audits: session generations, team name keys,
the shared login throttle, gold file versions and the boards' changelog

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 05:30:00

"""

import sqlalchemy as sa
from alembic import op

from app.names import name_key

# revision identifiers, used by Alembic.
revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _fill_team_name_keys():
    """Existing teams get their key; where two already look alike the later one's key is made distinct
    (keeping both teams as they are) so the unique constraint can be added."""
    connection = op.get_bind()
    teams = sa.table(
        "teams", sa.column("id", sa.Integer), sa.column("name", sa.String), sa.column("name_key", sa.String)
    )
    seen = set()
    for team_id, name in connection.execute(sa.select(teams.c.id, teams.c.name).order_by(teams.c.id)).all():
        key = name_key(name)[:240] or f"#{team_id}"
        if key in seen:
            key = f"{key}#{team_id}"
        seen.add(key)
        connection.execute(teams.update().where(teams.c.id == team_id).values(name_key=key))


def upgrade():
    op.create_table(
        "auth_attempts",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "bucket", name=op.f("pk_auth_attempts")),
    )
    with op.batch_alter_table("auth_attempts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_auth_attempts_bucket"), ["bucket"], unique=False)

    op.create_table(
        "board_changelog",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("split_id", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["split_id"], ["splits.id"], name=op.f("fk_board_changelog_split_id_splits"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_board_changelog")),
    )
    with op.batch_alter_table("board_changelog", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_board_changelog_split_id"), ["split_id"], unique=False)

    op.create_table(
        "gold_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("split_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("gold_path", sa.String(length=500), nullable=False),
        sa.Column("gold_sha256", sa.String(length=64), nullable=False),
        sa.Column("previous_path", sa.String(length=500), nullable=False),
        sa.Column("previous_sha256", sa.String(length=64), nullable=False),
        sa.Column("labels_changed", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_id"], ["users.id"], name=op.f("fk_gold_versions_actor_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["split_id"], ["splits.id"], name=op.f("fk_gold_versions_split_id_splits"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gold_versions")),
        sa.UniqueConstraint("split_id", "version", name=op.f("uq_gold_versions_split_id_version")),
    )
    with op.batch_alter_table("gold_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gold_versions_split_id"), ["split_id"], unique=False)

    with op.batch_alter_table("probe_flags", schema=None) as batch_op:
        batch_op.add_column(sa.Column("other_team_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_probe_flags_other_team_id"), ["other_team_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_probe_flags_other_team_id_teams"), "teams", ["other_team_id"], ["id"], ondelete="CASCADE"
        )

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_generation", sa.Integer(), server_default="0", nullable=False))

    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name_key", sa.String(length=255), nullable=True))
    _fill_team_name_keys()
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.alter_column("name_key", existing_type=sa.String(length=255), nullable=False)
        batch_op.create_unique_constraint(batch_op.f("uq_teams_name_key"), ["name_key"])


def downgrade():
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_teams_name_key"), type_="unique")
        batch_op.drop_column("name_key")

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("session_generation")

    with op.batch_alter_table("probe_flags", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_probe_flags_other_team_id_teams"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_probe_flags_other_team_id"))
        batch_op.drop_column("other_team_id")

    with op.batch_alter_table("gold_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gold_versions_split_id"))
    op.drop_table("gold_versions")
    with op.batch_alter_table("board_changelog", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_board_changelog_split_id"))
    op.drop_table("board_changelog")
    with op.batch_alter_table("auth_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_auth_attempts_bucket"))
    op.drop_table("auth_attempts")
