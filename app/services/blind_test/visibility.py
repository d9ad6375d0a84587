"""What a viewer may see of a split's scores: decided here and nowhere else.

Viewers: the public (anyone outside a submission's team, signed in or not), the team's members, and
maintainers, who see everything. A split is public, or hidden (a blind test) until a maintainer reveals it.
On a hidden split before its reveal:
- a team is shown what the split's feedback policy released when the submission was scored: under `full`
  every score rounded to its count resolution (the value identifies the count, nothing more), under
  `ladder` only the accuracy the Ladder released on the whole split, under `none` nothing;
- the public board shows scores under `full` only (they are counts anyway); under `ladder` and `none`
  its scores are held until the reveal;
- per-category, per-field and id subsets ("breakdowns") are for maintainers only: small subsets of a blind
  test tell too much about its labels; the derived bias subsets are shown;
- every interval (scores and ranks) comes from counts alone, never from which examples are right;
- counts only means counts only: to anyone but maintainers every figure is a function of the released counts
  and the split's public size (its examples, or its queried part's): every value the `full` release's (to the
  whole split's count resolution, integrity.release_percentage, on boards, exports and the API too), no subset's
  size (a bias subset is derived from the labels), no interval on a subset (its width gives the size away), ranks
  and rank intervals from the counts alone (board_snapshots: statistics.count_ranks);
- a split with a sealed part (app/evaluation/sealed.py) shows teams and the public its queried part alone:
  every release, a team's own page and the public board are computed on the queried part (the "all" figures
  are the queried part's), and the parts themselves ("queried", "sealed") are for maintainers only. After the
  reveal the board shows both parts and each entry's gap between them.

A release is decided once, when the submission is scored, and stored with the policy it was made under.
A later policy shows no more than that release and no more than what it would release itself: a file
scored under `none` stays held when the split moves to `ladder` or `full`; one the Ladder answered keeps
that one figure under `full`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
from sqlalchemy import ColumnElement, or_, true

from app.evaluation import GoldSet, Scores, display
from app.evaluation import ladder as ladder_rule
from app.evaluation import sealed as sealing
from app.lru import LRU
from app.models import Split, Submission, User
from app.services import catalog
from app.services.blind_test import integrity
from app.services.errors import NotFound

POLICIES = ("full", "ladder", "none")


# --- splits --------------------------------------------------------------------------------------------


def scores_are_public(split) -> bool:
    """Whether anyone may see the split's board: public and revealed splits, and hidden ones under `full`."""
    return not split.hidden or split.feedback == "full" or split.revealed_at is not None


def counts_only(split) -> bool:
    """A blind test before its reveal: intervals (scores and ranks) come from each entry's count alone, so
    that neither its board nor a team's own page tells more than the released counts."""
    return split.hidden and split.revealed_at is None


def sizes_shown(split) -> bool:
    """Whether anyone but maintainers is told how many examples a subset holds (the whole split's, or its
    queried part's, is always public): not on a blind test before its reveal, whose bias subsets are derived
    from its labels."""
    return not counts_only(split)


def interval_shown(split, subset: str) -> bool:
    """Whether a score's interval is shown beside it to anyone but maintainers: not a subset's on a blind test
    before its reveal (a count interval's width tells its size); the whole split's depends on the count and the
    public size alone."""
    return not counts_only(split) or subset == "all"


NO_PER_EXAMPLE = (
    "Per-example results are published for public splits only: this split is a blind test (or has a sealed part), "
    "whose examples' outcomes would tell its labels."
)


def per_example_public(split) -> bool:
    """Whether anyone (maintainers included: the pages are the same for all) is shown which examples an entry got
    right, its discordant examples with another, or any example's id beside an outcome: only on a split that is
    public (not hidden, or revealed) and has no sealed part (a sealed part stays unread, even after the reveal)."""
    return not counts_only(split) and not has_sealed_part(split)


def released_column(
    split: Split,
    task,
    gold: GoldSet,
    subsets: dict[str, np.ndarray],
    key: tuple[str, str],
    values: list[float],
    lows: list[float],
    highs: list[float],
) -> tuple[list[float], list[float], list[float]]:
    """A column of figures (values and interval bounds, one per entry; NaN where there is none) as anyone but
    maintainers may read it: on a blind test before its reveal each value the `full` release's
    (integrity.release_percentage, the team's own figure), the whole split's interval rounded outward to the
    same decimals, a subset's interval left out (interval_shown); elsewhere the column as computed. Boards,
    their exports, the API, the models view and submission pages all read their figures through here."""
    if not counts_only(split):
        return values, lows, highs
    subset, metric = key
    found = integrity.resolution(task, gold, subsets, subset, metric)
    nan = float("nan")
    shown = [integrity.release_percentage(value, found) for value in values]
    released = [nan if value is None else value for value in shown]
    if found is None or not interval_shown(split, subset):
        return released, [nan] * len(values), [nan] * len(values)
    decimals = found[1]
    bounds = [
        ladder_rule.widen_to(low, high, decimals) if math.isfinite(low) and math.isfinite(high) else (nan, nan)
        for low, high in zip(lows, highs, strict=True)
    ]
    return released, [low for low, _ in bounds], [high for _, high in bounds]


def is_breakdown(split, subset_source: str) -> bool:
    """Per-category, per-field and maintainers' id subsets of a hidden split are for maintainers only; so are
    a blind test's queried and sealed parts until its reveal (then everyone sees both)."""
    if subset_source == "sealed":
        return split.revealed_at is None
    return split.hidden and subset_source != "derived"


def public_subsets(split: Split) -> dict[str, np.ndarray]:
    """Subsets whose scores anyone may see: all of them on public splits, the derived ones on hidden ones
    (and the queried and sealed parts of a revealed one)."""
    return {s.name: s.indices for s in split.subsets if not is_breakdown(split, s.source)}


def shown_on_board(split, policy_then: str | None) -> bool:
    """Whether a published entry appears on its split's public board: on a blind test before its reveal,
    only entries whose release was a `full` one (a board shows their counts, which they were told); one
    the Ladder answered or `none` held waits for the reveal, whatever the policy now."""
    return not counts_only(split) or policy_then in ("full", None)


def board_entries(split) -> ColumnElement[bool]:
    """shown_on_board, as a condition on the submissions of the split (for the board's query)."""
    if not counts_only(split):
        return true()
    return or_(Submission.release_policy == "full", Submission.release_policy.is_(None))


def subset_metrics(task, subset_source: str, split=None) -> tuple[str, ...]:
    """Metrics scored on a subset: the split's own on the queried and sealed parts (catalog.split_metrics when
    the split is given), else the task's subset metrics (NLVR: accuracy alone)."""
    if subset_source != "sealed":
        return tuple(task.subset_metrics)
    return catalog.split_metrics(split) if split is not None else tuple(task.metrics)


def has_sealed_part(split) -> bool:
    return any(subset.source == "sealed" for subset in split.subsets)


def queried_only(split) -> bool:
    """A blind test with a sealed part, before its reveal: teams and the public see its queried part alone."""
    return split.hidden and split.revealed_at is None and has_sealed_part(split)


def queried_indices(split) -> np.ndarray | None:
    """The examples of the queried part while only it may be shown (None: the whole split is)."""
    if not queried_only(split):
        return None
    return next((s.indices for s in split.subsets if s.source == "sealed" and s.name == sealing.QUERIED), None)


def examples_shown(split) -> int:
    """How many examples the split's public figures count over: the queried part's while only it is shown."""
    part = queried_indices(split)
    return split.example_count if part is None else int(part.size)


_queried_gold: LRU[tuple[GoldSet, dict[str, np.ndarray]]] = LRU(16)


def queried_view(
    split: Split, gold: GoldSet, subsets: dict[str, np.ndarray], part: np.ndarray
) -> tuple[GoldSet, dict[str, np.ndarray]]:
    """The gold set and subsets of the queried part alone (kept per process, by what they are made of)."""
    key = (
        split.gold_sha256,
        split.choices_sha256,  # the same gold file with and without a choices file are two gold sets
        hash(part.tobytes()),
        tuple((name, hash(np.asarray(members).tobytes())) for name, members in sorted(subsets.items())),
    )
    found = _queried_gold.get(key)
    if found is None:
        found = _queried_gold.put(key, (sealing.restrict(gold, part), sealing.restrict_subsets(subsets, part)))
    return found


def release_policy(split) -> str | None:
    """The policy a submission scored now is released under: None when every score is shown."""
    return None if not split.hidden or split.revealed_at is not None else split.feedback


# --- releases ------------------------------------------------------------------------------------------


def _without_breakdowns(split: Split, inputs: catalog.ScoringInputs, scores: Scores) -> Scores:
    return {
        name: metrics
        for name, metrics in scores.items()
        if not is_breakdown(split, inputs.sources.get(name, "derived"))
    }


def _full(split: Split, inputs: catalog.ScoringInputs, scores: Scores) -> Scores:
    """What `full` releases to a team: every score but the breakdowns, to its count resolution."""
    return integrity.full_release(inputs.task, inputs.gold, inputs.subsets, _without_breakdowns(split, inputs, scores))


def _full_release(
    split: Split, inputs: catalog.ScoringInputs, scores: Scores, predictions: np.ndarray, part: np.ndarray | None
) -> Scores:
    """`full`'s release: every score to its count resolution; with a sealed part, every score computed on the
    queried part alone (its "all" is the queried part's), so that no release carries a sealed example."""
    if part is None:
        return integrity.full_release(inputs.task, inputs.gold, inputs.subsets, scores)
    gold, subsets = queried_view(split, inputs.gold, inputs.subsets, part)
    queried = inputs.task.score(gold, np.asarray(predictions)[part], subsets)
    return integrity.full_release(inputs.task, gold, subsets, queried)


def release(
    submission: Submission, split: Split, inputs: catalog.ScoringInputs, predictions: np.ndarray, scores: Scores
) -> None:
    """Decide and record what a newly scored submission releases to its team (inside the caller's write
    transaction; the Ladder's step writes its state there too)."""
    policy = release_policy(split)
    part = queried_indices(split)
    if policy is None:
        released: Scores | None = scores
    elif policy == "full":
        released = _full_release(split, inputs, scores, predictions, part)
    elif policy == "ladder":
        released = integrity.ladder_release(submission, inputs.task, inputs.gold, predictions, part)
    else:
        released = None
    submission.released = None if released is None else json.dumps(released)
    submission.release_policy = policy


def _stored(released: str | None) -> Scores | None:
    return json.loads(released) if released else None


def _as_released(split: Split, inputs: catalog.ScoringInputs, scores: Scores) -> Scores:
    """A stored release read back (its JSON keeps no decimals): each figure marked again with the decimals it
    was released to (integrity.resolution, on the queried part where only it is shown), so that it is written
    as it was released (display.Figure), on the team's page, in the API and in the client alike."""
    gold, subsets = inputs.gold, inputs.subsets
    part = queried_indices(split)
    if part is not None:
        gold, subsets = queried_view(split, gold, subsets, part)
    result: Scores = {}
    for subset, metrics in scores.items():
        for metric, value in metrics.items():
            found = integrity.resolution(inputs.task, gold, subsets, subset, metric)
            shown = value if found is None or value is None else display.figure(value, found[1])
            result.setdefault(subset, {})[metric] = shown
    return result


def team_scores(
    split: Split,
    scores: Scores,
    released: str | None,
    policy_then: str | None,
    inputs: catalog.ScoringInputs | None = None,
    predictions: np.ndarray | None = None,
) -> Scores | None:
    """What the team may see now of a submission with these scores, stored release and release policy
    (`inputs`: if already loaded; `predictions`: the submission's, to remake a release on a sealed split's
    queried part, else its stored release is shown). See the module's docstring."""
    if not split.hidden or split.revealed_at is not None:
        return scores
    stored = _stored(released)
    policy_now = split.feedback
    if stored is None or policy_now == "none" or policy_then == "none":
        return None
    inputs = inputs or catalog.scoring_inputs(split)
    if policy_now == "ladder":
        primary = inputs.task.primary_metric
        value = stored.get("all", {}).get(primary)
        return None if value is None else _as_released(split, inputs, {"all": {primary: value}})
    # `full` now: a release made under `full` is made again from today's scores (a label correction or a new
    # bias subset shows); any other keeps what it released, less the breakdowns.
    part = queried_indices(split)
    if policy_then in ("full", None) and part is None:
        return _full(split, inputs, scores) or None
    if policy_then in ("full", None) and predictions is not None:
        remade = _full_release(split, inputs, scores, predictions, part)
        return _without_breakdowns(split, inputs, remade) or None
    return _as_released(split, inputs, _without_breakdowns(split, inputs, stored)) or None


def released_scores(submission: Submission) -> Scores | None:
    """Scores the submission's team may see now (None: held, or the file was rejected)."""
    if submission.status != "scored":
        return None
    split = submission.split
    if queried_only(split) and submission.predictions is not None and split.feedback == "full":
        inputs = catalog.scoring_inputs(split)
        predictions = inputs.task.decode(submission.predictions, inputs.gold.n)
        return team_scores(
            split, scores_of(submission), submission.released, submission.release_policy, inputs, predictions
        )
    return team_scores(split, scores_of(submission), submission.released, submission.release_policy)


def scores_of(submission: Submission) -> Scores:
    result: Scores = {}
    for score in submission.scores:
        result.setdefault(score.subset, {})[score.metric] = score.value
    return result


# --- viewers -------------------------------------------------------------------------------------------


def _roles(user: User | None, submission: Submission) -> tuple[bool, bool]:
    """(maintainer, member of the submission's team) for a signed-in user; (False, False) for anyone else."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False, False
    return bool(user.is_admin), bool(user.is_member(submission.team_id))


def is_team_or_maintainer(user: User | None, submission: Submission) -> bool:
    """Who may open a submission whatever its state: its team's members and maintainers."""
    return any(_roles(user, submission))


def on_public_board(submission: Submission) -> bool:
    """A published, visible entry of a split whose board anyone may see."""
    return (
        submission.status == "scored"
        and submission.published_at is not None
        and submission.hidden_at is None
        and scores_are_public(submission.split)
        and shown_on_board(submission.split, submission.release_policy)
    )


@dataclass
class SubmissionView:
    """What one viewer may see of one submission."""

    scores: Scores | None  # None: held (or rejected)
    is_admin: bool
    is_member: bool
    withheld_reason: str | None
    breakdowns_held: bool  # per-category/per-field scores of a hidden split kept from this viewer
    intervals_shown: bool
    # The figures shown are the queried part's (a sealed blind test before its reveal, to anyone but
    # maintainers): their intervals are computed on it too.
    queried_part: np.ndarray | None = None

    @property
    def public_view(self) -> bool:
        return not (self.is_admin or self.is_member)


HELD = "Scores on this hidden split are held until the maintainers reveal it."
NO_LADDER_FIGURE = (
    "The Ladder released no figure for this file: it did not clearly beat the best already released to the "
    "account that sent it, through another of its teams, and this team had no figure of its own yet."
)


def _withheld_reason(submission: Submission, split: Split) -> str:
    """Why a scored submission shows no score: held, or (under the Ladder) nothing new to release to its team."""
    if submission.release_policy == "ladder" and submission.released is None and split.feedback != "none":
        return NO_LADDER_FIGURE
    return HELD


def submission_view(user: User | None, submission: Submission) -> SubmissionView:
    """Everything to maintainers; the release to the team's members; to anyone else a published, visible
    entry of a split whose board is public, as the board shows it (else NotFound)."""
    is_admin, is_member = _roles(user, submission)
    if not (is_admin or is_member or on_public_board(submission)):
        raise NotFound(f"no submission {submission.id}")
    split = submission.split
    scored = submission.status == "scored"
    released = released_scores(submission)
    scores = scores_of(submission) if is_admin and scored else released
    withheld = _withheld_reason(submission, split) if scored and released is None else None
    held = False
    if scores and not is_admin:
        kinds = {subset.name: subset.source for subset in split.subsets}
        held = any(is_breakdown(split, kind) for kind in kinds.values() if kind != "sealed")
        scores = {
            name: values
            for name, values in scores.items()
            if name == "all" or not is_breakdown(split, kinds.get(name, "ids"))
        }
    # Intervals go with the scores the board shows: never beside a release that is not the file's own count.
    intervals = bool(scores) and (
        is_admin or (scores_are_public(split) and shown_on_board(split, submission.release_policy))
    )
    return SubmissionView(
        scores, is_admin, is_member, withheld, held, intervals, None if is_admin else queried_indices(split)
    )
