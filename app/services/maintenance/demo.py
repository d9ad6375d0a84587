"""The demo: synthetic benchmarks of every task type, a few teams and scored, published submissions.

What each benchmark is, is written in its family's folder (app/evaluation/tasks/<family>/demo.py, plain data);
this module turns them into rows.

Idempotent: anything that already exists is left as it is.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import select

from app.db import db
from app.evaluation import get_task
from app.evaluation.tasks import DemoBenchmark, DemoSplit, demo_benchmarks
from app.models import Benchmark, Reference, Split, Submission, Team, utcnow
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots
from app.services.catalog import phases, references
from app.services.errors import NotFound
from app.services.intake import submissions
from app.services.jobs import transport
from app.services.people import accounts, teams

# Every family's demo benchmarks (its folder's demo.py), in the order the app lists the families.
BENCHMARKS: tuple[DemoBenchmark, ...] = demo_benchmarks()

# (team, model, accuracy on binary tasks / per stage on VCR, description, paper URL, days before the demo
# is loaded): entries spread over about two years, so the progress chart shows a field improving.
TEAMS = (
    (
        "Pixel Reasoners",
        "PixR",
        0.74,
        "Object detector features with a small reasoning module.",
        "https://example.org/pixr",
        700,
    ),
    ("Visual Grounding Group", "VGG-Lite", 0.70, "A grounding model without pretraining.", None, 610),
    ("Gradient Descenders", "GD-Base", 0.79, "Two-stream encoder fine-tuned on the training split.", None, 430),
    (
        "Aurora Lab",
        "Aurora-L (ensemble)",
        0.86,
        "Cross-attention ensemble of five seeds.",
        "https://example.org/aurora",
        150,
    ),
)

# A team that publishes every run of a hyperparameter sweep: a crowded board, and what view=teams is for.
SWEEP_TEAM = "Sweep Lab"
SWEEP = tuple(
    (f"SweepNet lr={lr} seed={seed}", accuracy)
    for (lr, seed), accuracy in zip(
        [(lr, seed) for lr in ("1e-5", "3e-5", "1e-4", "3e-4") for seed in (1, 2, 3)],
        (0.78, 0.79, 0.785, 0.80, 0.805, 0.81, 0.815, 0.82, 0.81, 0.77, 0.765, 0.775),
        strict=True,
    )
)


def references_for(task: str, split_slug: str) -> list[tuple[str, dict, str]]:
    """Reference rows as the papers report them (human performance; the majority class, which the papers
    give per split; chance on VCR): the task family knows them."""
    return [(name, dict(scores), url) for name, scores, url in get_task(task).demo_references(split_slug)]


# Demo accounts so a newcomer can log in and try an upload; they exist only where `demo` was run.
DEMO_USERS: tuple[tuple[str, str, bool, str | None], ...] = (
    ("member@demo.holdout", "holdout-demo", False, "Aurora Lab"),
    ("admin@demo.holdout", "holdout-admin", True, None),
)


def load_demo(
    progress: Callable[[str], object] | None = None, benchmarks: Sequence[DemoBenchmark] | None = None
) -> dict[str, int]:
    """Create whatever part of the demo is missing; return counts of what was created. ``benchmarks``: the demo
    benchmarks to load (every family's, found now, by default); each one's seeds follow from its place in it."""
    created = {"benchmarks": 0, "splits": 0, "teams": 0, "users": 0, "submissions": 0, "references": 0}
    now = utcnow()
    by_name = _ensure_teams_and_users(created)
    for seed, spec in enumerate(demo_benchmarks() if benchmarks is None else benchmarks):
        if db.session.scalar(select(Benchmark.id).where(Benchmark.slug == spec.slug)) is None:
            catalog.add_benchmark(spec.slug, spec.task, spec.name, spec.description, "https://example.org/paper")
            created["benchmarks"] += 1
        for number, split_spec in enumerate(spec.splits):
            split_seed = 100 * seed + number
            # Made at most once a split, and only if something is missing (~0.5 s for a large one).
            gold = functools.cache(functools.partial(_gold_bytes, spec, split_spec, split_seed))
            split = _ensure_split(spec, split_spec, gold, split_seed, created)
            for run_number, run in enumerate(_runs(spec, now)):
                seed_of_run = split_seed * 100 + run_number
                created["submissions"] += _ensure_run(spec, split_spec, split, gold, by_name, seed_of_run, run)
            created["references"] += _ensure_references(spec, split_spec, split)
            if progress:
                progress(f"{spec.slug}/{split_spec.slug}")
        # Hidden splits start under the Ladder, so their boards hold scores until revealed: the demo lands
        # on its last public split, where the crowd is (a maintainer's choice, as on a real deployment).
        benchmark = catalog.get_benchmark(spec.slug)
        if benchmark.default_split_id is None:
            public = [split_spec for split_spec in spec.splits if not split_spec.hidden]
            catalog.pin_default_split(spec.slug, public[-1].slug)
    if transport.inline():
        # In-process a board is built by its first reader; the demo builds its boards now (seconds), so the
        # server it is loaded for serves them at once, and runs any other job it queued (nothing waits: /healthz ok).
        for split in db.session.scalars(select(Split).order_by(Split.id)).all():
            if visibility.scores_are_public(split):
                board_snapshots.snapshot(split)
        transport.run_due_here()
    return created


def _ensure_teams_and_users(created: dict[str, int]) -> dict[str, Team]:
    """The demo's teams (by name) and accounts, created where missing."""
    by_name: dict[str, Team] = {}
    for team_name in [team[0] for team in TEAMS] + [SWEEP_TEAM]:
        found = teams.find_team(team_name)
        if found is None:
            found = teams.create_team(team_name)
            created["teams"] += 1
        by_name[team_name] = found
    for email, password, admin, member_of in DEMO_USERS:
        if accounts.get_user_by_email(email) is None:
            user = accounts.create_user(email, password, admin=admin)
            if member_of:
                teams.add_member(by_name[member_of], user)
                teams.set_shown(by_name[member_of], user, True)  # named on the team's public page
            created["users"] += 1
    return by_name


# A run: (team, model, accuracy, description, paper URL, submitted at).
Run = tuple[str, str, float, str, str | None, datetime]


def _runs(spec: DemoBenchmark, now: datetime) -> list[Run]:
    """Every submission of a demo split, in the order (and so with the seeds) they are made."""
    runs: list[Run] = [
        (team_name, model, accuracy, description, paper, now - timedelta(days=days))
        for team_name, model, accuracy, description, paper, days in TEAMS
    ]
    if spec.sweep:
        runs += [
            (
                SWEEP_TEAM,
                model,
                accuracy,
                "One run of a learning-rate and seed sweep.",
                None,
                now - timedelta(days=90 - 7 * index),
            )
            for index, (model, accuracy) in enumerate(SWEEP)
        ]
    return runs


def _ensure_run(
    spec: DemoBenchmark,
    split_spec: DemoSplit,
    split: Split,
    gold: Callable[[], bytes],
    by_name: dict[str, Team],
    seed: int,
    run: Run,
) -> int:
    """Store and publish a run's synthetic predictions unless already there: how many were stored (0 or 1)."""
    team_name, model, accuracy, description, paper, moment = run
    if _has_submission(split, by_name[team_name], model):
        return 0
    task = get_task(spec.task)
    data = task.synthetic_predictions(gold(), accuracy, seed=seed, **task.demo_split_options(split_spec.slug))
    submissions.store_scored(
        split,
        by_name[team_name],
        data,
        model_name=model,
        description=description,
        paper_url=paper,
        publish=True,
        submitted_at=moment,
    )
    return 1


def _ensure_references(spec: DemoBenchmark, split_spec: DemoSplit, split: Split) -> int:
    """The split's reference rows, added where missing: how many were added."""
    added = 0
    for name, scores, url in references_for(spec.task, split_spec.slug):
        if (
            db.session.scalar(select(Reference.id).where(Reference.split_id == split.id, Reference.name == name))
            is None
        ):
            references.add_reference(spec.slug, split_spec.slug, name, json.dumps(scores), url, via="demo")
            added += 1
    return added


def _ensure_split(
    spec: DemoBenchmark, split_spec: DemoSplit, gold: Callable[[], bytes], seed: int, created: dict
) -> Split:
    try:
        return catalog.get_split(spec.slug, split_spec.slug)
    except NotFound:
        pass
    annotations = split_spec.annotations(gold(), seed) if split_spec.annotations else None
    choices = split_spec.choices(gold(), seed) if split_spec.choices else None
    created["splits"] += 1
    split = catalog.add_split(
        spec.slug,
        split_spec.slug,
        gold(),
        hidden=split_spec.hidden,
        name=split_spec.name,
        annotations=annotations,
        subset_field=spec.subset_field,
        choices=choices,
    )
    if split_spec.hidden:  # a blind test runs as a challenge: open for 90 days from the demo's making
        closes = (utcnow() + timedelta(days=90)).replace(hour=23, minute=59, second=0, microsecond=0)
        split = phases.set_phase(spec.slug, split_spec.slug, closes_at=closes)
    return split


def _gold_bytes(spec: DemoBenchmark, split_spec: DemoSplit, seed: int) -> bytes:
    """The split's synthetic gold file (identifiers that name the split drop its '-': test-u -> testu)."""
    return get_task(spec.task).synthetic_gold(split_spec.size, seed=seed, split=split_spec.slug.replace("-", ""))


def _has_submission(split: Split, team: Team, model: str) -> bool:
    return (
        db.session.scalar(
            select(Submission.id).where(
                Submission.split_id == split.id, Submission.team_id == team.id, Submission.model_name == model
            )
        )
        is not None
    )
