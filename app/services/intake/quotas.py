"""Submission quotas: a team's attempts on a split per UTC day and month and in total, and the cap on
rejected files (a typo never costs a real slot, but cannot be used to hammer the server)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, case, func, select

from app import observability
from app.db import db
from app.models import Split, Submission, Team, User, as_utc, utcnow
from app.services import catalog
from app.services.errors import QuotaExceeded

# --- quotas --------------------------------------------------------------------------------------------


@dataclass
class QuotaStatus:
    per_day: int | None
    per_month: int | None
    total: int | None
    used_today: int
    used_month: int
    used_total: int
    rejected_today: int
    rejected_per_day: int

    def _left(self, limit: int | None, used: int) -> int | None:
        return None if limit is None else max(limit - used, 0)

    @property
    def left(self) -> dict[str, int | None]:
        """Submissions left today / this month / in total (None: unlimited)."""
        return {
            "today": self._left(self.per_day, self.used_today),
            "month": self._left(self.per_month, self.used_month),
            "total": self._left(self.total, self.used_total),
        }

    def as_dict(self) -> dict:
        return {
            "limits": {"per_day": self.per_day, "per_month": self.per_month, "total": self.total},
            "used": {"today": self.used_today, "month": self.used_month, "total": self.used_total},
            "left": self.left,
        }


def _day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(now: datetime) -> datetime:
    return _day_start(now).replace(day=1)


def _next_month(now: datetime) -> datetime:
    start = _month_start(now)
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


def _counts(day, month) -> tuple:
    """Scored attempts in total, this month and today, and rejected ones today (the QuotaStatus fields)."""
    scored, rejected = Submission.status == "scored", Submission.status == "rejected"
    return (
        func.count(case((scored, 1))),
        func.count(case((scored & (Submission.created_at >= month), 1))),
        func.count(case((scored & (Submission.created_at >= day), 1))),
        func.count(case((rejected & (Submission.created_at >= day), 1))),
    )


def _status(split: Split, counts) -> QuotaStatus:
    total, month, today, rejected = counts
    return QuotaStatus(
        per_day=split.per_day,
        per_month=split.per_month,
        total=split.total,
        used_today=today,
        used_month=month,
        used_total=total,
        rejected_today=rejected,
        rejected_per_day=split.rejected_per_day,
    )


def _quota_counts():
    return select(*_counts(bindparam("day"), bindparam("month"))).where(
        Submission.split_id == bindparam("split_id"), Submission.team_id == bindparam("team_id")
    )


# Built once: every upload runs it, and building the expression costs more than running it on SQLite.
QUOTA_COUNTS = _quota_counts()


def quota_status(split: Split, team: Team | int, now: datetime | None = None) -> QuotaStatus:
    """Counts of this team's attempts on this split: calendar day and month in UTC, and in total."""
    now = now or utcnow()
    row = db.session.execute(
        QUOTA_COUNTS,
        {
            "split_id": split.id,
            "team_id": team if isinstance(team, int) else team.id,
            "day": _day_start(now),
            "month": _month_start(now),
        },
    ).one()
    return _status(split, tuple(row))


def check_rejected_cap(status: QuotaStatus, now: datetime) -> None:
    if status.rejected_today >= status.rejected_per_day:
        observability.upload("over_quota")
        raise QuotaExceeded(
            f"the team has sent {status.rejected_per_day} invalid files today; fix the file and retry tomorrow",
            _day_start(now) + timedelta(days=1),
        )


def check_quota(status: QuotaStatus, now: datetime) -> None:
    refusal = _over_quota(status, now)
    if refusal is not None:
        observability.upload("over_quota")
        raise refusal


def _over_quota(status: QuotaStatus, now: datetime) -> QuotaExceeded | None:
    if status.total is not None and status.used_total >= status.total:
        return QuotaExceeded(f"the team has used all {status.total} submissions allowed on this split", None)
    if status.per_month is not None and status.used_month >= status.per_month:
        retry = _next_month(now)
        return QuotaExceeded(
            f"the team has used its {status.per_month} submissions for this month; the next slot opens "
            f"{retry:%Y-%m-%d %H:%M} UTC",
            retry,
        )
    if status.per_day is not None and status.used_today >= status.per_day:
        retry = _day_start(now) + timedelta(days=1)
        return QuotaExceeded(
            f"the team has used its {status.per_day} submissions for today; the next slot opens "
            f"{retry:%Y-%m-%d %H:%M} UTC",
            retry,
        )
    return None


def split_under_team_lock(split_id: int, team_id: int) -> Split:
    """The split's policy as it is now, with quota checks serialised per team: a row lock on the team on
    PostgreSQL, taken by the same statement (SQLite already holds its write lock)."""
    if db.session.get_bind().dialect.name == "sqlite":
        return db.session.get_one(Split, split_id)
    return db.session.scalars(
        select(Split).join(Team, Team.id == team_id).where(Split.id == split_id).with_for_update(of=Team)
    ).one()


@dataclass
class SplitChoice:
    """An open split on the Submit page, with each of the user's teams' quota on it."""

    split: Split
    quotas: dict[int, QuotaStatus]  # team id -> counts now


def upload_choices(user: User, now: datetime | None = None) -> list[SplitChoice]:
    """Every open split with the quota each of the user's teams has left there, in one query."""
    splits = catalog.open_splits()
    teams = [team.id for team in user.teams]
    now = now or utcnow()
    counts: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    if splits and teams:
        rows = db.session.execute(
            select(Submission.split_id, Submission.team_id, *_counts(_day_start(now), _month_start(now)))
            .where(Submission.team_id.in_(teams), Submission.split_id.in_([split.id for split in splits]))
            .group_by(Submission.split_id, Submission.team_id)
        )
        counts = {(row[0], row[1]): tuple(row[2:]) for row in rows}
    return [
        SplitChoice(split, {team: _status(split, counts.get((split.id, team), (0, 0, 0, 0))) for team in teams})
        for split in splits
    ]


def retry_after_seconds(exc: QuotaExceeded, now: datetime | None = None) -> int | None:
    if exc.retry_at is None:
        return None
    return max(int((as_utc(exc.retry_at) - (now or utcnow())).total_seconds()) + 1, 1)
