"""Reference rows: baselines and human performance from papers, shown on a leaderboard but never ranked."""

from __future__ import annotations

import json
import math
import re

from sqlalchemy import select

from app.db import db
from app.evaluation import get_task
from app.models import Reference, Split, User
from app.services import catalog
from app.services.audit import audit_log
from app.services.errors import InvalidInput, NotFound, check_visible

URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)
Scores = dict[str, dict[str, float]]


def parse_scores(split: Split, scores_json: str) -> Scores:
    """'{"subset": {"metric": number 0-100}}' checked against the split's subsets and the task's metrics."""
    try:
        scores = json.loads(scores_json)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f'scores must be JSON like {{"all": {{"accuracy": 96.1}}}}: {exc}') from exc
    if not isinstance(scores, dict) or not scores:
        raise InvalidInput('scores must be a non-empty JSON object like {"all": {"accuracy": 96.1}}')
    task = get_task(split.benchmark.task_type)
    subsets = {"all"} | {subset.name for subset in split.subsets}
    cleaned: Scores = {}
    for subset, metrics in scores.items():
        if subset not in subsets:
            raise InvalidInput(f"scores: unknown subset {subset!r}; this split has: {', '.join(sorted(subsets))}")
        allowed = task.metrics if subset == "all" else task.subset_metrics
        if not isinstance(metrics, dict) or not metrics:
            raise InvalidInput(f'scores[{subset!r}] must be an object of metric: value, e.g. {{"{allowed[0]}": 50.0}}')
        for metric, value in metrics.items():
            if metric not in allowed:
                raise InvalidInput(f"scores[{subset!r}]: unknown metric {metric!r}; choose from {', '.join(allowed)}")
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or not 0 <= value <= 100
            ):
                raise InvalidInput(f"scores[{subset!r}][{metric!r}] must be a number from 0 to 100 (a percentage)")
            cleaned.setdefault(subset, {})[metric] = float(value)
    return cleaned


def add_reference(
    benchmark_slug: str,
    split_slug: str,
    name: str,
    scores_json: str,
    source_url: str | None = None,
    *,
    actor: User | None = None,
    via: str = "cli",
) -> Reference:
    """Add a reference row to a split's leaderboard (it is recomputed on the next view); audited."""
    split = catalog.get_split(benchmark_slug, split_slug)
    name = (name or "").strip()
    if not name:
        raise InvalidInput('name is required, e.g. "Human" or "Majority class"')
    if len(name) > 200:
        raise InvalidInput("name must have at most 200 characters")
    check_visible("the name", name)
    source_url = (source_url or "").strip() or None
    if source_url is not None and (len(source_url) > 500 or not URL.match(source_url)):
        raise InvalidInput("source must be an http:// or https:// address of at most 500 characters")
    check_visible("the source", source_url)
    reference = Reference(
        split=split, name=name, scores=json.dumps(parse_scores(split, scores_json)), source_url=source_url
    )
    db.session.add(reference)
    split.board_version += 1
    audit_log.record(
        actor,
        "reference.add",
        f"{benchmark_slug}/{split_slug}",
        {"name": name, "scores": json.loads(reference.scores), "source": source_url, "via": via},
    )
    db.session.commit()
    return reference


def list_references(benchmark_slug: str, split_slug: str) -> list[Reference]:
    split = catalog.get_split(benchmark_slug, split_slug)
    return list(db.session.scalars(select(Reference).where(Reference.split_id == split.id).order_by(Reference.id)))


def remove_reference(
    benchmark_slug: str, split_slug: str, reference_id: int, *, actor: User | None = None, via: str = "cli"
) -> Reference:
    split = catalog.get_split(benchmark_slug, split_slug)
    reference = db.session.get(Reference, reference_id)
    if reference is None or reference.split_id != split.id:
        raise NotFound(f"no reference row {reference_id} on {benchmark_slug}/{split_slug}")
    db.session.delete(reference)
    split.board_version += 1
    audit_log.record(
        actor,
        "reference.remove",
        f"{benchmark_slug}/{split_slug}",
        {"id": reference_id, "name": reference.name, "via": via},
    )
    db.session.commit()
    return reference
