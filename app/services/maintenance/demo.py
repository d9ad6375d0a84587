"""The demo: synthetic benchmarks of every task type, a few teams and scored, published submissions.

Each demo benchmark is a bundle in the repository (``bundles/<slug>/``: benchmark.yaml and its gzipped files),
applied as a maintainer's bundle is (app/services/maintenance/bundles.py), so the demo is also the bundles'
example. The bundles are made from what each family says of its demo benchmarks (its folder's demo.py, plain
data) by ``demo_bundle``, which ``scripts/make_demo_bundles.py`` writes out; a demo benchmark with no bundle in
the repository (a family added since) is made the same way in memory.

One board, the NLVR2 demo's Test-P, holds 60 entries with their fact sheets filled in (demo_crowd), a few
verified: a board to slice by track.

Idempotent: anything that already exists is left as it is (a benchmark already there is not applied again).
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from app.bundles import (
    Bundle,
    EntryFieldSpec,
    FileRef,
    LoadedBundle,
    ReferenceSpec,
    SplitSpec,
    TrackSpec,
    canonical_yaml,
    read_bundle,
)
from app.db import db
from app.evaluation import get_task
from app.evaluation.tasks import DemoBenchmark, DemoSplit, demo_benchmarks
from app.models import Benchmark, Split, Submission, Team, utcnow
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots
from app.services.catalog import label_files, phases
from app.services.intake import submissions
from app.services.jobs import transport
from app.services.maintenance import bundles, demo_crowd
from app.services.people import accounts, teams
from app.services.storage import checksums

# The repository's demo bundles (made by scripts/make_demo_bundles.py from demo_bundle).
BUNDLES_DIR = Path(__file__).resolve().parents[3] / "bundles"

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

# The fact sheet every demo benchmark asks for (the entry fields suggested for a benchmark), and what each demo
# team's model states (a sweep run states the sweep's).
ENTRY_FIELDS = (
    EntryFieldSpec(key="zero_shot", label="Zero-shot", type="yesno", filter=True),
    EntryFieldSpec(key="extra_data", label="Extra training data", type="yesno", filter=True),
    EntryFieldSpec(key="parameters", label="Parameters", type="integer", unit="parameters", column=True, filter=True),
    EntryFieldSpec(key="open_weights", label="Open weights", type="yesno", filter=True),
    EntryFieldSpec(key="code_url", label="Code", type="url"),
)
# The tracks every demo benchmark defines over those fields (the tracks suggested for a benchmark).
TRACKS = (
    TrackSpec(name="zero-shot", label="Zero-shot", where=["zero_shot:yes"]),
    TrackSpec(name="small", label="Under 1B parameters", where=["parameters<=1000000000"]),
)
STATED: dict[str, dict[str, bool | int | str]] = {
    "PixR": {"zero_shot": True, "extra_data": False, "parameters": 64_000_000, "open_weights": True},
    "VGG-Lite": {"zero_shot": False, "extra_data": False, "parameters": 23_000_000, "open_weights": True},
    "GD-Base": {
        "zero_shot": False,
        "extra_data": True,
        "parameters": 220_000_000,
        "open_weights": True,
        "code_url": "https://example.org/gd-base",
    },
    "Aurora-L (ensemble)": {"zero_shot": False, "extra_data": True, "parameters": 5_400_000_000, "open_weights": False},
}
SWEEP_STATED: dict[str, bool | int | str] = {
    "zero_shot": False,
    "extra_data": False,
    "parameters": 110_000_000,
    "open_weights": True,
    "code_url": "https://example.org/sweepnet",
}

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
    specs = list(demo_benchmarks() if benchmarks is None else benchmarks)
    for seed, spec in enumerate(specs):
        if db.session.scalar(select(Benchmark.id).where(Benchmark.slug == spec.slug)) is None:
            bundles.apply_bundle(None, _demo_loaded(spec, seed), via="demo")
            created["benchmarks"] += 1
            created["splits"] += len(spec.splits)
            created["references"] += sum(len(references_for(spec.task, split.slug)) for split in spec.splits)
        for number, split_spec in enumerate(spec.splits):
            split = catalog.get_split(spec.slug, split_spec.slug)
            if split_spec.hidden and split.closes_at is None and split.opens_at is None:
                # A blind test runs as a challenge: open for 90 days from the demo's making.
                closes = (now + timedelta(days=90)).replace(hour=23, minute=59, second=0, microsecond=0)
                split = phases.set_phase(spec.slug, split_spec.slug, closes_at=closes)
            gold = functools.cache(functools.partial(label_files.gold_bytes, split))
            for run_number, run in enumerate(_runs(spec, now)):
                seed_of_run = (100 * seed + number) * 100 + run_number
                stored = _ensure_run(spec, split_spec, split, gold, by_name, seed_of_run, run)
                created["submissions"] += stored is not None
            if progress:
                progress(f"{spec.slug}/{split_spec.slug}")
    # After every other run, so that the submissions made before the crowded board keep their ids.
    created["submissions"] += _ensure_crowd(specs, by_name, now)
    if transport.inline():
        # In-process a board is built by its first reader; the demo builds its boards now (seconds), so the
        # server it is loaded for serves them at once, and runs any other job it queued (nothing waits: /healthz ok).
        for split in db.session.scalars(select(Split).order_by(Split.id)).all():
            if visibility.scores_are_public(split):
                board_snapshots.snapshot(split)
        transport.run_due_here()
    return created


def _demo_loaded(spec: DemoBenchmark, seed: int) -> LoadedBundle:
    """The demo benchmark's bundle: the repository's (bundles/<slug>/), else made now as the script makes it."""
    folder = BUNDLES_DIR / spec.slug
    if (folder / "benchmark.yaml").is_file():
        return read_bundle(folder)
    bundle, files = demo_bundle(spec, seed)
    return LoadedBundle(bundle=bundle, files=files, yaml_bytes=canonical_yaml(bundle))


def demo_bundle(spec: DemoBenchmark, seed: int, *, gzipped: bool = False) -> tuple[Bundle, dict[str, bytes]]:
    """A demo benchmark as a bundle (its files by path; ``gzipped``: as .gz files, what the repository keeps
    of its 41 MB of synthetic gold files): its splits' synthetic gold files (seeds from ``seed``, its place among
    the demo benchmarks), annotation and choices files, reference rows, the policy a split of its kind gets by
    default (the bundle model's), and its last public split as the landing page (where the crowd is: hidden
    splits hold their scores until revealed)."""
    files: dict[str, bytes] = {}
    splits = []

    def kept(path: str, data: bytes) -> FileRef:
        if gzipped:  # mtime 0: the same bytes on every run
            path, data = f"{path}.gz", gzip.compress(data, compresslevel=9, mtime=0)
        files[path] = data
        return FileRef(file=path, sha256=checksums.sha256(data))

    for number, split_spec in enumerate(spec.splits):
        split_seed = 100 * seed + number
        gold = _gold_bytes(spec, split_spec, split_seed)
        base = f"splits/{split_spec.slug}"
        annotations = split_spec.annotations(gold, split_seed) if split_spec.annotations else None
        choices = split_spec.choices(gold, split_seed) if split_spec.choices else None
        splits.append(
            SplitSpec(
                slug=split_spec.slug,
                name=split_spec.name,
                hidden=split_spec.hidden,
                labels=kept(f"{base}/labels.jsonl", gold),
                annotations=kept(f"{base}/annotations.txt", annotations) if annotations else None,
                choices=kept(f"{base}/choices.json", choices) if choices else None,
                subset_field=spec.subset_field,
                references=[
                    ReferenceSpec(name=name, scores=scores, source=url)
                    for name, scores, url in references_for(spec.task, split_spec.slug)
                ],
            )
        )
    public = [split_spec.slug for split_spec in spec.splits if not split_spec.hidden]
    bundle = Bundle(
        format=1,
        slug=spec.slug,
        name=spec.name,
        description=spec.description,
        paper_url="https://example.org/paper",
        task=spec.task,
        default_split=public[-1] if public else None,
        entry_fields=list(ENTRY_FIELDS),
        tracks=list(TRACKS),
        splits=splits,
    )
    return bundle, files


def _ensure_teams_and_users(created: dict[str, int]) -> dict[str, Team]:
    """The demo's teams (by name) and accounts, created where missing."""
    by_name: dict[str, Team] = {}
    for team_name in [team[0] for team in TEAMS] + [SWEEP_TEAM] + [team for team, _ in demo_crowd.TEAMS]:
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
    fields: dict[str, bool | int | str] | None = None,
) -> Submission | None:
    """Store and publish a run's synthetic predictions unless already there (None), with `fields` (by default
    what its model states, STATED)."""
    team_name, model, accuracy, description, paper, moment = run
    if _has_submission(split, by_name[team_name], model):
        return None
    task = get_task(spec.task)
    data = task.synthetic_predictions(gold(), accuracy, seed=seed, **task.demo_split_options(split_spec.slug))
    if fields is None:
        fields = STATED.get(model, SWEEP_STATED if team_name == SWEEP_TEAM else {})
    return submissions.store_scored(
        split,
        by_name[team_name],
        data,
        model_name=model,
        description=description,
        paper_url=paper,
        publish=True,
        submitted_at=moment,
        fields=fields,
    )


def _ensure_crowd(specs: list[DemoBenchmark], by_name: dict[str, Team], now: datetime) -> int:
    """The crowded board's other runs (demo_crowd), where its benchmark is part of the demo being loaded, and the
    maintainer's checks of those it marks verified: how many were stored."""
    place = next((seed for seed, spec in enumerate(specs) if spec.slug == demo_crowd.BENCHMARK), None)
    if place is None:
        return 0
    spec = specs[place]
    number, split_spec = next((n, s) for n, s in enumerate(spec.splits) if s.slug == demo_crowd.SPLIT)
    split = catalog.get_split(spec.slug, split_spec.slug)
    gold = functools.cache(functools.partial(label_files.gold_bytes, split))
    first = len(_runs(spec, now))  # seeds go on from the split's other runs'
    stored = 0
    for offset, crowd in enumerate(demo_crowd.runs()):
        run = (crowd.team, crowd.model, crowd.accuracy, crowd.description, crowd.paper_url, crowd.submitted_at(now))
        seed = (100 * place + number) * 100 + first + offset
        submission = _ensure_run(spec, split_spec, split, gold, by_name, seed, run, crowd.fields)
        if submission is None:
            continue
        stored += 1
        if crowd.verified:
            submissions.verify(None, submission.id, *crowd.verified, via="demo")
    return stored


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
