"""The maintainers' use cases, audited: each records an audit event and then calls the service that does
the work, which commits the event and the change in one transaction. The console pages and the
maintainers' command line (actor None, via "cli") both come through here.

Also the console's read-only views: the overview, a split's published entries, recent rejected attempts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import joinedload, selectinload

from app.db import db
from app.models import Benchmark, Reference, Split, Submission, Team, UndeliverableAddress, User, as_utc
from app.services import catalog
from app.services.audit import audit_log as events
from app.services.catalog import phases
from app.services.catalog import references as reference_rows
from app.services.errors import NotFound
from app.services.intake import submissions
from app.services.jobs import console as jobs
from app.services.mail import undeliverable
from app.services.people import accounts, teams
from app.services.storage import checksums

T = TypeVar("T")
# What the rejected-attempts list shows of a file's first problem (the team saw the whole message).
PROBLEM_PREVIEW = 300
REJECTED_LIMIT = 100
QUOTAS = ("per_day", "per_month", "total", "rejected_per_day")


def _audited(actor: User | None, action: str, target: str, details: dict, via: str, work: Callable[[], T]) -> T:
    """Record the event, then do the work (whose commit stores both); undo both if the work fails."""

    def both() -> T:
        events.record(actor, action, target, {"via": via, **details})
        return work()

    return _undo_on_error(both)


def _undo_on_error(work: Callable[[], T]) -> T:
    try:
        return work()
    except Exception:
        db.session.rollback()
        raise


def _file_facts(data: bytes) -> dict:
    # Gold and identifier files are recorded by checksum and size only: the log must not hold labels.
    return {"sha256": checksums.sha256(data), "bytes": len(data)}


# --- benchmarks, splits, subsets -----------------------------------------------------------------------


def add_benchmark(
    actor: User | None,
    slug: str,
    task_type: str,
    name: str,
    description: str = "",
    paper_url: str | None = None,
    *,
    task_config: Mapping[str, Any] | None = None,
    via: str = "web",
) -> Benchmark:
    """``task_config``: a configured type's ``task:`` mapping (task_type one of its types), recorded in the event."""
    details: dict[str, Any] = {"task_type": task_type, "name": name, "paper_url": paper_url}
    if task_config is not None:
        details["task_config"] = dict(task_config)
    return _audited(
        actor,
        "benchmark.add",
        f"benchmark {slug}",
        details,
        via,
        lambda: catalog.add_benchmark(slug, task_type, name, description, paper_url, task_config),
    )


def add_split(
    actor: User | None, benchmark_slug: str, split_slug: str, labels: bytes, *, via: str = "web", **options
) -> Split:
    """`options` takes catalog.add_split's keywords (hidden, name, annotations, subset_field, choices)."""
    details = {
        "name": options.get("name"),
        "hidden": options.get("hidden", False),
        "subset_field": options.get("subset_field"),
        "gold": _file_facts(labels),
    }
    for file in ("annotations", "choices"):
        if options.get(file) is not None:
            details[file] = _file_facts(options[file])
    return _audited(
        actor,
        "split.add",
        f"{benchmark_slug}/{split_slug}",
        details,
        via,
        lambda: catalog.add_split(benchmark_slug, split_slug, labels, **options),
    )


def set_policy(actor: User | None, benchmark_slug: str, split_slug: str, *, via: str = "web", **policy) -> Split:
    """Change a split's policy; `policy` takes catalog.set_policy's keywords (only those given change).

    The audit event lists each setting that changes, as "old → new"."""

    def shown(key: str, value) -> str:
        if key == "sealed_fraction":
            return f"{value:g} of the groups sealed" if value else "no sealed part"
        if value is None:
            return "unlimited"
        if key == "is_open":
            return "open" if value else "closed"
        return str(value)

    def work() -> Split:
        split = catalog.get_split(benchmark_slug, split_slug)
        changes = {}
        for key, value in policy.items():
            # UNSET leaves a quota as it is, None leaves feedback and open/closed as they are.
            if value is catalog.UNSET or (value is None and key not in QUOTAS):
                continue
            current = getattr(split, key)
            if key == "sealed_fraction":  # 0 and None both say "no sealed part"
                value, current = value or None, current or None
            if value != current:
                changes[key] = f"{shown(key, current)} → {shown(key, value)}"
        events.record(
            actor, "split.policy", f"{benchmark_slug}/{split_slug}", {"via": via, **(changes or {"changes": "none"})}
        )
        return catalog.set_policy(benchmark_slug, split_slug, **policy)

    return _undo_on_error(work)


def set_phase(
    actor: User | None,
    benchmark_slug: str,
    split_slug: str,
    *,
    opens_at=catalog.UNSET,
    closes_at=catalog.UNSET,
    reveal_planned_at=catalog.UNSET,
    via: str = "web",
) -> Split:
    """Set or clear a split's opening and closing times (phases.set_phase: a datetime, a text phases.parse_moment
    reads, None to clear, UNSET to leave). The audit event lists each bound that changes, as "old → new"."""

    def shown(value) -> str:
        return "none" if value is None else phases.moment_text(value)

    def work() -> Split:
        split = catalog.get_split(benchmark_slug, split_slug)
        changes = {}
        for key, value in (("opens_at", opens_at), ("closes_at", closes_at), ("reveal_planned_at", reveal_planned_at)):
            if value is catalog.UNSET:
                continue
            new, current = phases.parse_moment(value, key), getattr(split, key)
            if (new and as_utc(new)) != (current and as_utc(current)):
                changes[key] = f"{shown(current)} → {shown(new)}"
        events.record(
            actor, "split.phase", f"{benchmark_slug}/{split_slug}", {"via": via, **(changes or {"changes": "none"})}
        )
        return phases.set_phase(
            benchmark_slug, split_slug, opens_at=opens_at, closes_at=closes_at, reveal_planned_at=reveal_planned_at
        )

    return _undo_on_error(work)


def pin_default_split(actor: User | None, benchmark_slug: str, split_slug: str, *, via: str = "web") -> Split:
    return _audited(
        actor,
        "benchmark.default_split",
        benchmark_slug,
        {"split": split_slug},
        via,
        lambda: catalog.pin_default_split(benchmark_slug, split_slug),
    )


def reveal_split(actor: User | None, benchmark_slug: str, split_slug: str, *, via: str = "web") -> Split:
    return _audited(
        actor,
        "split.reveal",
        f"{benchmark_slug}/{split_slug}",
        {},
        via,
        lambda: catalog.reveal_split(benchmark_slug, split_slug),
    )


def add_subset(actor: User | None, benchmark_slug: str, split_slug: str, name: str, ids: bytes, *, via: str = "web"):
    """Returns (subset, number of submissions rescored), as catalog.add_subset."""
    return _audited(
        actor,
        "subset.add",
        f"{benchmark_slug}/{split_slug}",
        {"subset": name, "ids": _file_facts(ids)},
        via,
        lambda: catalog.add_subset(benchmark_slug, split_slug, name, ids),
    )


# --- moderation ----------------------------------------------------------------------------------------


def hide_entry(actor: User, submission_id: int, reason: str) -> Submission:
    """Hide a published entry; submissions.hide records the audit event itself (the submission page
    offers the same button), in the same transaction."""
    return _undo_on_error(lambda: submissions.hide(actor, submission_id, reason))


def unhide_entry(actor: User, submission_id: int) -> Submission:
    return _undo_on_error(lambda: submissions.unhide(actor, submission_id))


def verify_entry(
    actor: User | None, submission_id: int, note: str, url: str | None = None, *, via: str = "web"
) -> Submission:
    """Mark a published entry verified; submissions.verify records the audit event itself, in the same
    transaction (actor None: the command line)."""
    return _undo_on_error(lambda: submissions.verify(actor, submission_id, note, url, via=via))


def unverify_entry(actor: User | None, submission_id: int, *, via: str = "web") -> Submission:
    return _undo_on_error(lambda: submissions.unverify(actor, submission_id, via=via))


# --- accounts and teams (command line) -----------------------------------------------------------------


def create_user(actor: User | None, email: str, password: str, *, admin: bool = False, via: str = "cli") -> User:
    # Never the password, of course.
    return _audited(
        actor,
        "user.create",
        f"user {accounts.normalise_email(email)}",
        {"admin": admin},
        via,
        lambda: accounts.create_user(email, password, admin=admin),
    )


def create_team(
    actor: User | None, name: str, members: Iterable[User] = (), *, via: str = "cli", over_cap: bool = False
) -> Team:
    """A team made by a maintainer for its members: it has no creator (it counts against nobody's daily
    creations); each member must be under MAX_TEAMS_PER_ACCOUNT unless `over_cap` (recorded in the log)."""
    members = list(members)
    details: dict = {"members": [user.email for user in members]}
    if over_cap:
        details["over_cap"] = True
    return _audited(
        actor,
        "team.create",
        f"team {(name or '').strip()}",
        details,
        via,
        lambda: teams.create_team(name, members=members, over_cap=over_cap),
    )


def sign_out_everywhere(actor: User | None, email: str, *, via: str = "web") -> User:
    """End every session of the user with this email, on every server (their API tokens are unaffected)."""
    user = accounts.get_user_by_email(email)
    if user is None:
        raise NotFound(f"no user with email {accounts.normalise_email(email)[:254]!r}")
    _audited(actor, "user.sign_out_everywhere", f"user {user.email}", {}, via, lambda: accounts.end_sessions(user))
    return user


def create_token(actor: User | None, user: User, name: str, *, via: str = "cli"):
    """Returns (token row, plaintext), as accounts.create_token; the log keeps the token's name only."""
    return _audited(
        actor,
        "token.create",
        f"user {user.email}",
        {"name": (name or "").strip()},
        via,
        lambda: accounts.create_token(user, name),
    )


# --- what the console shows ----------------------------------------------------------------------------


@dataclass
class SplitRow:
    split: Split
    scored: int
    published: int
    hidden_entries: int

    @property
    def risks(self) -> list[str]:
        return catalog.risks(self.split)

    @property
    def references(self) -> list[Reference]:
        """The split's reference rows, oldest first."""
        return reference_rows.list_references(self.split.benchmark.slug, self.split.slug)


def overview() -> list[tuple[Benchmark, list[SplitRow]]]:
    """Every benchmark with its splits, policies and entry counts."""
    benchmarks = list(
        db.session.scalars(select(Benchmark).options(selectinload(Benchmark.splits)).order_by(Benchmark.name))
    )
    published = Submission.published_at.is_not(None)
    counts = {
        split_id: (scored, shown, hidden)
        for split_id, scored, shown, hidden in db.session.execute(
            select(
                Submission.split_id,
                func.count(Submission.id),
                func.count(Submission.id).filter(published, Submission.hidden_at.is_(None)),
                func.count(Submission.id).filter(published, Submission.hidden_at.is_not(None)),
            )
            .where(Submission.status == "scored")
            .group_by(Submission.split_id)
        )
    }
    return [
        (benchmark, [SplitRow(split, *counts.get(split.id, (0, 0, 0))) for split in benchmark.splits])
        for benchmark in benchmarks
    ]


@dataclass
class SplitView:
    split: Split
    entries: list[Submission]  # published, shown or hidden, newest first, with their teams

    @property
    def risks(self) -> list[str]:
        return catalog.risks(self.split)

    @property
    def references(self) -> list[Reference]:
        """The split's reference rows, oldest first."""
        return reference_rows.list_references(self.split.benchmark.slug, self.split.slug)


def split_view(benchmark_slug: str, split_slug: str) -> SplitView:
    """What the console's page of a split shows: the split (policy, subsets) and its published entries."""
    split = catalog.get_split(benchmark_slug, split_slug)
    entries = list(
        db.session.scalars(
            select(Submission)
            .options(joinedload(Submission.team))
            .where(Submission.split_id == split.id, Submission.status == "scored", Submission.published_at.is_not(None))
            .order_by(Submission.published_at.desc(), Submission.id.desc())
        )
    )
    return SplitView(split, entries)


def submission_for_console(submission_id: int) -> Submission:
    submission = db.session.get(Submission, submission_id)
    if submission is None:
        raise NotFound(f"no submission {submission_id}")
    return submission


@dataclass
class RejectedAttempt:
    id: int
    team: str
    benchmark: str
    split: str
    created_at: datetime
    problem_count: int
    first_problem: str


def rejected_attempts(limit: int = REJECTED_LIMIT) -> list[RejectedAttempt]:
    """The most recent rejected files: who, where, when, and what was wrong (the messages the team saw,
    which name lines and identifiers of the upload, never gold labels)."""
    rows = db.session.execute(
        select(Submission.id, Submission.created_at, Submission.errors, Team.name, Benchmark.slug, Split.slug)
        .join(Team, Submission.team_id == Team.id)
        .join(Split, Submission.split_id == Split.id)
        .join(Benchmark, Split.benchmark_id == Benchmark.id)
        .where(Submission.status == "rejected")
        .order_by(Submission.created_at.desc(), Submission.id.desc())
        .limit(limit)
    ).all()
    attempts = []
    for submission_id, created_at, errors, team, benchmark, split in rows:
        try:
            problems = json.loads(errors) if errors else []
        except ValueError:
            problems = []
        first = str(problems[0].get("message", "")) if problems and isinstance(problems[0], dict) else ""
        if len(first) > PROBLEM_PREVIEW:
            first = first[: PROBLEM_PREVIEW - 1] + "…"
        attempts.append(RejectedAttempt(submission_id, team, benchmark, split, created_at, len(problems), first))
    return attempts


def audit_log(page: int = 1) -> events.AuditPage:
    return events.page(page)


# --- jobs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobsPage:
    queue: jobs.QueueState
    attention: list[jobs.JobRow]  # failed and not since done, or waiting or running past JOB_STUCK_AFTER
    recent: list[jobs.JobRow]
    undeliverable: list[UndeliverableAddress]  # addresses the mail server refused for good, newest first


def jobs_page() -> JobsPage:
    return JobsPage(jobs.queue_state(), jobs.listing("attention", 100), jobs.listing(None, 50), undeliverable.listing())


def dismiss_jobs(actor: User | None, job_ids: list[int], *, via: str = "cli") -> list[int]:
    """Let failed jobs be (no longer counted by /healthz); their ids. Recorded in the audit log."""
    return _audited(
        actor,
        "jobs.dismiss",
        "jobs " + ", ".join(map(str, job_ids)),
        {},
        via,
        lambda: jobs.dismiss_many(job_ids),
    )


def rerun_jobs(actor: User | None, job_ids: list[int], *, all_failed: bool = False, via: str = "cli") -> list:
    """Queue failed or stuck jobs' work again; (old id, new id) pairs. Recorded in the audit log."""
    return _audited(
        actor,
        "jobs.rerun",
        "jobs " + (", ".join(map(str, job_ids)) if job_ids else "every failed one"),
        {"all_failed": all_failed},
        via,
        lambda: jobs.rerun_many(job_ids, all_failed=all_failed),
    )
