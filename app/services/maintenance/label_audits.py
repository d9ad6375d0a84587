"""Label audits (maintainers only) and corrected gold files, with the board's public changelog.

- audit: the examples whose gold label the split's stored submissions most consistently contradict, each
  submission weighted by how accurate it is elsewhere (app/evaluation/label_audit.py, Dawid–Skene). It names
  gold labels: only the console (maintainers) and the command line call it; nothing of it reaches teams.
- correct: install a corrected gold file as the split's next version (the earlier file stays in the
  hidden-labels folder; both sha256 are recorded), rescore every stored submission in one vectorised pass,
  make a hidden split's probe summaries again (their counts of correct units change with the labels), bump
  the board version, and record the audit event and a dated public changelog line, in one transaction.
- summarise: make a hidden split's probe summaries against its current labels, so the probe check stops
  reading the submissions stored before them (migration 0010) the old way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import func, select

from app.db import commit, db
from app.evaluation import GoldSet, TakesChoices, TaskType, ValidationError
from app.evaluation.label_audit import dawid_skene
from app.models import ChangelogEntry, GoldVersion, Split, Submission, User
from app.services import catalog
from app.services.audit import audit_log
from app.services.blind_test import integrity
from app.services.boards import board_snapshots
from app.services.catalog import label_files, rescoring
from app.services.errors import Conflict, InvalidInput, check_visible

DEFAULT_TOP = 40
MAX_TOP = 1000
# The newest distinct prediction files that vote; bounds memory (2,000 NLVR2 Test-U files: ~60 MB of counts).
MAX_VOTERS = 2000
MAX_NOTE = 2000


# --- the audit -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SuspectLabel:
    rank: int
    identifier: str
    field: str  # the gold file's field ("label", "answer_label", "rationale_label")
    gold: str
    likely: str  # the label the submissions point to
    probability: float  # posterior probability that the gold label is wrong (0-1)
    against: float  # share of the submissions' votes that contradict the gold label (0-1)


@dataclass(frozen=True)
class AuditReport:
    split: Split
    submissions: int  # distinct prediction files that voted
    gold_accuracy: dict[str, float]  # per field: estimated share of right gold labels (0-1)
    rows: list[SuspectLabel]


def _top(top: int | str | None) -> int:
    if top is None or top == "":
        return DEFAULT_TOP
    try:
        value = int(top)
    except (TypeError, ValueError):
        raise InvalidInput(f"top must be a whole number from 1 to {MAX_TOP}, got {str(top)[:40]!r}") from None
    if not 1 <= value <= MAX_TOP:
        raise InvalidInput(f"top must be a whole number from 1 to {MAX_TOP}, got {value}")
    return value


def audit_labels(benchmark_slug: str, split_slug: str, top: int | str | None = DEFAULT_TOP) -> AuditReport:
    """The `top` most suspect gold labels of the split, most suspect first."""
    top = _top(top)
    split = catalog.get_split(benchmark_slug, split_slug)
    task = catalog.task_of(split.benchmark)
    blobs = db.session.scalars(
        select(Submission.predictions)
        .where(Submission.split_id == split.id, Submission.status == "scored", Submission.predictions.is_not(None))
        .order_by(Submission.id.desc())
    ).all()
    # One vote per distinct file: a team resubmitting the same predictions does not vote twice.
    distinct = [blob for blob in dict.fromkeys(blobs) if blob is not None][:MAX_VOTERS]
    if not distinct:
        raise Conflict(f"{benchmark_slug}/{split_slug} has no scored submissions to audit its labels with")
    gold = label_files.load_gold(split)
    stacked = task.decode_many(distinct, gold.n)
    fields = task.label_votes(gold, stacked)
    if not fields:  # e.g. Winoground: the right pairing is fixed, there is no label to get wrong
        raise Conflict(f"{benchmark_slug}/{split_slug} has no gold label to audit: {task.label} gold files have none")
    candidates, accuracy = [], {}
    for field in fields:
        estimate = dawid_skene(field.votes, field.gold, len(field.classes))
        accuracy[field.field] = estimate.gold_accuracy
        for i in estimate.ranking()[:top].tolist():
            candidates.append((float(estimate.suspicion[i]), float(estimate.against[i]), field, i, estimate))
    candidates.sort(key=lambda c: (-c[0], -c[1]))
    rows = [
        SuspectLabel(
            rank=rank,
            identifier=str(gold.ids[i]),
            field=field.field,
            gold=field.classes[int(field.gold[i])],
            likely=field.classes[int(estimate.likely[i])],
            probability=float(estimate.probability[i]),
            against=against,
        )
        for rank, (_, against, field, i, estimate) in enumerate(candidates[:top], start=1)
    ]
    return AuditReport(split, len(distinct), accuracy, rows)


# --- corrections ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Correction:
    split: Split
    version: int
    labels_changed: int
    ranks_moved: int
    rescored: int
    old_sha256: str
    new_sha256: str


def _same_examples(old, new) -> None:
    """A corrected file changes labels only: the same identifiers, in the same order (stored predictions
    are aligned to it)."""
    if new.n != old.n:
        raise InvalidInput(f"the corrected file has {new.n} examples; the split has {old.n}: only labels may change")
    differs = np.flatnonzero(new.ids != old.ids)
    if differs.size:
        line = int(differs[0]) + 1
        raise InvalidInput(
            f"line {line}: identifier {str(new.ids[line - 1])[:80]!r} where the split has "
            f"{str(old.ids[line - 1])[:80]!r}: a corrected file keeps every example in the same order"
        )


def _refresh_derived_subsets(split: Split, task, gold) -> dict[str, np.ndarray]:
    """Subsets derived from the gold file (NLVR2 balanced/unbalanced depend on labels; field subsets on
    fields) follow the corrected file; subsets from annotations or identifier files keep their examples."""
    derived = task.derive_subsets(gold, split.subset_field)
    for subset in list(split.subsets):
        if subset.source not in ("derived", "field"):
            continue
        if subset.name in derived:
            fresh = catalog.subset_row(subset.name, subset.source, derived.pop(subset.name))
            subset.members, subset.size = fresh.members, fresh.size
        else:
            split.subsets.remove(subset)
    for name, indices in derived.items():
        split.subsets.append(catalog.subset_row(name, catalog.source_of(name, split.subset_field), indices))
    return {subset.name: subset.indices for subset in split.subsets}


def correct_labels(
    actor: User | None, benchmark_slug: str, split_slug: str, labels: bytes, note: str, *, via: str = "cli"
) -> Correction:
    """Install a corrected gold file for the split (see the module's docstring)."""
    split = catalog.get_split(benchmark_slug, split_slug, with_subsets=True)
    note = _checked_note(note)
    task = catalog.task_of(split.benchmark)
    new, changed = _read_correction(task, label_files.load_gold(split), labels)
    _check_choices_fit(split, task, new)
    ranks_before = board_snapshots.published_ranks(split)
    old_sha256 = split.gold_sha256
    existed = (
        label_files.labels_dir() / label_files.gold_relative_path(split.benchmark.slug, split.slug, labels)
    ).exists()
    relative, digest = label_files.write_gold(split.benchmark.slug, split.slug, labels)
    try:
        version = _add_gold_version(actor, split, relative, digest, changed, note)
        _refresh_derived_subsets(split, task, new)
        db.session.flush()
        # The stored scores, and the probe summaries (counts of correct units change with the labels), are
        # made again against the new file by a job after the commit; the board reads the file itself.
        rescored = rescoring.queue_rescoring(split)
        split.board_version += 1
        db.session.flush()
        ranks_after = board_snapshots.published_ranks(split)
        moved = sum(1 for submission_id, rank in ranks_after.items() if ranks_before.get(submission_id) != rank)
        message = f"{changed} label{'' if changed == 1 else 's'} corrected"
        db.session.add(ChangelogEntry(split_id=split.id, message=message))
        audit_log.record(
            actor,
            "labels.correct",
            f"split {split.benchmark.slug}/{split.slug}",
            {
                "via": via,
                "version": version,
                "labels_changed": changed,
                "ranks_moved": moved,
                "rescored": rescored,
                "old_sha256": old_sha256,
                "new_sha256": digest,
                "note": note,
            },
        )
        commit()
    except Exception:
        db.session.rollback()
        if not existed:
            label_files.remove_gold(relative)
        raise
    label_files.remember(split, new)  # the corrected file parsed once, for every process
    return Correction(split, version, changed, moved, rescored, old_sha256, digest)


def _check_choices_fit(split: Split, task: TaskType, new: GoldSet) -> None:
    """InvalidInput when the split's stored choices file lacks a question the corrected file makes balanced (the
    official eval.py reads the choices of every balanced question)."""
    compact = label_files.stored_choices(split)
    if compact is None or not isinstance(task, TakesChoices):
        return
    try:
        task.with_choices(new, compact)
    except ValidationError as exc:
        raise InvalidInput(f"the corrected file does not fit the split's choices file: {exc}", exc.problems) from exc


def _checked_note(note: str) -> str:
    """The note, trimmed; InvalidInput when it is empty, too long or has an invisible character."""
    note = (note or "").strip()
    if not note:
        raise InvalidInput("a note saying what was corrected and why is required")
    if len(note) > MAX_NOTE:
        raise InvalidInput(f"the note can have at most {MAX_NOTE} characters")
    check_visible("the note", note)  # kept with the gold version and shown in the audit log
    return note


def _read_correction(task: TaskType, old: GoldSet, labels: bytes) -> tuple[GoldSet, int]:
    """The corrected gold set and how many examples' labels it changes; InvalidInput when it is invalid, has
    other examples or changes nothing."""
    try:
        new = task.read_gold(labels)
    except ValidationError as exc:
        raise InvalidInput(f"invalid gold file: {exc.problems[0].message}", exc.problems) from exc
    except ValueError as exc:
        raise InvalidInput(f"invalid gold file: {exc}") from exc
    _same_examples(old, new)
    changed = int(np.any((old.labels != new.labels).reshape(old.n, -1), axis=1).sum())
    if changed == 0:
        raise InvalidInput("the corrected file changes no label")
    return new, changed


def _add_gold_version(actor: User | None, split: Split, relative: str, digest: str, changed: int, note: str) -> int:
    """Record the new gold file as the split's next version (the first file is version 1) and point the split
    at it; the version."""
    version = 2 + (db.session.scalar(select(func.count(GoldVersion.id)).where(GoldVersion.split_id == split.id)) or 0)
    db.session.add(
        GoldVersion(
            split_id=split.id,
            version=version,
            gold_path=relative,
            gold_sha256=digest,
            previous_path=split.gold_path,
            previous_sha256=split.gold_sha256,
            labels_changed=changed,
            note=note,
            actor_id=actor.id if actor is not None else None,
        )
    )
    split.gold_path, split.gold_sha256 = relative, digest
    return version


def summarise_for_probes(actor: User | None, benchmark_slug: str, split_slug: str, *, via: str = "cli") -> int:
    """Summarise every scored submission of a hidden split for the probe check
    (services/blind_test/integrity.py), in one transaction; returns how many. The check is exact either way:
    this makes it fast for those stored before."""
    split = catalog.get_split(benchmark_slug, split_slug)
    if not split.hidden:
        raise InvalidInput(f"{benchmark_slug}/{split_slug} is not hidden: the probe check never runs there")
    summarised = integrity.rebuild_probe_summaries(
        split, catalog.task_of(split.benchmark), label_files.load_gold(split)
    )
    audit_log.record(
        actor, "probes.summarise", f"split {benchmark_slug}/{split_slug}", {"via": via, "summarised": summarised}
    )
    commit()
    return summarised
