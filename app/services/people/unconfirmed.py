"""Accounts whose address was never confirmed within accounts.UNCONFIRMED_DAYS of registering are taken for
abandoned (`flask users prune-unconfirmed`, daily by serving/systemd/holdout-prune.timer): the teams they hold
alone are removed (people/teams.py `abandoned`: no submission, no other member), then the accounts, so their
addresses, team names and team pages are free again. An account with a submission is kept and listed; a team
with a submission or another member stays (the account's removal leaves it without a creator). Each removal
is in the audit log."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from app.db import db, write_transaction
from app.models import Submission, User, as_utc, utcnow
from app.services.audit import audit_log
from app.services.people import accounts, teams


@dataclass
class Pruned:
    teams: list[str] = field(default_factory=list)  # names of the teams removed
    accounts: list[str] = field(default_factory=list)  # addresses of the accounts removed
    kept: list[str] = field(default_factory=list)  # addresses of abandoned accounts kept: they have submissions


def prune(*, dry_run: bool = False) -> Pruned:
    """Remove what accounts never confirmed hold, and the accounts; with `dry_run`, only say what would go."""
    now = utcnow()
    pruned = Pruned()
    with write_transaction():
        for team in teams.abandoned_teams(now):
            pruned.teams.append(team.name)
            teams.release(team, f"made by an account not confirmed within {accounts.UNCONFIRMED_DAYS} days")
        stale = list(db.session.scalars(select(User).where(accounts.never_confirmed(now)).order_by(User.id)))
        for user in stale:
            if db.session.scalar(select(Submission.id).where(Submission.user_id == user.id).limit(1)) is not None:
                pruned.kept.append(user.email)
                continue
            pruned.accounts.append(user.email)
            audit_log.record(
                None,
                "user.prune",
                f"user {user.email}",
                {
                    "registered": f"{as_utc(user.created_at):%Y-%m-%d %H:%M} UTC",
                    "member_of": [membership.team.name for membership in user.memberships],
                    "why": f"address not confirmed within {accounts.UNCONFIRMED_DAYS} days",
                },
            )
            db.session.delete(user)
        if dry_run:
            db.session.rollback()
        else:
            db.session.commit()
    return pruned
