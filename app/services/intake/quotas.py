"""Submission quotas: a team's attempts on a split per UTC day and month and in total, and the cap on
rejected files (a typo never costs a real slot, but cannot be used to hammer the server).

People, not teams: the same limits count the submitting account's attempts on the split through all its
teams too, and the stricter wins (a status carries the account's as `account`), so one person's several teams
do not multiply the quota. Both are counted under the write lock of the upload's transaction, serialised on the
team's and the account's rows (`split_under_locks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from sqlalchemy import bindparam, case, func, select

from app import observability
from app.db import db
from app.models import Split, Submission, Team, User, as_utc, utcnow
from app.services import catalog
from app.services.catalog import entry_fields, phases
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
    whose: str = "team"  # "team", or "account": the submitting account's attempts through all its teams
    # The submitting account's counts on the split beside a team's (None: not counted, e.g. a maintainer's view).
    account: QuotaStatus | None = None

    def _left(self, limit: int | None, used: int) -> int | None:
        return None if limit is None else max(limit - used, 0)

    @property
    def counts(self) -> list[QuotaStatus]:
        """This status and the account's beside it: every count a new attempt must fit."""
        return [self] if self.account is None else [self, *self.account.counts]

    @property
    def shown(self) -> QuotaStatus:
        """The stricter of the team's and the account's counts (the same limits: the larger count)."""
        counts = self.counts
        return replace(
            self,
            used_today=max(c.used_today for c in counts),
            used_month=max(c.used_month for c in counts),
            used_total=max(c.used_total for c in counts),
            rejected_today=max(c.rejected_today for c in counts),
            account=None,
        )

    @property
    def left(self) -> dict[str, int | None]:
        """Submissions left today / this month / in total (None: unlimited): the stricter of the team's and
        the account's."""
        shown = self.shown
        return {
            "today": self._left(shown.per_day, shown.used_today),
            "month": self._left(shown.per_month, shown.used_month),
            "total": self._left(shown.total, shown.used_total),
        }

    def as_dict(self) -> dict:
        shown = self.shown
        return {
            "limits": {"per_day": shown.per_day, "per_month": shown.per_month, "total": shown.total},
            "used": {"today": shown.used_today, "month": shown.used_month, "total": shown.used_total},
            "left": self.left,
        }

    def with_one_more(self) -> QuotaStatus:
        """The counts after one more scored submission (by the account, if counted)."""
        return replace(
            self,
            used_today=self.used_today + 1,
            used_month=self.used_month + 1,
            used_total=self.used_total + 1,
            account=None if self.account is None else self.account.with_one_more(),
        )


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


def _status(split: Split, counts, whose: str = "team") -> QuotaStatus:
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
        whose=whose,
    )


def _quota_counts(owner):
    return select(*_counts(bindparam("day"), bindparam("month"))).where(
        Submission.split_id == bindparam("split_id"), owner == bindparam("owner_id")
    )


# Built once: every upload runs them, and building the expression costs more than running it on SQLite.
QUOTA_COUNTS = _quota_counts(Submission.team_id)
ACCOUNT_QUOTA_COUNTS = _quota_counts(Submission.user_id)


def _id(row: Team | User | int) -> int:
    return row if isinstance(row, int) else row.id


def _counted(query, split: Split, owner_id: int, now: datetime) -> tuple:
    parameters = {"split_id": split.id, "owner_id": owner_id, "day": _day_start(now), "month": _month_start(now)}
    return tuple(db.session.execute(query, parameters).one())


def quota_status(
    split: Split, team: Team | int, now: datetime | None = None, user: User | int | None = None
) -> QuotaStatus:
    """Counts of this team's attempts on this split: calendar day and month in UTC, and in total; with `user`,
    the account's attempts there through all its teams beside them (`account`)."""
    now = now or utcnow()
    status = _status(split, _counted(QUOTA_COUNTS, split, _id(team), now))
    if user is not None:
        status.account = _status(split, _counted(ACCOUNT_QUOTA_COUNTS, split, _id(user), now), "account")
    return status


_REJECTED = {
    "team": "the team has sent {n} invalid files today; fix the file and retry tomorrow",
    "account": (
        "you have sent {n} invalid files today on this split (through all your teams); fix the file and retry tomorrow"
    ),
}
_OVER = {
    "team": {
        "total": "the team has used all {n} submissions allowed on this split",
        "month": "the team has used its {n} submissions for this month",
        "day": "the team has used its {n} submissions for today",
    },
    "account": {
        "total": "you have used all {n} submissions allowed on this split (through all your teams)",
        "month": "you have used your {n} submissions for this month on this split (through all your teams)",
        "day": "you have used your {n} submissions for today on this split (through all your teams)",
    },
}


def check_rejected_cap(status: QuotaStatus, now: datetime) -> None:
    """Refuse another invalid file when the team, or the account through all its teams, sent the day's cap."""
    for counted in status.counts:
        if counted.rejected_today >= counted.rejected_per_day:
            observability.upload("over_quota")
            raise QuotaExceeded(
                _REJECTED[counted.whose].format(n=counted.rejected_per_day), _day_start(now) + timedelta(days=1)
            )


def check_quota(status: QuotaStatus, now: datetime) -> None:
    """Refuse a scored submission over the team's quota or the account's (the later reopening wins)."""
    refusals = [found for found in (_over_quota(counted, now) for counted in status.counts) if found is not None]
    if refusals:
        observability.upload("over_quota")
        never = [refusal for refusal in refusals if refusal.retry_at is None]
        raise never[0] if never else max(refusals, key=lambda refusal: refusal.retry_at or now)


def _over_quota(status: QuotaStatus, now: datetime) -> QuotaExceeded | None:
    words = _OVER[status.whose]
    if status.total is not None and status.used_total >= status.total:
        return QuotaExceeded(words["total"].format(n=status.total), None)
    if status.per_month is not None and status.used_month >= status.per_month:
        retry = _next_month(now)
        return QuotaExceeded(
            f"{words['month'].format(n=status.per_month)}; the next slot opens {retry:%Y-%m-%d %H:%M} UTC", retry
        )
    if status.per_day is not None and status.used_today >= status.per_day:
        retry = _day_start(now) + timedelta(days=1)
        return QuotaExceeded(
            f"{words['day'].format(n=status.per_day)}; the next slot opens {retry:%Y-%m-%d %H:%M} UTC", retry
        )
    return None


def split_under_locks(split_id: int, team_id: int, user_id: int) -> Split:
    """The split's policy as it is now, with quota checks serialised per team and per account: row locks on
    the team and the user on PostgreSQL, taken by the same statement (SQLite already holds its write lock)."""
    if db.session.get_bind().dialect.name == "sqlite":
        return db.session.get_one(Split, split_id)
    return db.session.scalars(
        select(Split)
        .join(Team, Team.id == team_id)
        .join(User, User.id == user_id)
        .where(Split.id == split_id)
        .with_for_update(of=[Team, User])
    ).one()


@dataclass
class SplitChoice:
    """An open split on the Submit page, with each of the user's teams' quota on it, and its phase now (a split
    not open yet, or closed since its closing time, is offered marked so: an upload is refused, 409)."""

    split: Split
    quotas: dict[int, QuotaStatus]  # team id -> counts now
    phase: phases.Phase | None = None
    entry_fields: list[entry_fields.FieldSpec] = field(default_factory=list)  # its benchmark's, in their order

    @property
    def label(self) -> str:
        """The split as the Submit page's choice names it: 'NLVR2 — Test-U (hidden) — closed since ...'."""
        split = self.split
        text = f"{split.benchmark.name} — {split.name}{' (hidden)' if split.hidden else ''}"
        if self.phase is not None and self.phase.state != phases.OPEN and self.phase.sentence:
            text += f" — {self.phase.sentence[:1].lower()}{self.phase.sentence[1:]}"
        return text


def upload_choices(user: User, now: datetime | None = None) -> list[SplitChoice]:
    """Every open split with the quota each of the user's teams has left there (the stricter of the team's and
    the user's own through all their teams), and each benchmark's entry fields, in three queries."""
    splits = catalog.open_splits()
    teams = [team.id for team in user.teams]
    now = now or utcnow()
    counts: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    own: dict[int, tuple[int, int, int, int]] = {}
    if splits and teams:
        split_ids = [split.id for split in splits]
        window = _counts(_day_start(now), _month_start(now))
        rows = db.session.execute(
            select(Submission.split_id, Submission.team_id, *window)
            .where(Submission.team_id.in_(teams), Submission.split_id.in_(split_ids))
            .group_by(Submission.split_id, Submission.team_id)
        )
        counts = {(row[0], row[1]): tuple(row[2:]) for row in rows}
        rows = db.session.execute(
            select(Submission.split_id, *window)
            .where(Submission.user_id == user.id, Submission.split_id.in_(split_ids))
            .group_by(Submission.split_id)
        )
        own = {row[0]: tuple(row[1:]) for row in rows}
    nothing = (0, 0, 0, 0)
    choices = []
    specs = entry_fields.specs_by_benchmark(sorted({split.benchmark_id for split in splits}))
    for split in splits:
        quotas = {}
        for team in teams:
            status = _status(split, counts.get((split.id, team), nothing))
            status.account = _status(split, own.get(split.id, nothing), "account")
            quotas[team] = status
        choices.append(SplitChoice(split, quotas, phases.of(split, now), specs[split.benchmark_id]))
    return choices


def retry_after_seconds(exc: QuotaExceeded, now: datetime | None = None) -> int | None:
    if exc.retry_at is None:
        return None
    return max(int((as_utc(exc.retry_at) - (now or utcnow())).total_seconds()) + 1, 1)
