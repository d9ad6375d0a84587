"""The demo: synthetic benchmarks of every task type, a few teams and scored, published submissions.

Idempotent: anything that already exists is left as it is.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import Benchmark, Split, Submission
from app.services import accounts, catalog, submissions, teams
from app.services.errors import NotFound


@dataclass(frozen=True)
class DemoSplit:
    slug: str
    name: str
    size: int
    hidden: bool = False
    annotations: bool = False


@dataclass(frozen=True)
class DemoBenchmark:
    slug: str
    task: str
    name: str
    description: str
    splits: tuple[DemoSplit, ...]
    subset_field: str | None = None


BENCHMARKS = (
    DemoBenchmark(
        "demo-nlvr2", "nlvr2", "NLVR2 (demo)",
        "Synthetic data in the shape of NLVR2: is a sentence true of a pair of photographs? "
        "Sets of four image pairs, each with two sentences.",
        (
            DemoSplit("dev", "Dev", 6982, annotations=True),
            DemoSplit("test-p", "Test-P", 6967),
            DemoSplit("test-u", "Test-U", 6970, hidden=True),
        ),
    ),
    DemoBenchmark(
        "demo-nlvr", "nlvr-structured", "NLVR structured (demo)",
        "Synthetic data in the shape of NLVR with structured representations: four examples a sentence.",
        (DemoSplit("dev", "Dev", 5940), DemoSplit("test-p", "Test-P", 5936), DemoSplit("test-u", "Test-U", 5940, hidden=True)),
    ),
    DemoBenchmark(
        "demo-nlvr-images", "nlvr-images", "NLVR images (demo)",
        "Synthetic data in the shape of NLVR, scored over images: six box permutations an example.",
        (DemoSplit("dev", "Dev", 5940), DemoSplit("test-u", "Test-U", 5940, hidden=True)),
    ),
    DemoBenchmark(
        "demo-vcr", "vcr", "VCR (demo)",
        "Synthetic data in the shape of VCR: four answers, then four rationales for each answer.",
        (DemoSplit("val", "Val", 3000), DemoSplit("test", "Test", 3000, hidden=True)),
        subset_field="region",
    ),
)

# (team, model, accuracy on binary tasks / per stage on VCR, description, paper URL)
TEAMS = (
    ("Aurora Lab", "Aurora-L (ensemble)", 0.86, "Cross-attention ensemble of five seeds.", "https://example.org/aurora"),
    ("Gradient Descenders", "GD-Base", 0.79, "Two-stream encoder fine-tuned on the training split.", None),
    ("Pixel Reasoners", "PixR", 0.74, "Object detector features with a small reasoning module.", "https://example.org/pixr"),
    ("Chance Baselines", "Majority class", None, "Predicts true everywhere (VCR: the first choice).", None),
)


# Demo accounts so a newcomer can log in and try an upload; they exist only where `demo` was run.
DEMO_USERS = (
    ("member@demo.holdout", "holdout-demo", False, "Aurora Lab"),
    ("admin@demo.holdout", "holdout-admin", True, None),
)


def load_demo(progress=None) -> dict[str, int]:
    """Create whatever part of the demo is missing; return counts of what was created."""
    created = {"benchmarks": 0, "splits": 0, "teams": 0, "users": 0, "submissions": 0}
    for team_name, *_ in TEAMS:
        if teams.find_team(team_name) is None:
            teams.create_team(team_name)
            created["teams"] += 1
    for email, password, admin, team_name in DEMO_USERS:
        if accounts.get_user_by_email(email) is None:
            user = accounts.create_user(email, password, admin=admin)
            if team_name:
                teams.add_member(teams.find_team(team_name), user)
            created["users"] += 1
    for seed, spec in enumerate(BENCHMARKS):
        if db.session.scalar(select(Benchmark.id).where(Benchmark.slug == spec.slug)) is None:
            catalog.add_benchmark(spec.slug, spec.task, spec.name, spec.description, "https://example.org/paper")
            created["benchmarks"] += 1
        for number, split_spec in enumerate(spec.splits):
            split_seed = 100 * seed + number
            split = _ensure_split(spec, split_spec, split_seed, created)
            gold = _gold_bytes(spec, split_spec, split_seed)
            for team_number, (team_name, model, accuracy, description, paper) in enumerate(TEAMS):
                if _has_submission(split, team_name, model):
                    continue
                if accuracy is None:
                    data = _chance_file(spec.task, gold, split_spec.slug)
                else:
                    data = synthetic.predictions(spec.task, gold, accuracy, seed=split_seed * 10 + team_number,
                                                 **_split_kw(spec.task, split_spec.slug))
                submissions.store_scored(
                    split, teams.find_team(team_name), data, model_name=model, description=description,
                    paper_url=paper, publish=True,
                )
                created["submissions"] += 1
            if progress:
                progress(f"{spec.slug}/{split_spec.slug}")
    return created


def _ensure_split(spec: DemoBenchmark, split_spec: DemoSplit, seed: int, created: dict) -> Split:
    try:
        return catalog.get_split(spec.slug, split_spec.slug)
    except NotFound:
        pass
    gold = _gold_bytes(spec, split_spec, seed)
    annotations = synthetic.nlvr2_annotations(gold, 100, seed=seed) if split_spec.annotations else None
    created["splits"] += 1
    return catalog.add_split(
        spec.slug, split_spec.slug, gold, hidden=split_spec.hidden, name=split_spec.name,
        annotations=annotations, subset_field=spec.subset_field,
    )


def _gold_bytes(spec: DemoBenchmark, split_spec: DemoSplit, seed: int) -> bytes:
    if spec.task == "nlvr2":
        return synthetic.nlvr2_gold(split_spec.size, split=split_spec.slug.replace("-", ""), seed=seed)
    if spec.task == "vcr":
        return synthetic.vcr_gold(split_spec.size, seed=seed)
    return synthetic.nlvr_gold(split_spec.size, seed=seed)


def _split_kw(task: str, split_slug: str) -> dict:
    return {"split": split_slug.replace("-", "")} if task == "nlvr-images" else {}


def _chance_file(task: str, gold: bytes, split_slug: str) -> bytes:
    if task == "vcr":
        return synthetic.predictions(task, gold, 0.25, seed=7)
    return synthetic.all_true(task, gold, **_split_kw(task, split_slug))


def _has_submission(split: Split, team_name: str, model: str) -> bool:
    team = teams.find_team(team_name)
    return db.session.scalar(
        select(Submission.id).where(
            Submission.split_id == split.id, Submission.team_id == team.id, Submission.model_name == model
        )
    ) is not None
