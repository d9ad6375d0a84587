"""Reference rows: baselines and human performance from papers, shown on a leaderboard but never ranked.

A row stands where its primary score falls among the entries, dated by the day its figures were published
(`published_on`, the paper's date) when the maintainer gave it.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date

from sqlalchemy import select

from app.db import commit, db
from app.models import Reference, Split, User, utcnow
from app.services import catalog
from app.services.audit import audit_log
from app.services.catalog.task_types import task_of
from app.services.errors import InvalidInput, NotFound, check_visible

URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EARLIEST = date(1900, 1, 1)  # before any benchmark; a year typed short (0019-07-28) is a typing mistake
Scores = dict[str, dict[str, float]]


def parse_scores(split: Split, scores_json: str) -> Scores:
    """'{"subset": {"metric": number 0-100}}' checked against the split's subsets and the task's metrics."""
    try:
        scores = json.loads(scores_json)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f'scores must be JSON like {{"all": {{"accuracy": 96.1}}}}: {exc}', field="scores") from exc
    except RecursionError as exc:  # the decoder's answer to deep nesting ([[[[...]]]]): not a ValueError
        raise InvalidInput(
            'scores must be JSON like {"all": {"accuracy": 96.1}}: nested too deeply', field="scores"
        ) from exc
    if not isinstance(scores, dict) or not scores:
        raise InvalidInput('scores must be a non-empty JSON object like {"all": {"accuracy": 96.1}}', field="scores")
    task = task_of(split.benchmark)
    subsets = {"all"} | {subset.name for subset in split.subsets}
    cleaned: Scores = {}
    for subset, metrics in scores.items():
        if subset not in subsets:
            raise InvalidInput(
                f"scores: unknown subset {subset!r}; this split has: {', '.join(sorted(subsets))}", field="scores"
            )
        allowed = catalog.split_metrics(split) if subset == "all" else task.subset_metrics
        if not isinstance(metrics, dict) or not metrics:
            raise InvalidInput(
                f'scores[{subset!r}] must be an object of metric: value, e.g. {{"{allowed[0]}": 50.0}}', field="scores"
            )
        for metric, value in metrics.items():
            if metric not in allowed:
                raise InvalidInput(
                    f"scores[{subset!r}]: unknown metric {metric!r}; choose from {', '.join(allowed)}", field="scores"
                )
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or not 0 <= value <= 100
            ):
                raise InvalidInput(
                    f"scores[{subset!r}][{metric!r}] must be a number from 0 to 100 (a percentage)", field="scores"
                )
            cleaned.setdefault(subset, {})[metric] = float(value)
    return cleaned


def parse_date(text: str | date | None) -> date | None:
    """The day a reference's figures were published, as YYYY-MM-DD (None when not given); InvalidInput naming
    the date for anything else, a day that does not exist, or one in the future."""
    if text is None or isinstance(text, date):
        day = text
    else:
        text = text.strip()
        if not text:
            return None
        # fromisoformat alone would also take 20190728 and 2019-W30-7; a paper's date is written one way.
        try:
            day = date.fromisoformat(text) if DAY.match(text) else None
        except ValueError:
            day = None
        if day is None:
            raise InvalidInput(
                f"date must be the day the figures were published, as YYYY-MM-DD (e.g. 2019-07-28), got {text[:40]!r}",
                field="date",
            )
    if day is not None and not EARLIEST <= day <= utcnow().date():
        raise InvalidInput(f"date must be between {EARLIEST} and today, got {day}", field="date")
    return day


def add_reference(
    benchmark_slug: str,
    split_slug: str,
    name: str,
    scores_json: str,
    source_url: str | None = None,
    *,
    published_on: str | date | None = None,
    actor: User | None = None,
    via: str = "cli",
) -> Reference:
    """Add a reference row to a split's leaderboard (it is recomputed on the next view), dated `published_on`
    (YYYY-MM-DD, the day its figures were published) when given; audited."""
    split = catalog.get_split(benchmark_slug, split_slug)
    name = (name or "").strip()
    if not name:
        raise InvalidInput('name is required, e.g. "Human" or "Majority class"', field="name")
    if len(name) > 200:
        raise InvalidInput("name must have at most 200 characters", field="name")
    check_visible("the name", name, field="name")
    source_url = (source_url or "").strip() or None
    if source_url is not None and (len(source_url) > 500 or not URL.match(source_url)):
        raise InvalidInput("source must be an http:// or https:// address of at most 500 characters", field="source")
    check_visible("the source", source_url, field="source")
    day = parse_date(published_on)
    reference = Reference(
        split=split,
        name=name,
        scores=json.dumps(parse_scores(split, scores_json)),
        source_url=source_url,
        published_on=day,
    )
    db.session.add(reference)
    split.board_version += 1
    audit_log.record(
        actor,
        "reference.add",
        f"{benchmark_slug}/{split_slug}",
        {
            "name": name,
            "scores": json.loads(reference.scores),
            "source": source_url,
            "date": None if day is None else day.isoformat(),
            "via": via,
        },
    )
    commit()
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
    commit()
    return reference
