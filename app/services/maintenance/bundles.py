"""Bundles: a benchmark hosted from one reviewed file (app/bundles reads and writes the files).

`apply_bundle` makes the catalog say what a bundle says: the benchmark, its splits (gold, annotation and choices
files, identifier subsets), their policies, phases and reference rows, the landing split, the entry fields and
the tracks over them. Every change goes
through the maintainers' audited use cases, all of them in one transaction (app.db.one_transaction): a bundle is
applied whole or not at all, and a dry run is the same run rolled back, so what it reports is what applying
would do, counts of rescored submissions and moved board positions included. A changed gold file is a label
correction (versioned, with the maintainer's reason); a split's examples, task type and hidden flag never change
through a bundle, and a split teams uploaded to is never removed (the refusal gives the count).

`export_bundle` writes a benchmark back as a bundle in its canonical form: export, apply on a fresh server and
export again gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from app.bundles import (
    Bundle,
    BundleError,
    EntryFieldSpec,
    FileRef,
    LoadedBundle,
    Phase,
    Policy,
    ReferenceSpec,
    SplitSpec,
    SubsetSpec,
    TrackSpec,
    bundle_zip,
    canonical_yaml,
    read_bundle_zip,
)
from app.db import db, one_transaction
from app.evaluation import Problem, ValidationError, configured
from app.evaluation.subsets import ids_subset
from app.models import Benchmark, EntryField, Reference, Split, Submission, Subset, Track, User, as_utc
from app.services import catalog
from app.services.audit import audit_log
from app.services.boards import leaderboards
from app.services.catalog import entry_fields, label_files, phases, tracks
from app.services.catalog import references as reference_rows
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.maintenance import label_audits, maintainer_actions
from app.services.storage.checksums import sha256

QUOTAS = ("per_day", "per_month", "total")


@dataclass(frozen=True)
class Change:
    """One change a bundle makes, as the dry run and the audit log say it."""

    target: str  # "nli3", "nli3/dev"
    summary: str  # in words: "split added: 3,000 examples, hidden"


@dataclass
class Outcome:
    benchmark: str
    applied: bool  # False: a dry run (nothing was kept)
    changes: list[Change] = field(default_factory=list)

    def add(self, target: str, summary: str) -> None:
        self.changes.append(Change(target, summary))


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


# --- apply ---------------------------------------------------------------------------------------------------


def apply_bundle(
    actor: User | None, loaded: LoadedBundle, *, dry_run: bool = False, reason: str | None = None, via: str = "cli"
) -> Outcome:
    """Make the catalog say what the bundle says, in one transaction (``dry_run``: then roll it back). InvalidInput
    or Conflict lists every refusal found before anything is done; ``reason`` is required where a gold file
    changes (a label correction's note), except in a dry run."""
    bundle = loaded.bundle
    existing = db.session.scalar(select(Benchmark).where(Benchmark.slug == bundle.slug))
    _refuse(_refusals(bundle, existing, loaded, reason, dry_run) + _track_refusals(bundle, existing))
    outcome = Outcome(bundle.slug, applied=not dry_run)
    via = f"bundle-{via}"
    order = [split.slug for split in sorted(existing.splits, key=lambda s: (s.position, s.id))] if existing else []
    try:
        with one_transaction(keep=not dry_run):
            _apply_benchmark(actor, bundle, existing, outcome, via)
            for number, spec in enumerate(bundle.splits):
                with _at(f"splits[{number}]"):
                    _apply_split(actor, bundle, spec, loaded, outcome, via, reason or "dry run", f"splits[{number}]")
            for split in _splits_not_in(bundle):
                catalog.remove_split(bundle.slug, split.slug)
                audit_log.record(actor, "split.remove", f"{bundle.slug}/{split.slug}", {"via": via})
                outcome.add(f"{bundle.slug}/{split.slug}", "split removed (no submissions)")
            _apply_order(actor, bundle, order, outcome, via)
            _apply_default_split(actor, bundle, outcome, via)
            _apply_columns(actor, bundle, outcome, via)
            before = _drop_tracks(actor, bundle, outcome, via)
            _apply_entry_fields(actor, bundle, outcome, via)
            _apply_tracks(actor, bundle, outcome, via, before)
    except IntegrityError as exc:  # another server changed the same rows meanwhile (two applies at once)
        raise Conflict(
            f"{bundle.slug} changed while the bundle was being applied (another apply at the same time?); "
            "nothing of this bundle was kept: apply it again"
        ) from exc
    return outcome


def _apply_order(actor: User | None, bundle: Bundle, before: list[str], outcome: Outcome, via: str) -> None:
    """The splits in the bundle's order (the order the app lists them); a change of order among the splits that
    were there is said and audited (new splits simply take their place)."""
    wanted = [spec.slug for spec in bundle.splits]
    kept_before = [slug for slug in before if slug in wanted]
    for position, slug in enumerate(wanted):  # from 0, as catalog.add_split numbers them
        split = catalog.get_split(bundle.slug, slug)
        if split.position != position:
            split.position = position
            split.board_version += 1
    if kept_before != [slug for slug in wanted if slug in kept_before]:
        order = ", ".join(wanted)
        audit_log.record(actor, "benchmark.split_order", f"benchmark {bundle.slug}", {"via": via, "order": order})
        outcome.add(bundle.slug, f"split order: {order}")


@contextmanager
def _at(path: str) -> Iterator[None]:
    """A refusal of the use cases an apply runs (a reference's metric, an identifier list's ids, a gold file)
    names the key path of the bundle it is about (as the bundle's own checks do) and has it as its field; the
    innermost path is kept."""
    try:
        yield
    except (InvalidInput, Conflict) as exc:
        if (exc.field or "").startswith("splits["):
            raise
        # The problems' lines are those of the named file, said in their messages (a CLI line prefix would not say
        # which file).
        problems = [Problem(None, f"{path}: {problem.message}") for problem in exc.problems]
        raise type(exc)(f"{path}: {exc.message}", problems, field=path) from exc


def _refuse(problems: list[tuple[type, str]]) -> None:
    """Refuse the whole bundle, naming every problem (a Conflict where any is one: the catalog's state, not the
    file, is what stands in the way)."""
    if problems:
        kind = Conflict if any(cls is Conflict for cls, _ in problems) else InvalidInput
        raise kind(
            f"the bundle was not applied ({_count(len(problems), 'problem')}); nothing changed",
            [Problem(None, message) for _, message in problems],
        )


def _refusals(
    bundle: Bundle, existing: Benchmark | None, loaded: LoadedBundle, reason: str | None, dry_run: bool
) -> list[tuple[type, str]]:
    """Everything the bundle asks that is never done, found before anything is: a task type, a split's hidden
    flag or subset field changed, a split with submissions removed, a changed gold file without a reason."""
    problems: list[tuple[type, str]] = []
    if existing is None:
        return problems
    if _task_of(bundle) != _stored_task(existing):
        problems.append(
            (
                Conflict,
                f"task: {existing.slug} is a {existing.task_type} benchmark: a task type never changes "
                "(host a new benchmark)",
            )
        )
    splits = {split.slug: split for split in existing.splits}
    for number, spec in enumerate(bundle.splits):
        split = splits.get(spec.slug)
        if split is None:
            continue
        where = f"splits[{number}]"
        if bool(spec.hidden) != split.hidden:
            problems.append(
                (
                    Conflict,
                    f"{where}.hidden: {existing.slug}/{split.slug} is {'hidden' if split.hidden else 'public'}: "
                    "a split's hidden flag never changes",
                )
            )
        if (spec.subset_field or None) != split.subset_field:
            problems.append(
                (Conflict, f"{where}.subset_field: a split's subset field never changes (it is {split.subset_field!r})")
            )
        for kind in ("annotations", "choices"):
            given = getattr(spec, kind)
            if given is not None and label_files.stored_file(split, kind)[1] != sha256(loaded.files[given.file]):
                problems.append((Conflict, f"{where}.{kind}: a split's {kind} file never changes through a bundle"))
        if sha256(loaded.files[spec.labels.file]) != split.gold_sha256 and not dry_run and not (reason or "").strip():
            problems.append(
                (
                    InvalidInput,
                    f"{where}.labels: the gold file of {existing.slug}/{split.slug} changed: a label correction "
                    "needs a reason (--reason on the command line, the reason field in the console)",
                )
            )
        stored_subsets = {subset.name: subset for subset in split.subsets if subset.source == "ids"}
        for subset in spec.subsets or ():
            if subset.name in stored_subsets and not _same_members(
                split, stored_subsets[subset.name], loaded.files[subset.ids.file]
            ):
                problems.append(
                    (Conflict, f"{where}.subsets: subset {subset.name!r} already exists with other examples")
                )
        named = {subset.name for subset in spec.subsets or ()}
        for name in sorted(set(stored_subsets) - named):
            problems.append(
                (Conflict, f"{where}.subsets: subset {name!r} is not in the bundle: a subset is never removed")
            )
    named_splits = {spec.slug for spec in bundle.splits}
    for split in existing.splits:
        if split.slug in named_splits:
            continue
        uploads = db.session.scalar(select(func.count(Submission.id)).where(Submission.split_id == split.id)) or 0
        if uploads:
            problems.append(
                (
                    Conflict,
                    f"splits: {existing.slug}/{split.slug} is not in the bundle and has "
                    f"{_count(uploads, 'stored submission')}: a split teams uploaded to is never removed",
                )
            )
    return problems


def _listed_sources(split: Split) -> tuple[str, ...]:
    """The sources of the subsets a bundle lists as identifier files: identifier subsets; and the annotation
    subsets of a split whose annotation file was not kept (added before bundles), under the same names, so that
    they survive the round trip."""
    return ("ids",) if label_files.stored_file(split, "annotations")[0] is not None else ("ids", "annotation")


def _same_members(split: Split, subset: Subset, ids: bytes) -> bool:
    try:
        wanted = ids_subset(label_files.load_gold(split), ids)
    except ValidationError:
        return False
    return bool(np.array_equal(np.sort(wanted), np.sort(subset.indices)))


def _task_of(bundle: Bundle) -> tuple[str, str | None]:
    """(task type, a configured type's canonical JSON or None) as the bundle says."""
    if isinstance(bundle.task, str):
        return bundle.task, None
    return str(bundle.task["type"]), configured.canonical_json(configured.parse(bundle.task))


def _stored_task(benchmark: Benchmark) -> tuple[str, str | None]:
    config = benchmark.task_config
    return benchmark.task_type, configured.canonical_json(configured.parse(json.loads(config))) if config else None


def _apply_benchmark(
    actor: User | None, bundle: Bundle, existing: Benchmark | None, outcome: Outcome, via: str
) -> None:
    if existing is None:
        task_type, _config = _task_of(bundle)
        maintainer_actions.add_benchmark(
            actor,
            bundle.slug,
            task_type,
            bundle.name,
            bundle.description or "",
            bundle.paper_url,
            task_config=None if isinstance(bundle.task, str) else bundle.task,
            via=via,
        )
        outcome.add(bundle.slug, f"benchmark added ({task_type})")
        return
    changed = {
        key: (getattr(existing, key) or "", value or "")
        for key, value in (("name", bundle.name), ("description", bundle.description), ("paper_url", bundle.paper_url))
        if (getattr(existing, key) or "") != (value or "")
    }
    if changed:
        audit_log.record(
            actor,
            "benchmark.update",
            f"benchmark {bundle.slug}",
            {"via": via, **{k: f"{old!r} → {new!r}" for k, (old, new) in changed.items()}},
        )
        catalog.update_benchmark(
            bundle.slug,
            name=bundle.name if "name" in changed else None,
            description=bundle.description or "" if "description" in changed else None,
            paper_url=bundle.paper_url if "paper_url" in changed else catalog.UNSET,
        )
        outcome.add(bundle.slug, f"{', '.join(changed)} changed")


def _apply_split(
    actor: User | None,
    bundle: Bundle,
    spec: SplitSpec,
    loaded: LoadedBundle,
    outcome: Outcome,
    via: str,
    reason: str,
    where: str,
) -> None:
    target = f"{bundle.slug}/{spec.slug}"
    labels = loaded.files[spec.labels.file]
    try:
        split = catalog.get_split(bundle.slug, spec.slug)
    except NotFound:
        split = maintainer_actions.add_split(
            actor,
            bundle.slug,
            spec.slug,
            labels,
            hidden=bool(spec.hidden),
            name=spec.name,
            annotations=loaded.files[spec.annotations.file] if spec.annotations else None,
            subset_field=spec.subset_field,
            choices=loaded.files[spec.choices.file] if spec.choices else None,
            via=via,
        )
        outcome.add(
            target,
            f"split added: {_count(split.example_count, 'example')}, {'hidden' if split.hidden else 'public'}"
            + (f"; subsets: {', '.join(s.name for s in split.subsets)}" if split.subsets else ""),
        )
    else:
        if (spec.name or spec.slug) != split.name:
            audit_log.record(actor, "split.rename", target, {"via": via, "name": f"{split.name!r} → {spec.name!r}"})
            outcome.add(target, f"name {split.name!r} → {spec.name or spec.slug!r}")
            split.name = spec.name or spec.slug
            split.board_version += 1
        if sha256(labels) != split.gold_sha256:
            correction = label_audits.correct_labels(actor, bundle.slug, spec.slug, labels, reason, via=via)
            changed = _count(correction.labels_changed, "label")
            rescored = _count(correction.rescored, "stored submission")
            moved = _count(correction.ranks_moved, "board position")
            outcome.add(
                target,
                f"gold file corrected (version {correction.version}): {changed} changed; {rescored} to rescore; "
                f"{moved} moved",
            )
    # A listed subset already there is kept (its members were compared before); a name the split has otherwise
    # (a subset the task type derives) is for add_subset to refuse, never skipped.
    listed = {subset.name for subset in split.subsets if subset.source in _listed_sources(split)}
    for number, subset in enumerate(spec.subsets or ()):
        if subset.name in listed:
            continue
        with _at(f"{where}.subsets[{number}] ({subset.ids.file})"):
            added, rescored = maintainer_actions.add_subset(
                actor, bundle.slug, spec.slug, subset.name, loaded.files[subset.ids.file], via=via
            )
        outcome.add(
            target,
            f"subset {subset.name!r} added ({_count(added.size, 'example')}); "
            f"{_count(rescored, 'stored submission')} to rescore",
        )
    _apply_policy(actor, bundle.slug, spec, outcome, via)
    _apply_phase(actor, bundle.slug, spec, outcome, via)
    _apply_references(actor, bundle.slug, spec, outcome, via, where)


def _policy_of(spec: SplitSpec) -> dict:
    """The policy the bundle asks of a split, as catalog.set_policy's keywords (the model has filled in what the
    bundle leaves out by the split's kind: the bundle is the whole truth of the split)."""
    policy = spec.policy
    return {
        "per_day": policy.per_day,
        "per_month": policy.per_month,
        "total": policy.total,
        "rejected_per_day": policy.rejected_per_day,
        "feedback": policy.feedback,
        "is_open": policy.open,
        "sealed_fraction": policy.sealed or 0.0,
    }


def _apply_policy(actor: User | None, benchmark: str, spec: SplitSpec, outcome: Outcome, via: str) -> None:
    split = catalog.get_split(benchmark, spec.slug)
    wanted = _policy_of(spec)
    changed = {}
    for key, value in wanted.items():
        current = getattr(split, key)
        if key == "sealed_fraction":
            current, value = current or 0.0, value or 0.0
        if current != value:
            changed[key] = value
    if changed:
        maintainer_actions.set_policy(actor, benchmark, spec.slug, via=via, **changed)
        outcome.add(
            f"{benchmark}/{spec.slug}",
            "policy: " + ", ".join(f"{key} {_shown(value)}" for key, value in changed.items()),
        )


def _shown(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return phases.moment_text(value)
    return str(value)


def _apply_phase(actor: User | None, benchmark: str, spec: SplitSpec, outcome: Outcome, via: str) -> None:
    split = catalog.get_split(benchmark, spec.slug)
    phase = spec.phase
    wanted = {
        "opens_at": phase.opens if phase else None,
        "closes_at": phase.closes if phase else None,
        "reveal_planned_at": phase.reveal if phase else None,
    }
    changed = {}
    for key, value in wanted.items():
        current = getattr(split, key)
        if (current and as_utc(current)) != (value and as_utc(value)):
            changed[key] = value
    if changed:
        maintainer_actions.set_phase(actor, benchmark, spec.slug, via=via, **changed)
        outcome.add(
            f"{benchmark}/{spec.slug}",
            "phase: " + ", ".join(f"{key} {_shown(value)}" for key, value in changed.items()),
        )


def _reference_key(name: str, scores: dict, source: str | None, day: date | None) -> tuple:
    return (name, json.dumps(scores, sort_keys=True), source or None, day.isoformat() if day else None)


def _apply_references(
    actor: User | None, benchmark: str, spec: SplitSpec, outcome: Outcome, via: str, where: str
) -> None:
    split = catalog.get_split(benchmark, spec.slug)
    stored = list(db.session.scalars(select(Reference).where(Reference.split_id == split.id).order_by(Reference.id)))
    wanted = [_reference_key(ref.name, ref.scores, ref.source, ref.date) for ref in spec.references or ()]
    have = [_reference_key(row.name, json.loads(row.scores), row.source_url, row.published_on) for row in stored]
    if have == wanted:
        return
    # Rows are few: any difference replaces the split's rows, in the bundle's order (what its export writes).
    for row, key in zip(stored, have, strict=True):
        if key not in wanted:
            outcome.add(f"{benchmark}/{spec.slug}", f"reference {row.name!r} removed")
        reference_rows.remove_reference(benchmark, spec.slug, row.id, actor=actor, via=via)
    for number, (ref, key) in enumerate(zip(spec.references or (), wanted, strict=True)):
        with _at(f"{where}.references[{number}]"):
            reference_rows.add_reference(
                benchmark,
                spec.slug,
                ref.name,
                json.dumps(ref.scores),
                ref.source,
                published_on=ref.date,
                actor=actor,
                via=via,
            )
        if key not in have:
            outcome.add(f"{benchmark}/{spec.slug}", f"reference {ref.name!r} added")


def _splits_not_in(bundle: Bundle) -> list[Split]:
    named = {spec.slug for spec in bundle.splits}
    return [split for split in catalog.get_benchmark(bundle.slug).splits if split.slug not in named]


def _apply_default_split(actor: User | None, bundle: Bundle, outcome: Outcome, via: str) -> None:
    benchmark = catalog.get_benchmark(bundle.slug)
    current = next((split.slug for split in benchmark.splits if split.id == benchmark.default_split_id), None)
    if bundle.default_split == current:
        return
    if bundle.default_split is None:
        benchmark.default_split_id = None
        audit_log.record(actor, "benchmark.default_split", bundle.slug, {"via": via, "split": "none"})
    else:
        maintainer_actions.pin_default_split(actor, bundle.slug, bundle.default_split, via=via)
    outcome.add(bundle.slug, f"landing split {current or 'none'} → {bundle.default_split or 'none'}")


def _apply_columns(actor: User | None, bundle: Bundle, outcome: Outcome, via: str) -> None:
    """The columns the benchmark's boards show by default: keys its splits' boards have, the primary metric on
    the whole split among them (a board's ranks are on it); InvalidInput naming the key otherwise."""
    benchmark = catalog.get_benchmark(bundle.slug)
    current = json.loads(benchmark.board_columns) if benchmark.board_columns else None
    if current == bundle.columns:
        return
    if bundle.columns is not None:
        available = {column.key for split in benchmark.splits for column in leaderboards.available_columns(split)}
        problems = [
            Problem(None, f"columns[{index}]: no board of {bundle.slug} has a column {key!r}")
            for index, key in enumerate(bundle.columns)
            if key not in available
        ]
        primary = f"all:{catalog.task_of(benchmark).primary_metric}"
        if primary not in bundle.columns:
            problems.append(Problem(None, f"columns: must include {primary} (the metric boards rank on)"))
        if problems:
            raise InvalidInput(
                f"the bundle was not applied ({_count(len(problems), 'problem')}); nothing changed", problems
            )
    shown = ", ".join(bundle.columns) if bundle.columns is not None else "the task type's own"
    audit_log.record(actor, "benchmark.columns", f"benchmark {bundle.slug}", {"via": via, "columns": shown})
    catalog.update_benchmark(bundle.slug, board_columns=bundle.columns)
    outcome.add(bundle.slug, f"board columns: {shown}")


def _apply_entry_fields(actor: User | None, bundle: Bundle, outcome: Outcome, via: str) -> None:
    """The benchmark's entry fields as the bundle lists them, in its order: each added, changed or removed
    through the audited entry_fields actions (a field entries hold values of is never removed: Conflict)."""
    benchmark = catalog.get_benchmark(bundle.slug)
    current = {spec.key: spec for spec in entry_fields.specs(benchmark)}
    wanted = []
    for index, given in enumerate(bundle.entry_fields):
        with _at(f"entry_fields[{index}]"):
            wanted.append(
                entry_fields.checked_spec(
                    given.key,
                    given.label,
                    given.type,
                    given.choices,
                    given.unit,
                    required=given.required,
                    column=given.column,
                    filterable=given.filter,
                )
            )
    keys = [spec.key for spec in wanted]
    for key in current:
        if key not in keys:
            entry_fields.drop(benchmark, key, actor=actor, via=via)
            outcome.add(bundle.slug, f"entry field removed: {key}")
    for spec in wanted:
        if current.get(spec.key) != spec:
            entry_fields.store(benchmark, spec, actor=actor, via=via)
            outcome.add(
                bundle.slug, f"entry field {'changed' if spec.key in current else 'added'}: {spec.key} ({spec.type})"
            )
    rows = {
        row.key: row for row in db.session.scalars(select(EntryField).where(EntryField.benchmark_id == benchmark.id))
    }
    before = [key for key in current if key in keys]
    for position, key in enumerate(keys):
        rows[key].position = position
    if before != [key for key in keys if key in before]:
        order = ", ".join(keys)
        audit_log.record(actor, "entry_field.order", f"benchmark {bundle.slug}", {"via": via, "order": order})
        outcome.add(bundle.slug, f"entry field order: {order}")


def _fields_of(bundle: Bundle) -> list[entry_fields.FieldSpec]:
    """The bundle's entry fields as the catalog reads them: what its tracks' conditions are checked against."""
    return [
        entry_fields.FieldSpec(
            given.key,
            given.label,
            given.type,
            tuple(given.choices or ()),
            given.unit,
            given.required,
            given.column,
            given.filter,
        )
        for given in bundle.entry_fields
    ]


def _track_refusals(bundle: Bundle, existing: Benchmark | None) -> list[tuple[type, str]]:
    """Each track's conditions read against the bundle's own entry fields (they are applied first): one on a
    field the bundle does not make filterable is refused with its key path; one on a field the bundle removes
    names both the track and the field."""
    fields = _fields_of(bundle)
    defined = {spec.key for spec in fields}
    stored = {spec.key for spec in entry_fields.specs(existing)} if existing is not None else set()
    problems: list[tuple[type, str]] = []
    for number, given in enumerate(bundle.tracks):
        for position, written in enumerate(given.where):
            where = f"tracks[{number}].where[{position}]"
            try:
                tracks.parse_condition(fields, written, where)
            except tracks.BadSelection as exc:
                message = exc.message
                if exc.field in stored and exc.field not in defined:
                    message = (
                        f"{where}: the track {given.name!r} filters by the field {exc.field!r}, which this bundle "
                        "removes from entry_fields; keep the field or change the track"
                    )
                problems.append((InvalidInput, message))
    return problems


def _drop_tracks(actor: User | None, bundle: Bundle, outcome: Outcome, via: str) -> dict[str, tracks.TrackSpec]:
    """Before the fields are applied (a field a track uses is never removed or changed): remove the tracks the
    bundle does not list, and take off those it changes that use a field it removes or changes (stored again,
    changed, by _apply_tracks). Returns the tracks as they were."""
    benchmark = catalog.get_benchmark(bundle.slug)
    before = {spec.name: spec for spec in tracks.specs(benchmark)}
    given_fields = {given.key: given for given in bundle.entry_fields}
    touched = {
        spec.key
        for spec in entry_fields.specs(benchmark)
        if given_fields.get(spec.key) != EntryFieldSpec.model_validate(spec.as_dict())
    }
    fields = _fields_of(bundle)
    wanted = {
        given.name: tuple(dict.fromkeys(tracks.parse_condition(fields, text) for text in given.where))
        for given in bundle.tracks
    }
    for name, spec in before.items():
        if name not in wanted:
            tracks.drop(benchmark, name, actor=actor, via=via)
            outcome.add(bundle.slug, f"track removed: {name}")
        elif wanted[name] != spec.conditions and any(c.key in touched for c in spec.conditions):
            tracks.drop(benchmark, name, actor=actor, via=via)
    return before


def _apply_tracks(
    actor: User | None, bundle: Bundle, outcome: Outcome, via: str, before: dict[str, tracks.TrackSpec]
) -> None:
    """The benchmark's tracks as the bundle lists them, in its order (the order of the boards' tabs): each
    added or changed through the audited tracks actions, after the fields they filter by."""
    benchmark = catalog.get_benchmark(bundle.slug)
    current = {spec.name: spec for spec in tracks.specs(benchmark)}
    wanted = []
    for number, given in enumerate(bundle.tracks):
        try:
            wanted.append(tracks.checked_track(benchmark, given.name, given.label, given.where))
        except tracks.BadSelection as exc:
            path = f"tracks[{number}]"
            raise InvalidInput(f"{path}: {exc.message}", field=path) from exc
    for spec in wanted:
        if current.get(spec.name) != spec:
            tracks.store(benchmark, spec, actor=actor, via=via)
        if before.get(spec.name) != spec:
            said = " ".join(spec.as_dict()["where"])
            outcome.add(bundle.slug, f"track {'changed' if spec.name in before else 'added'}: {spec.name} ({said})")
    names = [spec.name for spec in wanted]
    rows = {row.name: row for row in db.session.scalars(select(Track).where(Track.benchmark_id == benchmark.id))}
    for position, name in enumerate(names):
        rows[name].position = position
    kept = [name for name in before if name in names]
    if kept != [name for name in names if name in kept]:
        catalog.boards_changed(benchmark)  # the boards' tabs are in this order
        order = ", ".join(names)
        audit_log.record(actor, "track.order", f"benchmark {bundle.slug}", {"via": via, "order": order})
        outcome.add(bundle.slug, f"track order: {order}")


def apply_bundle_archive(
    actor: User | None,
    data: bytes,
    *,
    dry_run: bool,
    reason: str | None = None,
    reviewed_sha256: str | None = None,
    via: str = "web",
) -> tuple[Outcome, str]:
    """A bundle uploaded as a .zip (the console's form): read it (InvalidInput naming every problem with its key
    path and line), then apply_bundle. ``reviewed_sha256``: the digest of the archive whose dry run the maintainer
    reviewed; applying another archive is refused (Conflict), so what is applied is what was reviewed. Returns the
    outcome and the archive's sha256."""
    digest = sha256(data)
    if not dry_run and reviewed_sha256 is not None and reviewed_sha256 != digest:
        raise Conflict(
            f"this archive (sha256 {digest[:12]}…) is not the one whose dry run was reviewed "
            f"({reviewed_sha256[:12]}…): review its dry run first"
        )
    try:
        loaded = read_bundle_zip(data)
    except BundleError as exc:
        raise InvalidInput(
            f"the bundle cannot be read ({_count(len(exc.problems), 'problem')}); nothing changed",
            [Problem(problem.line, str(problem)) for problem in exc.problems],
        ) from exc
    return apply_bundle(actor, loaded, dry_run=dry_run, reason=reason, via=via), digest


def bundle_archive(benchmark_slug: str) -> tuple[str, bytes]:
    """The benchmark's bundle as a .zip to download: (file name, bytes); the same files `bundle export` writes."""
    bundle, files = export_bundle(benchmark_slug)
    return f"{benchmark_slug}-bundle.zip", bundle_zip(bundle, files)


def bundle_text(benchmark_slug: str) -> str:
    """The benchmark's benchmark.yaml as its export writes it (the console shows it): the files' digests are
    those recorded when they were stored (each verified then, and on every read), so no file is read whole."""
    bundle, _files = export_bundle(benchmark_slug, with_files=False)
    return canonical_yaml(bundle).decode()


@dataclass(frozen=True)
class BenchmarkBundle:
    """A benchmark with its benchmark.yaml as its export writes it: the console's benchmark page."""

    benchmark: Benchmark
    text: str


def benchmark_bundle(benchmark_slug: str) -> BenchmarkBundle:
    """The benchmark (NotFound for an unknown slug) and its bundle's benchmark.yaml, for the console's page."""
    return BenchmarkBundle(catalog.get_benchmark(benchmark_slug), bundle_text(benchmark_slug))


# --- export --------------------------------------------------------------------------------------------------


def export_bundle(benchmark_slug: str, *, with_files: bool = True) -> tuple[Bundle, dict[str, bytes]]:
    """The benchmark as a bundle in its canonical form: (the description, the files by their path in it; without
    ``with_files``, only the identifier lists, which are made rather than stored)."""
    benchmark = catalog.get_benchmark(benchmark_slug)
    files: dict[str, bytes] = {}
    splits = [
        _export_split(split, files, with_files) for split in sorted(benchmark.splits, key=lambda s: (s.position, s.id))
    ]
    config = benchmark.task_config
    default = next((split.slug for split in benchmark.splits if split.id == benchmark.default_split_id), None)
    bundle = Bundle(
        format=1,
        slug=benchmark.slug,
        name=benchmark.name,
        description=benchmark.description or "",
        paper_url=benchmark.paper_url,
        task=json.loads(config) if config else benchmark.task_type,
        default_split=default,
        columns=json.loads(benchmark.board_columns) if benchmark.board_columns else None,
        entry_fields=[EntryFieldSpec.model_validate(spec.as_dict()) for spec in entry_fields.specs(benchmark)],
        tracks=[TrackSpec.model_validate(spec.as_dict()) for spec in tracks.specs(benchmark)],
        splits=splits,
    )
    return bundle, files


def _file(files: dict[str, bytes], path: str, data: bytes) -> FileRef:
    files[path] = data
    return FileRef(file=path, sha256=sha256(data))


def _suffix(head: bytes) -> str:
    """A file's extension from its first bytes: JSON lines, one JSON document, CSV (a comma on its first line),
    else text (NLVR2's annotation file)."""
    head = head[:65536].lstrip()
    if head[:1] in (b"{", b"["):
        lines = [line for line in head.split(b"\n")[:3] if line.strip()]
        return "jsonl" if len(lines) > 1 and all(line[:1] == b"{" for line in lines) else "json"
    return "csv" if b"," in head.split(b"\n", 1)[0] else "txt"


def _stored(files: dict[str, bytes], base: str, kind: str, split: Split, with_files: bool) -> FileRef | None:
    """One of the split's stored files ("labels", "annotations", "choices") at its canonical path, with its bytes
    in ``files`` (``with_files``), else named by the digest recorded when it was stored."""
    path, digest = label_files.stored_file(split, kind)
    if path is None or digest is None:
        return None
    head = label_files.stored_head(path)
    name = f"{base}/{kind}.json" if kind == "choices" else f"{base}/{kind}.{_suffix(head)}"
    if not with_files:
        return FileRef(file=name, sha256=digest)
    return _file(files, name, label_files.stored_bytes(path, digest, f"{kind} file of split {split.id}"))


def _export_split(split: Split, files: dict[str, bytes], with_files: bool) -> SplitSpec:
    base = f"splits/{split.slug}"
    annotations = _stored(files, base, "annotations", split, with_files)
    ids = label_files.load_gold(split).ids
    listed = _listed_sources(split)
    subsets = [
        SubsetSpec(
            name=subset.name,
            ids=_file(files, f"{base}/subsets/{number}.txt", "".join(f"{ids[i]}\n" for i in subset.indices).encode()),
        )
        for number, subset in enumerate((s for s in split.subsets if s.source in listed), start=1)
    ]
    stored = db.session.scalars(select(Reference).where(Reference.split_id == split.id).order_by(Reference.id))
    labels = _stored(files, base, "labels", split, with_files)
    assert labels is not None, "every split has a gold file"
    return SplitSpec(
        slug=split.slug,
        name=split.name,
        hidden=split.hidden,
        labels=labels,
        annotations=annotations,
        choices=_stored(files, base, "choices", split, with_files),
        subset_field=split.subset_field,
        subsets=subsets,
        policy=Policy.model_validate(
            {
                "per_day": split.per_day,
                "per_month": split.per_month,
                "total": split.total,
                "rejected_per_day": split.rejected_per_day,
                "feedback": split.feedback,
                "open": split.is_open,
                "sealed": split.sealed_fraction or 0.0,
            }
        ),
        phase=Phase(
            opens=split.opens_at and as_utc(split.opens_at),
            closes=split.closes_at and as_utc(split.closes_at),
            reveal=split.reveal_planned_at and as_utc(split.reveal_planned_at),
        ),
        references=[
            ReferenceSpec(name=row.name, scores=json.loads(row.scores), source=row.source_url, date=row.published_on)
            for row in stored
        ],
    )
