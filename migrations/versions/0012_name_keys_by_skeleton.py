"""team name keys made again by Unicode's confusable skeleton (app/names.py), replacing the old hand map

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 15:20:00

"""

import logging

from alembic import op

from app.services.people.teams import recompute_name_keys

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")


def upgrade():
    # Keys stored by the old rule would let a new team pass for an old one ("RIVAIS" beside "Rivals").
    for team_id, name, why in recompute_name_keys(op.get_bind()):
        log.warning("team %s %r: %s; a maintainer may want to rename it", team_id, name, why)


def downgrade():
    pass  # the old rule is gone; the new keys are unique too, and stay
