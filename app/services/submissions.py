"""Submissions: validate, score and store an upload under the split's quotas; publication; moderation.

Every attempt is stored with its status: scored submissions count against the quotas, rejected files
against a separate daily cap, so a typo never costs a real slot but cannot be used to hammer the server.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from flask import current_app
from sqlalchemy import bindparam, case, func, insert, select
from sqlalchemy.orm import joinedload

from app import observability
from app.db import db, release_write_lock, write_transaction
from app.evaluation import Problem, ValidationError, get_task
from app.models import Score, Split, Submission, Team, User, as_utc, utcnow
from app.services import audit, catalog, uploads
from app.services import integrity
from app.services.errors import Conflict, Forbidden, InvalidInput, NotFound, QuotaExceeded, TooLarge

Scores = dict[str, dict[str, float]]
MAX_URL = 2000  # characters of a paper or code link
MAX_MODEL_NAME = 200
MAX_DESCRIPTION = 5000
# Fields in words, for messages people read on a page; the API's name follows in parentheses.
FIELD_WORDS = {"model_name": "The model name", "description": "The description", "paper_url": "The paper URL",
               "code_url": "The code URL"}


def field_error(field: str, text: str) -> InvalidInput:
    return InvalidInput(f"{FIELD_WORDS[field]} ({field}) {text}", field=field)


URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)


def max_upload_bytes() -> int:
    return int(current_app.config["MAX_UPLOAD_MB"]) * 1024 * 1024


# --- scoring -------------------------------------------------------------------------------------------


def _score_upload(inputs: catalog.ScoringInputs, data: bytes):
    """Parse and score an upload; pure CPU work on what catalog.scoring_inputs loaded."""
    task, gold, subsets = inputs.task, inputs.gold, inputs.subsets
    limit = max_upload_bytes()
    if len(data) > limit:
        raise TooLarge(
            f"the file is {len(data) / 1048576:.1f} MB, over the limit of {current_app.config['MAX_UPLOAD_MB']} MB"
        )
    try:
        predictions = task.parse(data, gold, max_bytes=limit)
    except ValidationError as exc:
        raise InvalidInput(_problem_summary(exc.problems), exc.problems) from exc
    return task, predictions, task.score(gold, predictions, subsets)


def _parse_and_score(split: Split, data: bytes):
    return _score_upload(catalog.scoring_inputs(split), data)


def _problem_summary(problems: list[Problem]) -> str:
    count = len(problems)
    return f"invalid prediction file: {problems[0].message}" + (f" (and {count - 1} more)" if count > 1 else "")


def evaluate(benchmark_slug: str, split_slug: str, data: bytes) -> Scores:
    """Score a prediction file against a split without storing anything (maintainers' dry run)."""
    split = catalog.get_split(benchmark_slug, split_slug)
    _, _, scores = _parse_and_score(split, data)
    return scores


def score_rows(scores: Scores) -> list[Score]:
    return [
        Score(subset=subset, metric=metric, value=float(value))
        for subset, metrics in scores.items()
        for metric, value in metrics.items()
    ]


def store_scored(
    split: Split,
    team: Team,
    data: bytes,
    *,
    model_name: str,
    user: User | None = None,
    description: str = "",
    paper_url: str | None = None,
    code_url: str | None = None,
    anonymous: bool = False,
    publish: bool = False,
    submitted_at: datetime | None = None,
) -> Submission:
    """Validate, score and store one submission outside any quota (the demo and maintainers' imports;
    `submitted_at` dates an entry imported from before the server kept it)."""
    inputs = catalog.scoring_inputs(split)
    task, predictions, scores = _score_upload(inputs, data)
    digest = uploads.sha256(data)
    moment = submitted_at or utcnow()
    submission = Submission(
        split=split, team=team, user=user, status="scored", model_name=model_name, description=description,
        paper_url=paper_url, code_url=code_url, anonymous=anonymous, file_sha256=digest,
        file_size=len(data), predictions=task.encode(predictions), published_at=moment if publish else None,
        created_at=moment,
    )
    submission.scores = score_rows(scores)
    db.session.add(submission)
    db.session.flush()  # the Ladder and probe flags refer to the submission by id
    release = _release_now(split, submission, inputs, predictions, scores)
    submission.released = None if release is None else json.dumps(release)
    if publish:
        split.board_version += 1
    db.session.add(submission)
    _commit_keeping(uploads.keep(data, digest))
    return submission


def _commit_keeping(kept: uploads.Pending) -> None:
    """Commit with the original written, then move it into place; if the commit fails, remove it."""
    try:
        kept.wait()  # an acknowledged upload always has its original
        db.session.commit()
    except BaseException:
        kept.discard()
        raise
    kept.finish()


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


def _quota_counts():
    scored, rejected = Submission.status == "scored", Submission.status == "rejected"
    day, month = bindparam("day"), bindparam("month")
    return select(
        func.count(case((scored, 1))),
        func.count(case((scored & (Submission.created_at >= month), 1))),
        func.count(case((scored & (Submission.created_at >= day), 1))),
        func.count(case((rejected & (Submission.created_at >= day), 1))),
    ).where(Submission.split_id == bindparam("split_id"), Submission.team_id == bindparam("team_id"))


# Built once: every upload runs it, and building the expression costs more than running it on SQLite.
QUOTA_COUNTS = _quota_counts()


def quota_status(split: Split, team: Team | int, now: datetime | None = None) -> QuotaStatus:
    """Counts of this team's attempts on this split: calendar day and month in UTC, and in total."""
    now = now or utcnow()
    row = db.session.execute(QUOTA_COUNTS, {
        "split_id": split.id, "team_id": team if isinstance(team, int) else team.id,
        "day": _day_start(now), "month": _month_start(now),
    }).one()
    return QuotaStatus(
        per_day=split.per_day, per_month=split.per_month, total=split.total,
        used_total=row[0], used_month=row[1], used_today=row[2], rejected_today=row[3],
        rejected_per_day=split.rejected_per_day,
    )


def _check_rejected_cap(status: QuotaStatus, now: datetime) -> None:
    if status.rejected_today >= status.rejected_per_day:
        observability.upload("over_quota")
        raise QuotaExceeded(
            f"the team has sent {status.rejected_per_day} invalid files today; fix the file and retry "
            "tomorrow", _day_start(now) + timedelta(days=1),
        )


def _check_quota(status: QuotaStatus, now: datetime) -> None:
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
            f"{retry:%Y-%m-%d %H:%M} UTC", retry,
        )
    if status.per_day is not None and status.used_today >= status.per_day:
        retry = _day_start(now) + timedelta(days=1)
        return QuotaExceeded(
            f"the team has used its {status.per_day} submissions for today; the next slot opens "
            f"{retry:%Y-%m-%d %H:%M} UTC", retry,
        )
    return None


def _split_under_team_lock(split_id: int, team_id: int) -> Split:
    """The split's policy as it is now, with quota checks serialised per team: a row lock on the team on
    PostgreSQL, taken by the same statement (SQLite already holds its write lock)."""
    if db.session.get_bind().dialect.name == "sqlite":
        return db.session.get(Split, split_id)
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
        scored, rejected = Submission.status == "scored", Submission.status == "rejected"
        day, month = _day_start(now), _month_start(now)
        rows = db.session.execute(
            select(
                Submission.split_id, Submission.team_id,
                func.count(case((scored, 1))),
                func.count(case((scored & (Submission.created_at >= month), 1))),
                func.count(case((scored & (Submission.created_at >= day), 1))),
                func.count(case((rejected & (Submission.created_at >= day), 1))),
            )
            .where(Submission.team_id.in_(teams), Submission.split_id.in_([split.id for split in splits]))
            .group_by(Submission.split_id, Submission.team_id)
        )
        counts = {(row[0], row[1]): tuple(row[2:]) for row in rows}

    def status(split: Split, team: int) -> QuotaStatus:
        total, month, today, rejected = counts.get((split.id, team), (0, 0, 0, 0))
        return QuotaStatus(per_day=split.per_day, per_month=split.per_month, total=split.total,
                           used_today=today, used_month=month, used_total=total, rejected_today=rejected,
                           rejected_per_day=split.rejected_per_day)

    return [SplitChoice(split, {team: status(split, team) for team in teams}) for split in splits]


# --- submitting ----------------------------------------------------------------------------------------


@dataclass
class Upload:
    data: bytes
    model_name: str
    description: str = ""
    paper_url: str | None = None
    code_url: str | None = None
    anonymous: bool = False


@dataclass
class SubmitResult:
    """The answer to an upload, read inside its transaction: the caller needs no query to report it."""

    submission: Submission  # expired by the commit: reading it queries again
    id: int
    benchmark: str  # slugs
    split: str
    team: str
    model_name: str
    created_at: datetime
    scores: Scores | None  # what the split's feedback policy releases to the team now
    quota: QuotaStatus


def _clean_url(field: str, value: str | None) -> str | None:
    value = (value or "").strip()
    if not value:
        return None
    if len(value) > MAX_URL or not URL.match(value) or "\x00" in value:
        raise field_error(field, f"must be an http:// or https:// address of at most {MAX_URL:,} characters")
    return value


def _clean_description(value: str | None) -> str:
    description = (value or "").strip()
    if len(description) > MAX_DESCRIPTION:
        raise field_error("description", f"must have at most {MAX_DESCRIPTION:,} characters")
    if "\x00" in description:  # PostgreSQL text cannot hold one; no description needs one
        raise field_error("description", "must not contain NUL bytes")
    return description


def _clean_upload(upload: Upload) -> Upload:
    name = (upload.model_name or "").strip()
    if not name:
        raise field_error("model_name", "is required: name the model these predictions come from")
    if len(name) > MAX_MODEL_NAME:
        raise field_error("model_name", f"must have at most {MAX_MODEL_NAME} characters")
    if "\x00" in name:
        raise field_error("model_name", "must not contain NUL bytes")
    description = _clean_description(upload.description)
    return Upload(
        data=upload.data, model_name=name, description=description,
        paper_url=_clean_url("paper_url", upload.paper_url), code_url=_clean_url("code_url", upload.code_url),
        anonymous=bool(upload.anonymous),
    )


def resolve_team(user: User, team_ref: str | int | None) -> Team:
    """The team a user submits for: by id or name, or their only team when none is named."""
    teams = user.teams  # loaded with an API token's owner (accounts.user_for_token)
    if team_ref in (None, ""):
        if len(teams) == 1:
            return teams[0]
        if not teams:
            raise Forbidden("you are not a member of any team; create or join one first")
        raise InvalidInput("you belong to several teams: say which one with the team field")
    ref = str(team_ref).strip()
    for team in teams:
        if str(team.id) == ref or team.name == ref:
            return team
    raise Forbidden(f"you are not a member of team {ref!r}")


def submit(
    user: User, team_ref: str | int | None, benchmark_slug: str, split_slug: str, upload: Upload,
    now: datetime | None = None,
) -> SubmitResult:
    """Validate, score and store an upload for a team, consuming its quota in the same transaction.

    Raises NotFound (benchmark/split), Forbidden (not a member), Conflict (split closed), TooLarge,
    QuotaExceeded, or InvalidInput (metadata, or the file: the attempt is then stored as rejected).
    """
    split = catalog.get_split(benchmark_slug, split_slug, with_subsets=True)
    team = resolve_team(user, team_ref)
    if not split.is_open:
        raise Conflict(f"{split.benchmark.name} {split.name} is closed to submissions")
    upload = _clean_upload(upload)
    inputs = catalog.scoring_inputs(split)
    split_id, team_id, user_id = split.id, team.id, user.id
    benchmark_slug, team_name = split.benchmark.slug, team.name
    # Cheap refusals first: a team over its quota or its rejected-file cap pays for sending the body and
    # nothing more (a count, no row lock; checked again under the lock before the insert).
    moment = now or utcnow()
    early = quota_status(split, team_id, moment)
    _check_rejected_cap(early, moment)
    _check_quota(early, moment)
    # Parse and score outside the write lock: it is the slow part and touches no shared state, and on
    # SQLite a write request's transaction holds the database's write lock.
    release_write_lock()
    try:
        with observability.parse_and_score():
            task, predictions, scores = _score_upload(inputs, upload.data)
        problems = None
    except InvalidInput as exc:
        task = predictions = scores = None
        problems = exc
    digest = uploads.sha256(upload.data)
    # A scored upload keeps its original: written beside the transaction under a temporary name, waited
    # for before the commit, moved into place after it, removed if nothing is stored.
    kept = uploads.keep(upload.data, digest) if problems is None else None
    try:
        result = _store_attempt(split_id, team_id, user_id, benchmark_slug, team_name, upload, digest, inputs,
                                task, predictions, scores, problems, kept, now)
    except BaseException:
        if kept is not None:
            kept.discard()
        raise
    kept.finish()
    return result


def _store_attempt(split_id, team_id, user_id, benchmark_slug, team_name, upload, digest, inputs, task,
                   predictions, scores, problems, kept, now) -> SubmitResult:
    """The write transaction of ``submit``: quotas under the lock, then the rejected or scored row."""
    with write_transaction(continue_open=True):
        split = _split_under_team_lock(split_id, team_id)
        now = now or utcnow()
        status = quota_status(split, team_id, now)
        submission = Submission(
            split_id=split_id, team_id=team_id, user_id=user_id, model_name=upload.model_name,
            description=upload.description, paper_url=upload.paper_url, code_url=upload.code_url,
            anonymous=upload.anonymous, file_sha256=digest, file_size=len(upload.data), created_at=now,
        )
        if problems is not None:
            _check_rejected_cap(status, now)
            submission.status = "rejected"
            submission.errors = json.dumps(problems.details())
            db.session.add(submission)
            db.session.commit()
            observability.upload("rejected")
            raise problems
        _check_quota(status, now)
        submission.status = "scored"
        submission.predictions = task.encode(predictions)
        # Inside the write transaction: the Ladder's state and the probe check see every earlier submission.
        # Before the insert, so that the submission is written once, with its release.
        with db.session.no_autoflush:
            release = _release_now(split, submission, inputs, predictions, scores)
        submission.released = None if release is None else json.dumps(release)
        db.session.add(submission)
        db.session.flush()  # the submission, then its Ladder state or probe flag; the scores need its id
        db.session.execute(insert(Score), [
            {"submission_id": submission.id, "subset": subset, "metric": metric, "value": float(value)}
            for subset, metrics in scores.items() for metric, value in metrics.items()
        ])
        result = SubmitResult(
            submission, submission.id, benchmark_slug, split.slug, team_name, submission.model_name, now,
            _team_view(split, scores, submission.released, inputs),
            # The counts read under the lock, plus this submission.
            replace(status, used_today=status.used_today + 1, used_month=status.used_month + 1,
                    used_total=status.used_total + 1),
        )
        kept.wait()  # an acknowledged submission has its original on disk
        db.session.commit()
    observability.upload("scored")
    return result


# --- reading -------------------------------------------------------------------------------------------


def scores_of(submission: Submission) -> Scores:
    result: Scores = {}
    for score in submission.scores:
        result.setdefault(score.subset, {})[score.metric] = score.value
    return result


def _release_now(split: Split, submission: Submission, inputs, predictions, scores: Scores) -> Scores | None:
    """What the feedback policy releases at submission time (and the probe check on hidden splits):
    everything on public or revealed splits; on hidden ones every score to its count resolution under
    `full`, the Ladder's accuracy under `ladder`, nothing under `none` (see services/integrity.py)."""
    return integrity.after_scoring(submission, split, inputs, predictions, scores)


def released_scores(submission: Submission) -> Scores | None:
    """Scores the team may see now: all of them once the split is public or revealed; on a hidden split
    every score to its count resolution under `full` (per-category and per-field breakdowns withheld),
    only what the Ladder released under `ladder` (every other metric and subset withheld), nothing under
    `none`."""
    if submission.status != "scored":
        return None
    return _team_view(submission.split, scores_of(submission), submission.released)


def _team_view(split: Split, scores: Scores, released: str | None,
               inputs: catalog.ScoringInputs | None = None) -> Scores | None:
    """released_scores from a submission's scores and stored release (inputs: if already loaded)."""
    if not split.hidden or split.revealed_at is not None:
        return scores
    if split.feedback == "full":
        return integrity.full_release_for(split, inputs or catalog.scoring_inputs(split), scores)
    if split.feedback == "ladder":
        return integrity.ladder_view(inputs.task if inputs else get_task(split.benchmark.task_type), released)
    return None


def can_view(user: User | None, submission: Submission) -> bool:
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_admin) or user.is_member(submission.team_id)


def get_for(user: User | None, submission_id: int) -> Submission:
    """A submission its team's members and maintainers may see; everyone else gets NotFound."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or not can_view(user, submission):
        raise NotFound(f"no submission {submission_id}")
    return submission


def list_for(user: User) -> list[Submission]:
    """The submissions of every team the user belongs to, newest first, with split, benchmark and team."""
    team_ids = [m.team_id for m in user.memberships]
    if not team_ids:
        return []
    return list(
        db.session.scalars(
            select(Submission)
            .where(Submission.team_id.in_(team_ids))
            .options(joinedload(Submission.split).joinedload(Split.benchmark), joinedload(Submission.team))
            .order_by(Submission.id.desc())
        )
    )


def problems_of(submission: Submission) -> list[dict]:
    return json.loads(submission.errors) if submission.errors else []


# --- publication and moderation ------------------------------------------------------------------------


def _own(user: User, submission_id: int) -> Submission:
    submission = get_for(user, submission_id)
    if not user.is_member(submission.team_id):
        raise Forbidden("only the team's members can publish or unpublish its submissions")
    return submission


def publish(user: User, submission_id: int, description: str | None = None, paper_url: str | None = None,
            code_url: str | None = None) -> Submission:
    """Show a scored submission on the leaderboard; it needs a description or a paper URL."""
    submission = _own(user, submission_id)
    if submission.status != "scored":
        raise Conflict("only scored submissions can be published")
    # Every field is checked before any is changed: a refused publish leaves the submission as it was.
    description = _clean_description(description) if description and description.strip() else None
    paper_url = _clean_url("paper_url", paper_url) if paper_url else None
    code_url = _clean_url("code_url", code_url) if code_url else None
    if not (description or paper_url or submission.description or submission.paper_url):
        raise InvalidInput("Publishing needs a description or a paper URL (description or paper_url)",
                           field="description")
    if description:
        submission.description = description
    if paper_url:
        submission.paper_url = paper_url
    if code_url:
        submission.code_url = code_url
    if submission.published_at is None:
        _refuse_duplicate(submission)
        submission.published_at = utcnow()
    submission.split.board_version += 1
    db.session.commit()
    return submission


def _refuse_duplicate(submission: Submission) -> None:
    """A crowded board stays readable: the same predictions a team already has on the board are not
    published twice (Conflict names the entry)."""
    twin = db.session.execute(
        select(Submission.id, Submission.model_name).where(
            Submission.team_id == submission.team_id, Submission.split_id == submission.split_id,
            Submission.id != submission.id, Submission.published_at.is_not(None), Submission.hidden_at.is_(None),
            Submission.status == "scored", Submission.predictions == submission.predictions,
        ).order_by(Submission.id).limit(1)
    ).first()
    if twin is not None:
        raise Conflict(f"these predictions are identical to the team's published submission {twin.id} "
                       f"({twin.model_name!r}) on this split; unpublish that one first or publish different predictions")


def unpublish(user: User, submission_id: int) -> Submission:
    submission = _own(user, submission_id)
    submission.published_at = None
    submission.split.board_version += 1
    db.session.commit()
    return submission


def hide(admin: User, submission_id: int, reason: str) -> Submission:
    if not admin.is_admin:
        raise Forbidden("only maintainers can hide entries")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("say why the entry is hidden (reason)")
    submission = get_for(admin, submission_id)
    submission.hidden_at = utcnow()
    submission.hidden_reason = reason[:2000]
    submission.split.board_version += 1
    # Audited here, in the same transaction, whichever page the maintainer hid it from.
    audit.record(admin, "entry.hide", f"submission {submission.id}", {"via": "web", "reason": reason[:2000]})
    db.session.commit()
    return submission


def unhide(admin: User, submission_id: int) -> Submission:
    if not admin.is_admin:
        raise Forbidden("only maintainers can unhide entries")
    submission = get_for(admin, submission_id)
    submission.hidden_at = None
    submission.hidden_reason = None
    submission.split.board_version += 1
    audit.record(admin, "entry.unhide", f"submission {submission.id}", {"via": "web"})
    db.session.commit()
    return submission


def retry_after_seconds(exc: QuotaExceeded, now: datetime | None = None) -> int | None:
    if exc.retry_at is None:
        return None
    return max(int((as_utc(exc.retry_at) - (now or utcnow())).total_seconds()) + 1, 1)


def timestamp(moment: datetime) -> str:
    return as_utc(moment).astimezone(timezone.utc).isoformat()


@dataclass
class SubmissionPage:
    submission: Submission
    scores: Scores | None
    problems: list[dict]
    quota: QuotaStatus | None  # for the team's members
    is_member: bool
    withheld_reason: str | None
    # (ci_low, ci_high) per subset and metric shown, where the split's scores are public or for maintainers
    intervals: dict[str, dict[str, tuple]] | None = None
    is_admin: bool = False
    public_view: bool = False  # a visitor outside the team: a published entry, as the leaderboard shows it
    breakdowns_held: bool = False  # per-category/per-field scores of a hidden split kept from this viewer
    rank: int | None = None  # its significance-aware rank while it is on the public leaderboard
    sizes: dict[str, int] | None = None  # examples each subset shown counts over ("all": the split)


def page_for(user: User | None, submission_id: int) -> SubmissionPage:
    """What the submission page shows to this viewer: everything to the team's members and maintainers;
    to anyone else a published, visible entry of a split whose scores are public (else NotFound).
    Per-category and per-field breakdowns of a hidden split are shown to maintainers only."""
    from app.services import leaderboards  # it decides what a leaderboard, hence the public, may see

    submission = db.session.get(Submission, submission_id)
    if submission is None:
        raise NotFound(f"no submission {submission_id}")
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    is_admin = bool(authenticated and user.is_admin)
    is_member = bool(authenticated and user.is_member(submission.team_id))
    public_view = not (is_admin or is_member)
    split = submission.split
    if public_view and not (
        submission.status == "scored" and submission.published_at is not None and submission.hidden_at is None
        and leaderboards.scores_are_public(split)
    ):
        raise NotFound(f"no submission {submission_id}")
    released = released_scores(submission)
    scores = released
    if is_admin and submission.status == "scored":
        scores = scores_of(submission)  # maintainers see everything, whatever the Ladder released
    withheld = None
    if submission.status == "scored" and released is None:
        withheld = "Scores on this hidden split are held until the maintainers reveal it."
    held = False
    if scores and not is_admin:
        kinds = {subset.name: subset.source for subset in split.subsets}
        shown = {name: values for name, values in scores.items()
                 if name == "all" or not leaderboards.is_breakdown(split, kinds.get(name, "ids"))}
        # The release itself may already leave the breakdowns out (integrity.full_release_for).
        held = any(leaderboards.is_breakdown(split, kind) for kind in kinds.values())
        scores = shown
    if scores and not is_admin and split.hidden and split.revealed_at is None and split.feedback == "full":
        # The release rounds to count resolution; a page writes the stored value (itself 100 * count / n)
        # once, like the board, so the two never differ by a double rounding.
        stored = scores_of(submission)
        scores = {subset: {metric: stored.get(subset, {}).get(metric, value) for metric, value in metrics.items()}
                  for subset, metrics in scores.items()}
    intervals = {}
    if scores and (is_admin or leaderboards.scores_are_public(split)):
        intervals = leaderboards.submission_intervals(submission, list(scores))
    quota = quota_status(split, submission.team) if is_member else None
    problems = problems_of(submission) if not public_view else []
    rank = None
    if submission.published_at is not None and submission.hidden_at is None:
        rank = next((e.rank for e in leaderboards.leaderboard(split) if e.submission_id == submission.id), None)
    sizes = {"all": split.example_count, **{subset.name: subset.size for subset in split.subsets}}
    return SubmissionPage(submission, scores, problems, quota, is_member, withheld, intervals, is_admin,
                          public_view, held, rank, sizes)
