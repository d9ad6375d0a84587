"""Typed SQLAlchemy 2.0 models: benchmarks, splits and subsets; teams, submissions and scores."""

from __future__ import annotations

import secrets
from datetime import UTC, date, datetime

import numpy as np
from flask_login import UserMixin
from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Model
from app.names import name_key as team_name_key
from app.names import team_slug

FEEDBACK_POLICIES = ("full", "ladder", "none")
SUBMISSION_STATUSES = ("scored", "rejected")


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """SQLite hands datetimes back naive; they were stored as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _first_generation() -> int:
    # Far below the column's 2**31: bumps (+1 each) never reach it.
    return secrets.randbelow(2**30)


class User(UserMixin, Model):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # Stamped into each session at login; bumping it (logout, password change, "sign out everywhere")
    # ends every session of the user at once, on every server. A new account starts at a random one: SQLite
    # gives a removed account's id to the next (`users prune-unconfirmed` removes the newest), and a cookie
    # kept from the removed account must not sign in as the new one (issue 35's hostile pass).
    session_generation: Mapped[int] = mapped_column(Integer, default=_first_generation, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # When the address was shown to be the user's (the mailed link followed; CLI accounts at creation). An
    # unverified account may log in but not upload or publish.
    email_verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Signed into each password-reset link; a reset bumps it, so a link works once and older links die with it.
    # Random at first for the same reason as session_generation: a link asked for by a removed account must not
    # reset the password of the next account given its id.
    reset_generation: Mapped[int] = mapped_column(Integer, default=_first_generation, server_default="0")
    # Mail the user may turn off on the account page (a password reset or verification link is always sent).
    notify_reveal: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    notify_rescore: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    notify_invite: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())

    memberships: Mapped[list[Membership]] = relationship(back_populates="user", cascade="all, delete-orphan")
    tokens: Mapped[list[ApiToken]] = relationship(
        back_populates="user", cascade="all, delete-orphan", order_by="ApiToken.id"
    )

    @property
    def teams(self) -> list[Team]:
        return sorted((m.team for m in self.memberships), key=lambda team: team.name.lower())

    def is_member(self, team_id: int) -> bool:
        return any(m.team_id == team_id for m in self.memberships)


class ApiToken(Model):
    """A bearer token for scripts; only its sha256 is stored, the token itself is shown once."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # None: until revoked

    user: Mapped[User] = relationship(back_populates="tokens")


class Invite(Model):
    """A one-time link that adds whoever opens it (logged in) to a team; only the token's sha256 is kept."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    used_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The address the link was mailed to, when the inviter gave one (None: a link handed over by other means).
    email: Mapped[str | None] = mapped_column(String(254))

    team: Mapped[Team] = relationship()


class Team(Model):
    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    # The name as a reader would confuse it (app/names.py); unique, so no two teams look alike.
    name_key: Mapped[str] = mapped_column(
        String(255), unique=True, default=lambda context: team_name_key(context.get_current_parameters()["name"])
    )
    # The public page's address, /teams/<slug> (app/names.py team_slug; never all digits).
    slug: Mapped[str] = mapped_column(
        String(100), unique=True, default=lambda context: team_slug(context.get_current_parameters()["name"])
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # The account that made it on the Teams page (None: a maintainer's, or made before migration 0013): an
    # account creates at most MAX_TEAMS_CREATED_PER_DAY teams in any 24 hours.
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)

    memberships: Mapped[list[Membership]] = relationship(back_populates="team", cascade="all, delete-orphan")


class Membership(Model):
    __tablename__ = "memberships"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True)
    joined_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # The member chose to be named on the team's public page (off until they say so).
    shown: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    user: Mapped[User] = relationship(back_populates="memberships")
    team: Mapped[Team] = relationship(back_populates="memberships")


class Benchmark(Model):
    __tablename__ = "benchmarks"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(120))
    task_type: Mapped[str] = mapped_column(String(32))
    # A configured task type's config (app/evaluation/configured), as its canonical JSON; None: task_type names a
    # built-in family.
    task_config: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The columns its boards show by default, a JSON list of `subset:metric` keys in order (None: the task
    # type's own choice); set by a bundle (revision 0022).
    board_columns: Mapped[str | None] = mapped_column(Text, nullable=True)
    description: Mapped[str] = mapped_column(Text, default="")
    paper_url: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # The landing split a maintainer pinned (None: the first hidden split, else the first split). A plain id,
    # not a foreign key: benchmarks and splits would otherwise refer to each other in a cycle.
    default_split_id: Mapped[int | None] = mapped_column(Integer, nullable=True)

    splits: Mapped[list[Split]] = relationship(
        back_populates="benchmark", order_by="Split.position", cascade="all, delete-orphan"
    )
    entry_fields: Mapped[list[EntryField]] = relationship(
        back_populates="benchmark", order_by="EntryField.position", cascade="all, delete-orphan"
    )
    tracks: Mapped[list[Track]] = relationship(
        back_populates="benchmark", order_by="Track.position", cascade="all, delete-orphan"
    )


ENTRY_FIELD_TYPES = ("yesno", "choice", "integer", "text", "url")


class EntryField(Model):
    """One line of a benchmark's fact sheet, which its maintainers define (revision 0024): what teams say of an
    entry (zero-shot? parameters?), typed, shown as a board column and filterable if the maintainers say so."""

    __tablename__ = "entry_fields"
    __table_args__ = (
        UniqueConstraint("benchmark_id", "key"),
        CheckConstraint(f"type IN {ENTRY_FIELD_TYPES}", name="entry_field_type"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(120))
    type: Mapped[str] = mapped_column(String(16))
    # A choice field's allowed values, as a JSON list in order (None for the other types).
    choices: Mapped[str | None] = mapped_column(Text)
    unit: Mapped[str | None] = mapped_column(String(40))  # an integer field's unit ("parameters")
    required: Mapped[bool] = mapped_column(Boolean, default=False)
    column: Mapped[bool] = mapped_column(Boolean, default=False)
    filterable: Mapped[bool] = mapped_column(Boolean, default=False)
    position: Mapped[int] = mapped_column(Integer, default=0)

    benchmark: Mapped[Benchmark] = relationship(back_populates="entry_fields")


class Track(Model):
    """A named filter over a benchmark's filterable entry fields (revision 0025): `zero-shot` keeps the entries
    whose zero_shot is yes; its boards rank the entries it keeps among themselves (services/catalog/tracks.py)."""

    __tablename__ = "tracks"
    __table_args__ = (UniqueConstraint("benchmark_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    label: Mapped[str] = mapped_column(String(120))
    # Its conditions as a JSON list of [field key, operator, value], all of which an entry meets.
    conditions: Mapped[str] = mapped_column(Text)
    position: Mapped[int] = mapped_column(Integer, default=0)

    benchmark: Mapped[Benchmark] = relationship(back_populates="tracks")


class Split(Model):
    __tablename__ = "splits"
    __table_args__ = (
        UniqueConstraint("benchmark_id", "slug"),
        CheckConstraint(f"feedback IN {FEEDBACK_POLICIES}", name="feedback"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"), index=True)
    slug: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(120))
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    position: Mapped[int] = mapped_column(Integer, default=0)
    gold_path: Mapped[str] = mapped_column(String(500))
    gold_sha256: Mapped[str] = mapped_column(String(64))
    # A GQA split's official choices file, in its compact form beside the gold file (None: no validity and
    # plausibility). Kept across gold versions: a corrected file keeps every question in its place.
    choices_path: Mapped[str | None] = mapped_column(String(500))
    choices_sha256: Mapped[str | None] = mapped_column(String(64))
    # The annotation and choices files as the maintainer gave them (private, beside the gold file), so that a
    # bundle export writes them back; None for a split without one, or added before bundles (revision 0022).
    annotations_path: Mapped[str | None] = mapped_column(String(500))
    annotations_sha256: Mapped[str | None] = mapped_column(String(64))
    choices_file_path: Mapped[str | None] = mapped_column(String(500))
    choices_file_sha256: Mapped[str | None] = mapped_column(String(64))
    example_count: Mapped[int] = mapped_column(Integer)
    subset_field: Mapped[str | None] = mapped_column(String(64))
    # Submission policy: quotas count scored submissions per team; None means unlimited.
    per_day: Mapped[int | None] = mapped_column(Integer)
    per_month: Mapped[int | None] = mapped_column(Integer)
    total: Mapped[int | None] = mapped_column(Integer)
    rejected_per_day: Mapped[int] = mapped_column(Integer, default=50)
    feedback: Mapped[str] = mapped_column(String(16), default="full")
    is_open: Mapped[bool] = mapped_column(Boolean, default=True)
    revealed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The phase: uploads are taken from opens_at to closes_at (either may be None: no bound); the final board
    # (view=final) keeps the entries as they stood at closes_at.
    opens_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    closes_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # When the maintainers plan to reveal a hidden split's scores (shown with the phase; the reveal itself
    # stays their act: `splits reveal`).
    reveal_planned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # A blind test's sealed part (app/evaluation/sealed.py): the share of its groups sealed (None: none) and
    # the secret the part is drawn from, made once and never shown on any page, export, response or log.
    sealed_fraction: Mapped[float | None] = mapped_column(Float)
    seal_seed: Mapped[str | None] = mapped_column(String(64))
    # A hidden split some of whose scored submissions have no probe summary (stored before migration 0010):
    # the probe check also reads those the old way, by score, until `labels summarise` or a label correction.
    probe_unsummarised: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Bumped whenever what the public leaderboard shows may change (publish, hide, new subset, reveal...),
    # so cached intervals and tiers are recomputed once per change, not per request.
    board_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    benchmark: Mapped[Benchmark] = relationship(back_populates="splits")
    subsets: Mapped[list[Subset]] = relationship(
        back_populates="split", order_by="Subset.id", cascade="all, delete-orphan"
    )


class Subset(Model):
    __tablename__ = "subsets"
    __table_args__ = (UniqueConstraint("split_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    source: Mapped[str] = mapped_column(String(16))  # derived | annotation | field | ids | sealed
    size: Mapped[int] = mapped_column(Integer)
    # Example indices into the split's gold order, as little-endian int32.
    members: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    split: Mapped[Split] = relationship(back_populates="subsets")

    @property
    def indices(self) -> np.ndarray:
        return np.frombuffer(self.members, dtype="<i4")


class Submission(Model):
    """Every attempt, scored or rejected, so quotas and moderation can see all of them."""

    __tablename__ = "submissions"
    __table_args__ = (
        CheckConstraint(f"status IN {SUBMISSION_STATUSES}", name="status"),
        # The quota count: one team's attempts on one split in a time window.
        Index("ix_submissions_team_split_created", "team_id", "split_id", "created_at"),
        # The same count per account, through all its teams.
        Index("ix_submissions_user_split_created", "user_id", "split_id", "created_at"),
        # A split's submissions in id order (rescoring streams them) and its published entries (its board),
        # without reading or sorting every row of a split that holds hundreds of thousands.
        Index("ix_submissions_split_id_id", "split_id", "id"),
        Index("ix_submissions_split_published", "split_id", "published_at"),
        # A team's submissions newest first, a page at a time (its /submissions list), in index order.
        Index("ix_submissions_team_id_id", "team_id", "id"),
        # A client's retry of an upload it never heard back from finds the first one (NULLs never clash).
        UniqueConstraint("user_id", "idempotency_key"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(16))
    model_name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    paper_url: Mapped[str | None] = mapped_column(String(2000))
    code_url: Mapped[str | None] = mapped_column(String(2000))
    # The benchmark's entry fields as the team filled them, a JSON object {key: value} (None: none given). A
    # column, not a table: the values always travel with the entry (its page, the board's snapshot read them with
    # the row), are never queried one by one, and the snapshot's filters read them from the built board.
    fields: Mapped[str | None] = mapped_column(Text)
    anonymous: Mapped[bool] = mapped_column(Boolean, default=False)
    file_sha256: Mapped[str] = mapped_column(String(64))
    file_size: Mapped[int] = mapped_column(Integer)
    # Problems found in a rejected file, as JSON [{"line": n, "message": "..."}].
    errors: Mapped[str | None] = mapped_column(Text)
    # The sentence it was refused with: the true count of lines with errors (the list stops at the first 50),
    # what the split's identifiers look like.
    refusal: Mapped[str | None] = mapped_column(Text)
    # Predictions aligned to the split's gold order, in the task type's compact encoding.
    predictions: Mapped[bytes | None] = mapped_column(LargeBinary)
    # What the split's feedback policy released to the team when it was scored, as JSON
    # {"<subset>": {"<metric>": value}} (null: nothing released).
    released: Mapped[str | None] = mapped_column(Text)
    # The feedback policy that release was made under (null: the split showed every score), so that a later
    # policy never shows more than it (services/blind_test/visibility.py).
    release_policy: Mapped[str | None] = mapped_column(String(8))
    # The Ladder's answer when it made that release: True if the file set a new best (its own figure was
    # released), False if the team's earlier best was released again; null for every other policy.
    ladder_improved: Mapped[bool | None] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    hidden_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    hidden_reason: Mapped[str | None] = mapped_column(Text)
    # A maintainer checked the entry (code and weights): when, in a short note, with an optional link, by whom.
    # Cleared when the entry leaves the board by its team's hand or its published fields change (what was
    # checked is no longer what is shown); kept while a maintainer hides it.
    verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    verified_note: Mapped[str | None] = mapped_column(Text)
    verified_url: Mapped[str | None] = mapped_column(String(2000))
    verified_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The Idempotency-Key the upload was sent with: a repeat from the same account gets this one's answer.
    idempotency_key: Mapped[str | None] = mapped_column(String(255))

    split: Mapped[Split] = relationship()
    team: Mapped[Team] = relationship()
    user: Mapped[User | None] = relationship(foreign_keys=[user_id])
    scores: Mapped[list[Score]] = relationship(
        back_populates="submission", cascade="all, delete-orphan", order_by="Score.id"
    )


class SubmissionResults(Model):
    """A scored submission's compact per-example results, stamped with the gold file they were counted against, for
    families that keep them (TaskType.results_dtype; catalog.stored_results): what a board reads instead of the
    predictions. A table of their own: SQLite keeps a row's values one after the other, so a column after the
    predictions was read through their pages (1.2 s for 20 VQA v2 test-std entries, for 2.7 MB of results)."""

    __tablename__ = "submission_results"

    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Score(Model):
    __tablename__ = "scores"
    __table_args__ = (
        UniqueConstraint("submission_id", "subset", "metric"),
        # The probe check reads the submissions whose primary score is near a new one's (integrity.flag_probes).
        Index("ix_scores_subset_metric_value", "subset", "metric", "value"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    subset: Mapped[str] = mapped_column(String(120))
    metric: Mapped[str] = mapped_column(String(32))
    value: Mapped[float] = mapped_column(Float)

    submission: Mapped[Submission] = relationship(back_populates="scores")


class Reference(Model):
    """A baseline or human-performance row from a paper, shown apart from ranked entries."""

    __tablename__ = "reference_rows"

    id: Mapped[int] = mapped_column(primary_key=True)
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # {"<subset>": {"<metric>": value}} as JSON, percentages like stored scores.
    scores: Mapped[str] = mapped_column(Text)
    source_url: Mapped[str | None] = mapped_column(String(500))
    # The day the figures were published (the paper's date), when the maintainer gave it; never the day the row
    # was added, which says nothing of where the figures stand in the board's history.
    published_on: Mapped[date | None] = mapped_column(Date)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    split: Mapped[Split] = relationship()


class AuditEvent(Model):
    """One maintainer action, for the console's audit log."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(200))
    details: Mapped[str] = mapped_column(Text, default="")

    actor: Mapped[User | None] = relationship()


class LeaderboardCache(Model):
    """Intervals, tiers and everything else a leaderboard page needs, computed once per board_version."""

    __tablename__ = "leaderboard_cache"

    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TrackSnapshot(Model):
    """A named track's board (services/boards/board_snapshots.py), built by the board's job with the board and
    kept per board_version as the board's own snapshot is (LeaderboardCache)."""

    __tablename__ = "track_snapshots"

    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), primary_key=True)
    track: Mapped[str] = mapped_column(String(40), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LadderState(Model):
    """A team's Ladder on a hidden split: its best released loss and the submission that set it."""

    __tablename__ = "ladder_states"
    __table_args__ = (UniqueConstraint("team_id", "split_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    best_loss: Mapped[float | None] = mapped_column(Float)  # R; None until the first submission (+inf)
    best_submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="SET NULL"))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    # Set to a submission not yet inserted, the state is written after it, in the same flush.
    best_submission: Mapped[Submission | None] = relationship(foreign_keys=[best_submission_id])


class AccountLadderState(Model):
    """An account's Ladder on a hidden split, over its submissions through every team: the best released
    loss and the submission that set it. A new score must beat the stricter of this and its team's."""

    __tablename__ = "account_ladder_states"
    __table_args__ = (UniqueConstraint("user_id", "split_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    best_loss: Mapped[float | None] = mapped_column(Float)  # R; None until the first submission (+inf)
    best_submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="SET NULL"))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    best_submission: Mapped[Submission | None] = relationship(foreign_keys=[best_submission_id])


class ProbeFlag(Model):
    """A submission on a hidden split nearly identical to an earlier one of the same team (possible probing)
    or of another team (`other_team_id` set: shared predictions, a second account, collusion)."""

    __tablename__ = "probe_flags"

    id: Mapped[int] = mapped_column(primary_key=True)
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    earlier_submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    distance: Mapped[float] = mapped_column(Float)  # share of examples whose prediction differs (0-1)
    # The team of the earlier submission when it is another team's; None for a team's own.
    other_team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)

    submission: Mapped[Submission] = relationship(foreign_keys=[submission_id])


class ProbeSummary(Model):
    """The probe summaries (app/evaluation/probes.py) of a hidden split's scored submissions whose count of
    correct units is `correct`: their records (id, correct units per block) packed one after another.

    One row per count, not per submission: the probe check reads the window of counts near a new submission's
    as ~140 rows (NLVR2 Test-U), where a row per submission would be ~20,000 at 400,000 stored."""

    __tablename__ = "probe_summaries"

    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), primary_key=True)
    correct: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    records: Mapped[bytes] = mapped_column(LargeBinary)


class AuthAttempt(Model):
    """Login and registration attempts per client key and 10-second bucket: the throttle every worker
    and server shares (app/services/people/throttle.py); buckets older than the window are pruned."""

    __tablename__ = "auth_attempts"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True, index=True)  # unix time // bucket length
    count: Mapped[int] = mapped_column(Integer, default=0)


class GoldVersion(Model):
    """A corrected gold file installed over a split's earlier one (`labels correct`); both files are kept."""

    __tablename__ = "gold_versions"
    __table_args__ = (UniqueConstraint("split_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)  # 2 for the first correction (the import is version 1)
    gold_path: Mapped[str] = mapped_column(String(500))
    gold_sha256: Mapped[str] = mapped_column(String(64))
    previous_path: Mapped[str] = mapped_column(String(500))
    previous_sha256: Mapped[str] = mapped_column(String(64))
    labels_changed: Mapped[int] = mapped_column(Integer)
    note: Mapped[str] = mapped_column(Text, default="")
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChangelogEntry(Model):
    """A dated public line on a split's board ("12 labels corrected")."""

    __tablename__ = "board_changelog"

    id: Mapped[int] = mapped_column(primary_key=True)
    split_id: Mapped[int] = mapped_column(ForeignKey("splits.id", ondelete="CASCADE"), index=True)
    message: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


JOB_STATES = ("queued", "running", "done", "failed")


class Job(Model):
    """A unit of heavy work run off the request (app/services/jobs): a board's snapshot, a rescoring. Every
    run is kept with its state, attempts and error, so nothing is stuck without somebody able to see why."""

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint("state IN ('queued', 'running', 'done', 'failed')", name="ck_jobs_state"),
        # Coalescing: one job of a key not yet started; changes arriving meanwhile are folded into it (a retry,
        # attempts > 0, is not folded into, nor folds a fresh one).
        Index(
            "uq_jobs_waiting_key",
            "key",
            unique=True,
            sqlite_where=text("state = 'queued' AND attempts = 0"),
            postgresql_where=text("state = 'queued' AND attempts = 0"),
        ),
        Index("ix_jobs_state_run_after", "state", "run_after"),
        Index("ix_jobs_key_state", "key", "state"),
        Index("ix_jobs_purpose_state", "purpose", "state"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))  # a handler's name (jobs.handlers)
    key: Mapped[str] = mapped_column(String(80))  # what it works on: one job per key at a time ("board:12")
    # What it is for: runs of one purpose answer for each other, the newest finished one telling whether it
    # still needs a person (a failed run is forgotten once a later one finishes). The key, but for letters:
    # each is a job of its own key, and letters of one kind about one thing share a purpose ("mail:verify:7").
    purpose: Mapped[str] = mapped_column(String(80), default=lambda context: context.get_current_parameters()["key"])
    args: Mapped[str] = mapped_column(Text, default="{}")  # JSON
    state: Mapped[str] = mapped_column(String(8), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)  # backoff of a retry
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # while running
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    worker: Mapped[str | None] = mapped_column(String(120))  # host:pid of the last run
    error: Mapped[str | None] = mapped_column(Text)  # the last attempt's failure, short
    result: Mapped[str | None] = mapped_column(Text)  # what it did, short ("3,000 entries in 1.2 s")
    # A failed run a maintainer has seen and let be (audited): no longer counted by /healthz or the console.
    dismissed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class UndeliverableAddress(Model):
    """An address the mail server refused for good (a 5xx to it, app/services/mail): letters to it are not
    sent, but recorded, until one that checks the address again (a confirmation letter its owner asks for) is
    delivered. Keyed by the address as mailed, lower-cased; whoever has that address sees it."""

    __tablename__ = "undeliverable_addresses"

    id: Mapped[int] = mapped_column(primary_key=True)
    address: Mapped[str] = mapped_column(String(254), unique=True)
    code: Mapped[int | None] = mapped_column(Integer)  # the server's reply code (550); None: refused before SMTP
    reply: Mapped[str] = mapped_column(String(300), default="")  # the server's words, short
    marked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)  # the latest refusal
    skipped: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # letters not sent since
