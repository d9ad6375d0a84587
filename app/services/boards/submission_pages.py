"""A submission's page: its scores as this viewer may see them (services/blind_test/visibility.py), their intervals
as the board computes them, its rank on the board, the team's quota and the problems of a rejected file."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice

from app.db import db
from app.evaluation import Scores
from app.models import Submission, User
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots, listings
from app.services.catalog import entry_fields
from app.services.errors import NotFound
from app.services.intake import quotas, submissions

COMPARE_CHOICES = 100  # entries suggested on the compare form (any other by its id)


@dataclass
class SubmissionPage:
    submission: Submission
    scores: Scores | None
    problems: list[dict]
    quota: quotas.QuotaStatus | None  # for the team's members
    is_member: bool
    withheld_reason: str | None
    # (ci_low, ci_high) per subset and metric shown, where the split's scores are public or for maintainers
    intervals: dict[str, dict[str, tuple]] | None = None
    is_admin: bool = False
    public_view: bool = False  # a visitor outside the team: a published entry, as the leaderboard shows it
    breakdowns_held: bool = False  # per-category/per-field scores of a hidden split kept from this viewer
    rank: int | None = None  # its significance-aware rank while it is on the public leaderboard
    # The units each metric counts on each subset shown ({subset: {metric: n}}), where this viewer may know them.
    sizes: dict[str, dict[str, int | None]] | None = None
    shown_when_published: bool = True  # publishing puts it on the public board now (else at the reveal)
    queried_only: bool = False  # the figures are a sealed blind test's queried part's (the page says so)
    # For the team and maintainers: which figure the team is shown (the Ladder: a new best, or its best again)
    verdict: submissions.Verdict | None = None
    placement: listings.Placement | None = None  # for the team and maintainers, once published
    refusal: str | None = None  # a rejected file's sentence: how many lines have errors, how many are listed
    queried_examples: int | None = None  # the examples of the queried part, where the figures are its alone
    per_example: bool = False  # on the public board of a split whose per-example results are public (comparisons)
    # Entries of the board to compare this one with (id, rank, model name), the first COMPARE_CHOICES in its order.
    compare_choices: list[tuple[int, int, str]] = field(default_factory=list)
    # The benchmark's entry fields with this entry's value of each (None: not stated), in the fields' order.
    fields: list[tuple[entry_fields.FieldSpec, entry_fields.Value | None]] | None = None


def _sizes(split, view: visibility.SubmissionView) -> dict[str, dict[str, int | None]]:
    """n of every metric on the whole split (its queried part while only that is shown) and, where this viewer may
    know them, on each subset: the units the family says the metric counts (TaskType.metric_units)."""
    task = catalog.task_of(split.benchmark)
    gold = catalog.gold_for(split)
    whole = {metric: task.metric_units(gold, metric, view.queried_part) for metric in task.metrics}
    if view.queried_part is not None or not (view.is_admin or visibility.sizes_shown(split)):
        return {"all": whole}  # a blind test's subsets: sizes for maintainers only until the reveal
    sizes: dict[str, dict[str, int | None]] = {"all": whole}
    for subset in split.subsets:
        metrics = visibility.subset_metrics(task, subset.source)
        sizes[subset.name] = {metric: task.metric_units(gold, metric, subset.indices) for metric in metrics}
    return sizes


_PARTS_ORDER = {"queried": 0, "sealed": 1, "gap": 2}  # as the board: both parts, then their gap


def _in_family_order(split, scores: Scores | None) -> Scores | None:
    """The subsets in the order the board shows them: the whole split, a blind test's parts, then the derived
    subsets before the others, each in the family's order (TaskType.subset_order)."""
    if not scores:
        return scores
    task = catalog.task_of(split.benchmark)
    sources = {subset.name: subset.source for subset in split.subsets}
    first = {"all": 0, "sealed": 1, "derived": 2}

    def key(name: str) -> tuple:
        source = "all" if name == "all" else sources.get(name, "sealed")
        return (first.get(source, 3), _PARTS_ORDER.get(name, 3), task.subset_order(name))

    return {name: scores[name] for name in sorted(scores, key=key)}


def page_for(user: User | None, submission_id: int) -> SubmissionPage:
    """What the submission page shows to this viewer (NotFound where visibility.submission_view says so)."""
    submission = db.session.get(Submission, submission_id)
    if submission is None:
        raise NotFound(f"no submission {submission_id}")
    view = visibility.submission_view(user, submission)
    split = submission.split
    intervals = (
        board_snapshots.submission_intervals(
            submission, list(view.scores or ()), view.queried_part, public=not view.is_admin
        )
        if view.intervals_shown
        else {}
    )
    # A member sees what is left to them: the stricter of the team's quota and their own through all teams.
    quota = quotas.quota_status(split, submission.team, user=user) if view.is_member and user else None
    problems = submissions.problems_of(submission) if not view.public_view else []
    rank = None
    if submission.published_at is not None and submission.hidden_at is None:
        rank = next((e.rank for e in board_snapshots.leaderboard(split) if e.submission_id == submission.id), None)
    sizes = _sizes(split, view)
    shown = visibility.scores_are_public(split) and visibility.shown_on_board(split, submission.release_policy)
    verdict = None if view.public_view else submissions.verdict(submission, visibility.released_scores(submission))
    published = submission.published_at is not None and not view.public_view
    page = SubmissionPage(
        submission,
        _in_family_order(split, view.scores),
        problems,
        quota,
        view.is_member,
        view.withheld_reason,
        intervals,
        view.is_admin,
        view.public_view,
        view.breakdowns_held,
        rank,
        sizes,
        shown,
        view.queried_part is not None,
        verdict,
        listings.placement(submission) if published else None,
        submissions.refusal_of(submission) if problems else None,
        None if view.queried_part is None else int(view.queried_part.size),
        fields=_fields(submission),
    )
    page.per_example = rank is not None and visibility.per_example_public(split)
    if rank is not None:
        others = (e for e in board_snapshots.leaderboard(split) if e.submission_id != submission.id)
        page.compare_choices = [(e.submission_id, e.rank, e.model_name) for e in islice(others, COMPARE_CHOICES)]
    return page


def _fields(submission: Submission) -> list[tuple[entry_fields.FieldSpec, entry_fields.Value | None]]:
    values = entry_fields.values_of(submission.fields)
    return [(spec, values.get(spec.key)) for spec in entry_fields.specs(submission.split.benchmark_id)]
