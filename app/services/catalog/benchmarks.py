"""Benchmarks, splits and subsets: what maintainers add and everyone else looks up."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import contains_eager, joinedload

from app.bundles.model import HIDDEN_POLICY
from app.db import commit, db
from app.evaluation import TASK_TYPES, GoldSet, TakesChoices, TaskType, ValidationError, sealed
from app.evaluation.subsets import category_subsets, ids_subset
from app.models import FEEDBACK_POLICIES, Benchmark, Split, Submission, Subset, utcnow
from app.services.catalog import label_files, notifications, rescoring
from app.services.catalog.task_types import checked_config, task_of
from app.services.errors import Conflict, InvalidInput, NotFound, check_visible

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
UNSET = object()  # a keyword left as it is
RESERVED_SPLIT_SLUGS = ("models",)  # taken by the models view's address
SUBSET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_.\- ]{0,119}$")


def _check_slug(kind: str, value: str) -> None:
    if not SLUG.match(value or ""):
        raise InvalidInput(f"{kind} {value!r} must be lower-case letters, digits and dashes (at most 64)")


def list_benchmarks() -> list[Benchmark]:
    return list(db.session.scalars(select(Benchmark).order_by(Benchmark.name)))


def _valid(what: str, slugs: list[str]) -> str:
    return f"; the {what} are: {', '.join(slugs)}" if slugs else f"; there are no {what} yet"


def unknown_benchmark(slug: object) -> NotFound:
    slugs = list(db.session.scalars(select(Benchmark.slug).order_by(Benchmark.slug)))
    return NotFound(f"unknown benchmark {str(slug)[:80]!r}" + _valid("benchmarks", slugs))


def get_benchmark(slug: str) -> Benchmark:
    # No row has a slug outside the pattern; not asking spares PostgreSQL text it refuses (NUL bytes).
    if not isinstance(slug, str) or not SLUG.match(slug):
        raise unknown_benchmark(slug)
    benchmark = db.session.scalar(select(Benchmark).where(Benchmark.slug == slug))
    if benchmark is None:
        raise unknown_benchmark(slug)
    return benchmark


def get_split(benchmark_slug: str, split_slug: str, with_subsets: bool = False) -> Split:
    """The split with its benchmark (and its subsets if asked: what scoring needs), in one query (every
    upload starts here)."""
    if all(isinstance(slug, str) and SLUG.match(slug) for slug in (benchmark_slug, split_slug)):
        query = (
            select(Split)
            .join(Split.benchmark)
            .options(contains_eager(Split.benchmark))
            .where(Benchmark.slug == benchmark_slug, Split.slug == split_slug)
        )
        if with_subsets:
            query = query.options(joinedload(Split.subsets))
        split = db.session.scalars(query).unique().one_or_none()
        if split is not None:
            return split
    benchmark = get_benchmark(benchmark_slug)  # names an unknown benchmark rather than the split
    raise unknown_split(benchmark_slug, split_slug, [split.slug for split in benchmark.splits])


def unknown_split(benchmark_slug: str, split_slug: object, slugs: list[str]) -> NotFound:
    return NotFound(
        f"unknown split {str(split_slug)[:80]!r} of benchmark {benchmark_slug!r}"
        + _valid(f"splits of {benchmark_slug!r}", slugs)
    )


def list_splits() -> list[Split]:
    return list(db.session.scalars(select(Split).join(Split.benchmark).order_by(Benchmark.slug, Split.position)))


def add_benchmark(
    slug: str,
    task_type: str,
    name: str,
    description: str = "",
    paper_url: str | None = None,
    task_config: Mapping[str, Any] | None = None,
) -> Benchmark:
    """A new benchmark of a built-in family (``task_type`` its name), or of a configured type: ``task_type`` one
    of CONFIGURED_TYPES and ``task_config`` its ``task:`` mapping (errors name the key: ``task.labels: ...``)."""
    _check_slug("benchmark slug", slug)
    config = checked_config(task_type, task_config)
    if not name or not name.strip():
        raise InvalidInput("a benchmark needs a name")
    if paper_url and not re.match(r"^https?://", paper_url):
        raise InvalidInput("paper URL must start with http:// or https://")
    for what, text in (("benchmark name", name), ("benchmark description", description), ("paper URL", paper_url)):
        check_visible(what, text)
    if db.session.scalar(select(Benchmark.id).where(Benchmark.slug == slug)) is not None:
        raise Conflict(f"benchmark {slug!r} already exists")
    benchmark = Benchmark(
        slug=slug,
        task_type=task_type,
        task_config=config,
        name=name.strip(),
        description=description or "",
        paper_url=paper_url,
    )
    db.session.add(benchmark)
    commit()
    return benchmark


def update_benchmark(
    slug: str,
    *,
    name: str | None = None,
    description: str | None = None,
    paper_url=UNSET,
    board_columns: Any = UNSET,
) -> Benchmark:
    """Change what a benchmark's page says of it (None, or UNSET for the URL and the columns: left as it is);
    ``board_columns``: the keys of the columns its boards show by default, in order (None: the task type's
    choice; the caller has checked them against the boards' columns)."""
    benchmark = get_benchmark(slug)
    if board_columns is not UNSET:
        benchmark.board_columns = None if board_columns is None else json.dumps(list(board_columns))
    if name is not None:
        if not name.strip():
            raise InvalidInput("a benchmark needs a name")
        check_visible("benchmark name", name)
        benchmark.name = name.strip()
    if description is not None:
        check_visible("benchmark description", description)
        benchmark.description = description
    if paper_url is not UNSET:
        if paper_url and not re.match(r"^https?://", paper_url):
            raise InvalidInput("paper URL must start with http:// or https://")
        check_visible("paper URL", paper_url)
        benchmark.paper_url = paper_url or None
    boards_changed(benchmark)  # boards name the benchmark
    commit()
    return benchmark


def remove_split(benchmark_slug: str, split_slug: str) -> Split:
    """Remove a split no team has uploaded to (Conflict with the count otherwise: their files and scores are
    theirs). Its gold file stays in the hidden-labels folder, as every version does."""
    split = get_split(benchmark_slug, split_slug)
    uploads = db.session.scalar(select(func.count(Submission.id)).where(Submission.split_id == split.id)) or 0
    if uploads:
        raise Conflict(
            f"{benchmark_slug}/{split_slug} has {uploads} stored submission{'' if uploads == 1 else 's'}: "
            "a split teams uploaded to cannot be removed (close it instead: policy open false)"
        )
    if split.benchmark.default_split_id == split.id:
        split.benchmark.default_split_id = None
    db.session.delete(split)
    commit()
    return split


# A blind test starts safe: exact scores, unlimited, would let a team read labels off its scores. One rule for
# `splits add --hidden`, the console and a bundle's hidden split without a policy (app/bundles/model.py).
HIDDEN_SPLIT_POLICY = HIDDEN_POLICY


def risks(split: Split) -> list[str]:
    """Why a hidden split's policy lets a team learn its labels, in words; empty when it does not (or the
    split is public or revealed)."""
    if not split.hidden or split.revealed_at is not None:
        return []
    found = []
    if split.feedback == "full":
        found.append("full feedback: exact scores let a team read labels off them one prediction at a time")
    if split.per_day is None:
        found.append("no daily quota: a team may submit as often as it likes")
    return found


def add_split(
    benchmark_slug: str,
    split_slug: str,
    labels: bytes,
    *,
    hidden: bool = False,
    name: str | None = None,
    annotations: bytes | None = None,
    subset_field: str | None = None,
    choices: bytes | None = None,
) -> Split:
    """Import a gold file: copy it into the hidden-labels folder and derive the split's subsets. `choices`: the
    official choices file of a family that takes one (GQA), checked against the gold file and stored beside it
    in its compact form."""
    benchmark = get_benchmark(benchmark_slug)
    _check_new_split_slug(benchmark, split_slug)
    check_visible("split name", name)
    task = task_of(benchmark)
    gold, subsets = _read_split_files(task, labels, annotations, subset_field)
    for subset_name in subsets:  # '<field>:<value>' names come from the gold file's values
        check_visible("subset name", subset_name)
    compact = _read_choices(task, gold, choices) if choices is not None else None

    relative, digest = label_files.write_gold(benchmark.slug, split_slug, labels)
    choices_path = choices_sha256 = None
    given: dict[str, tuple[str, str]] = {}  # the annotation and choices files as given: (path, sha256)
    try:
        if compact is not None:
            choices_path, choices_sha256 = label_files.write_choices(benchmark.slug, split_slug, compact)
        for kind, data in (("annotations", annotations), ("choices", choices)):
            if data is not None:
                given[kind] = label_files.write_as_given(benchmark.slug, split_slug, kind, data)
        position = (
            db.session.scalar(
                select(func.coalesce(func.max(Split.position), -1)).where(Split.benchmark_id == benchmark.id)
            )
            or 0
        )
        split = Split(
            benchmark=benchmark,
            slug=split_slug,
            name=(name or split_slug).strip(),
            hidden=hidden,
            position=position + 1,
            gold_path=relative,
            gold_sha256=digest,
            choices_path=choices_path,
            choices_sha256=choices_sha256,
            annotations_path=given["annotations"][0] if "annotations" in given else None,
            annotations_sha256=given["annotations"][1] if "annotations" in given else None,
            choices_file_path=given["choices"][0] if "choices" in given else None,
            choices_file_sha256=given["choices"][1] if "choices" in given else None,
            example_count=gold.n,
            subset_field=subset_field,
            **(HIDDEN_SPLIT_POLICY if hidden else {"feedback": "full"}),
        )
        db.session.add(split)
        for subset_name, indices in subsets.items():
            split.subsets.append(subset_row(subset_name, source_of(subset_name, subset_field), indices))
        commit()
    except Exception:
        db.session.rollback()
        label_files.remove_gold(relative)
        if choices_path is not None:
            label_files.remove_gold(choices_path)
        for path, _digest in given.values():
            label_files.remove_gold(path)
        raise
    label_files.remember(split, gold)  # kept as its folder of arrays now: no process parses the file again
    return split


def _read_choices(task: TaskType, gold: GoldSet, data: bytes) -> bytes:
    """The choices file in its compact stored form; InvalidInput when the family takes none or it is invalid."""
    if not isinstance(task, TakesChoices):
        takers = " or ".join(other.choices_file for other in TASK_TYPES.values() if isinstance(other, TakesChoices))
        raise InvalidInput(f"a {task.name} split takes no choices file (only {takers})")
    try:
        return task.read_choices(gold, data)
    except ValidationError as exc:
        raise InvalidInput(f"invalid choices file: {exc.problems[0].message}", exc.problems) from exc


def split_metrics(split: Split) -> tuple[str, ...]:
    """The metrics a split reports: its family's, less those only a choices file gives (GQA's validity and
    plausibility) where the split has none."""
    task = task_of(split.benchmark)
    if split.choices_sha256 is None and isinstance(task, TakesChoices):
        return tuple(metric for metric in task.metrics if metric not in task.choices_metrics)
    return tuple(task.metrics)


def _check_new_split_slug(benchmark: Benchmark, split_slug: str) -> None:
    """InvalidInput for a malformed or reserved slug, Conflict for one the benchmark already has."""
    _check_slug("split slug", split_slug)
    if split_slug in RESERVED_SPLIT_SLUGS:
        raise InvalidInput(
            f"split slug {split_slug!r} is reserved: /leaderboards/<benchmark>/{split_slug} is "
            "the models view; choose another"
        )
    existing = db.session.scalar(select(Split.id).where(Split.benchmark_id == benchmark.id, Split.slug == split_slug))
    if existing is not None:
        raise Conflict(f"split {split_slug!r} of {benchmark.slug!r} already exists")


def _read_split_files(
    task: TaskType, labels: bytes, annotations: bytes | None, subset_field: str | None
) -> tuple[GoldSet, dict[str, np.ndarray]]:
    """The gold set and its subsets (derived, and from the annotations when given); InvalidInput when either
    file is invalid."""
    try:
        gold = task.read_gold(labels)
        subsets = dict(task.derive_subsets(gold, subset_field))
        if annotations is not None:
            subsets.update(category_subsets(gold, annotations))
    except ValidationError as exc:
        raise InvalidInput(f"invalid gold or annotation file: {exc.problems[0].message}", exc.problems) from exc
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    return gold, subsets


def add_subset(benchmark_slug: str, split_slug: str, name: str, ids: bytes) -> tuple[Subset, int]:
    """Add a subset from a file of identifiers and score every stored submission on it.

    Returns the subset and how many submissions were rescored.
    """
    split = get_split(benchmark_slug, split_slug)
    if not SUBSET_NAME.match(name or "") or name in ("all", *sealed.PARTS):
        raise InvalidInput(
            f"subset name {name!r} must start with a letter or digit, use letters, digits, ':', '-', '_', '.', "
            "spaces (at most 120), and not be 'all', 'queried' or 'sealed'"
        )
    if db.session.scalar(select(Subset.id).where(Subset.split_id == split.id, Subset.name == name)):
        raise Conflict(f"subset {name!r} of {benchmark_slug}/{split_slug} already exists")
    gold = label_files.load_gold(split)
    try:
        indices = ids_subset(gold, ids)
    except ValidationError as exc:
        raise InvalidInput(f"invalid identifier file: {exc.problems[0].message}", exc.problems) from exc
    if len(indices) == 0:
        raise InvalidInput("the identifier file names no examples")
    subset = subset_row(name, "ids", indices)
    split.subsets.append(subset)
    db.session.flush()
    rescored = rescoring.queue_rescoring(split)  # its scores on the new subset: a job, after the commit
    split.board_version += 1
    commit()
    return subset, rescored


@dataclass(frozen=True)
class ScoringInputs:
    """What scoring an upload to a split needs from the database: the task type, the gold labels (cached
    per process), the subsets' members and each subset's source (derived, annotation, field, ids)."""

    task: TaskType
    gold: GoldSet
    subsets: dict[str, np.ndarray]
    sources: dict[str, str]


def scoring_inputs(split: Split) -> ScoringInputs:
    subsets = list(split.subsets)
    return ScoringInputs(
        task=task_of(split.benchmark),
        gold=gold_for(split),
        subsets={subset.name: subset.indices for subset in subsets},
        sources={subset.name: subset.source for subset in subsets},
    )


def subset_row(name: str, source: str, indices: np.ndarray) -> Subset:
    members = np.asarray(indices, dtype="<i4")
    return Subset(name=name, source=source, size=int(members.size), members=members.tobytes())


def source_of(name: str, field: str | None) -> str:
    if name.startswith("category:"):
        return "annotation"
    if field and name.startswith(f"{field}:"):
        return "field"
    return "derived"


def gold_for(split: Split) -> GoldSet:
    return label_files.load_gold(split)


def set_policy(
    benchmark_slug: str,
    split_slug: str,
    *,
    per_day=UNSET,
    per_month=UNSET,
    total=UNSET,
    rejected_per_day=UNSET,
    feedback: str | None = None,
    is_open: bool | None = None,
    sealed_fraction: float | None = None,
) -> Split:
    """Change a split's submission policy; quotas are whole numbers >= 0 or None for unlimited;
    `sealed_fraction` seals that share of a blind test's groups (0 removes the sealed part, see seal)."""
    split = get_split(benchmark_slug, split_slug)
    if sealed_fraction is not None:
        seal(split, sealed_fraction)
    for field, value in (
        ("per_day", per_day),
        ("per_month", per_month),
        ("total", total),
        ("rejected_per_day", rejected_per_day),
    ):
        if value is UNSET:
            continue
        if value is not None and (not isinstance(value, int) or value < 0):
            raise InvalidInput(f"{field} must be a whole number >= 0 or unlimited, got {value!r}")
        if field == "rejected_per_day" and value is None:
            raise InvalidInput("rejected_per_day cannot be unlimited")
        setattr(split, field, value)
    if feedback is not None:
        if feedback not in FEEDBACK_POLICIES:
            raise InvalidInput(f"feedback must be one of {', '.join(FEEDBACK_POLICIES)}, got {feedback!r}")
        split.feedback = feedback
    if is_open is not None:
        split.is_open = is_open
    split.board_version += 1  # the feedback policy decides whether hidden scores are shown
    commit()
    return split


def seal(split: Split, fraction: float) -> None:
    """Divide a blind test's consistency groups into a queried and a sealed part (app/evaluation/sealed.py),
    stored as the subsets 'queried' and 'sealed'; 0 removes them. Only on a hidden split not yet revealed,
    and only before its first scored submission: every release is made on the queried part, so the part
    cannot change under releases already made (Conflict says why). The seed is drawn once and kept."""
    try:
        fraction = sealed.check_fraction(fraction)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    where = f"{split.benchmark.slug}/{split.slug}"
    if (split.sealed_fraction or 0.0) == fraction:
        return  # unchanged (a policy form sends the part it shows)
    if not split.hidden:
        raise Conflict(f"{where} is a public split: only a hidden split (a blind test) can have a sealed part")
    if split.revealed_at is not None:
        raise Conflict(
            f"{where} was revealed on {split.revealed_at:%Y-%m-%d %H:%M} UTC: its sealed part can no longer change"
        )
    first = db.session.scalar(
        select(Submission.id).where(Submission.split_id == split.id, Submission.status == "scored").limit(1)
    )
    if first is not None:
        raise Conflict(
            f"{where} already has scored submissions: its sealed part can only be set before the "
            "first one (releases made on one queried part cannot move to another)"
        )
    for subset in [s for s in split.subsets if s.source == "sealed"]:
        split.subsets.remove(subset)
    db.session.flush()
    if fraction == 0.0:
        split.sealed_fraction = None
        return
    if split.seal_seed is None:
        split.seal_seed = secrets.token_hex(32)
    mask = sealed.sealed_mask(gold_for(split).groups, fraction, split.seal_seed)
    for name, indices in sealed.parts(mask).items():
        split.subsets.append(subset_row(name, "sealed", indices))
    split.sealed_fraction = fraction


def boards_changed(benchmark: Benchmark) -> None:
    """Every board of the benchmark is built again: what each shows depends on the benchmark's own facts too (its
    name, its entry fields' columns, its tracks' tabs)."""
    for split in db.session.scalars(select(Split).where(Split.benchmark_id == benchmark.id)):
        split.board_version += 1


def pin_default_split(benchmark_slug: str, split_slug: str) -> Split:
    """Make this split the benchmark's landing page (the board /leaderboards/<benchmark> shows)."""
    split = get_split(benchmark_slug, split_slug)
    split.benchmark.default_split_id = split.id
    split.board_version += 1  # pages reused from memory (leaderboards.recent_page) see the change
    commit()
    return split


def reveal_split(benchmark_slug: str, split_slug: str) -> Split:
    """Publish the scores of a hidden split held under `none` or `ladder` (e.g. after a challenge ends)."""
    split = get_split(benchmark_slug, split_slug)
    if not split.hidden:
        raise Conflict(f"{benchmark_slug}/{split_slug} is a public split: its scores are already shown")
    if split.revealed_at is not None:
        raise Conflict(f"{benchmark_slug}/{split_slug} was already revealed on {split.revealed_at:%Y-%m-%d %H:%M} UTC")
    if split.feedback == "full" and not any(subset.source == "sealed" for subset in split.subsets):
        raise Conflict(f"{benchmark_slug}/{split_slug} has feedback 'full' and no sealed part: its scores are not held")
    split.revealed_at = utcnow()
    split.board_version += 1
    notifications.post_reveal(split)
    commit()
    return split


def open_splits() -> list[Split]:
    """Splits that accept submissions, for the upload form."""
    return [split for split in list_splits() if split.is_open]


def sample_file(benchmark_slug: str, split_slug: str, suffix: str = "csv") -> tuple[str, bytes, str]:
    """(file name, a valid prediction file for the split: its identifiers with a constant prediction, its media
    type); NotFound where ``suffix`` is not the extension of the task type's files."""
    split = get_split(benchmark_slug, split_slug)
    task = task_of(split.benchmark)
    if suffix != task.file_suffix:
        raise NotFound(f"the sample file of {benchmark_slug}/{split_slug} is sample.{task.file_suffix}")
    name = f"{split.benchmark.slug}-{split.slug}-sample.{task.file_suffix}"
    return name, task.sample(gold_for(split)), task.media_type
