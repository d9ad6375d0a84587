"""Tracks: named filters over a benchmark's filterable entry fields (`zero-shot`: zero_shot = yes; `small`:
parameters <= 1e9), which its maintainers define, and the selection a board is asked for (?track=, ?where=,
?verified=1). The one place that parses a condition, says which entries a selection keeps and names it.

A board of a selection ranks the entries it keeps among themselves (board_snapshots): its own N, its own
rank intervals and resolution, never the whole board's ranks with rows hidden.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import func, select

from app.db import commit, db
from app.models import Benchmark, Track, User
from app.services.audit import audit_log
from app.services.catalog import entry_fields
from app.services.catalog.benchmarks import boards_changed, get_benchmark
from app.services.catalog.entry_fields import FieldSpec, Value
from app.services.errors import Conflict, NotFound, ServiceError, check_visible

MAX_NAME = 40
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
# The built-in track of the entries a maintainer marked verified (?verified=1 or ?track=verified).
VERIFIED = "verified"
MAX_LABEL = 120
MAX_CONDITIONS = 8  # per track, and ?where= parameters per request
MAX_CONDITION = 200  # characters of one condition as written
COMPARISONS = ("<=", ">=", "<", ">")
_WRITTEN = re.compile(r"^\s*([A-Za-z0-9_]{1,64})\s*(<=|>=|<|>|:|=)\s*(.*?)\s*$", re.DOTALL)
_SIGNS = {"=": "=", "<=": "≤", ">=": "≥", "<": "<", ">": ">"}


class BadSelection(ServiceError):
    """A track or condition a board cannot be filtered by (an unknown track or field, a field that is not
    filterable, a value its type refuses): 400 naming it."""

    status = 400


@dataclass(frozen=True)
class Condition:
    """One test of an entry's field value: key, operator (=, <=, >=, <, >) and the value checked against the
    field's type. An entry without a value for the field never meets it."""

    key: str
    op: str
    value: Value

    def keeps(self, values: Mapping[str, Any]) -> bool:
        held = values.get(self.key)
        if held is None:
            return False
        if self.op == "=":
            return held == self.value and isinstance(held, bool) == isinstance(self.value, bool)
        if isinstance(held, bool) or not isinstance(held, int) or not isinstance(self.value, int):
            return False
        return {"<=": held <= self.value, ">=": held >= self.value, "<": held < self.value, ">": held > self.value}[
            self.op
        ]

    @property
    def written(self) -> str:
        """As a URL or a bundle writes it: zero_shot:yes, parameters<=1000000000."""
        value = ("yes" if self.value else "no") if isinstance(self.value, bool) else str(self.value)
        return f"{self.key}{':' if self.op == '=' else self.op}{value}"

    def words(self, spec: FieldSpec | None) -> str:
        """As a page says it: "Zero-shot: yes", "Parameters ≤ 1,000,000,000"."""
        if spec is None:
            return self.written
        if self.op == "=":
            return f"{spec.label}: {spec.cell(self.value)}"
        return f"{spec.label} {_SIGNS[self.op]} {spec.cell(self.value)}"

    def as_list(self) -> list:
        return [self.key, self.op, self.value]


@dataclass(frozen=True)
class TrackSpec:
    """A named track as the rest of the app reads it."""

    name: str
    label: str
    conditions: tuple[Condition, ...]

    def as_dict(self) -> dict[str, Any]:
        """The track in a bundle's canonical order (and the audit log's)."""
        return {"name": self.name, "label": self.label, "where": [c.written for c in self.conditions]}


@dataclass(frozen=True)
class Selection:
    """The entries a board keeps: those meeting every condition (of the named track and any ad-hoc ones), and
    only verified ones when `verified`. `track`: the named track asked for (None: ad-hoc or verified only)."""

    conditions: tuple[Condition, ...] = ()
    verified: bool = False
    track: str | None = None
    label: str | None = None

    @property
    def key(self) -> str:
        """One text per set of entries kept (a memo's key): the same conditions in any order give the same."""
        parts = sorted({c.written for c in self.conditions})
        return "&".join(([VERIFIED] if self.verified else []) + parts)

    @property
    def named(self) -> bool:
        """A named track alone (the verified one included): built by the board's job and stored with the board."""
        return self.track is not None

    def keeps(self, values: Mapping[str, Any], verified: bool) -> bool:
        if self.verified and not verified:
            return False
        return all(condition.keeps(values) for condition in self.conditions)

    def words(self, specs: Sequence[FieldSpec]) -> str:
        """The entries it keeps, as a page says it: "verified entries", "entries with Zero-shot: yes; Parameters
        ≤ 1,000,000,000", "verified entries with Zero-shot: yes"."""
        by_key = {spec.key: spec for spec in specs}
        said = "; ".join(c.words(by_key.get(c.key)) for c in self.conditions)
        return ("verified entries" if self.verified else "entries") + (f" with {said}" if said else "")


def _one_of(spec: FieldSpec, raw: str) -> bool:
    """Whether a text is, as it stands, a value of a field that is not a number (a choice "<1B", a text)."""
    if spec.type == "integer":
        return False
    try:
        return entry_fields.clean_value(spec, raw) is not None
    except ServiceError:
        return False


def parse_condition(specs: Sequence[FieldSpec], written: str, where: str = "where") -> Condition:
    """A condition as written (`zero_shot:yes`, `parameters<=1e9`) checked against the benchmark's fields:
    BadSelection naming the field when it is unknown, not filterable, or the value does not fit its type."""
    if not isinstance(written, str) or len(written) > MAX_CONDITION:
        raise BadSelection(f"{where}: a condition is field:value (at most {MAX_CONDITION} characters)", field=where)
    found = _WRITTEN.match(written)
    if found is None:
        raise BadSelection(
            f"{where}: {written[:70]!r} is not a condition; write field:value (zero_shot:yes) or, for a number, "
            "field<=value (parameters<=1e9)",
            field=where,
        )
    key, op, raw = found.group(1), found.group(2), found.group(3)
    op = "=" if op in (":", "=") else op
    by_key = {spec.key: spec for spec in specs}
    filterable = ", ".join(spec.key for spec in specs if spec.filterable) or "none"
    spec = by_key.get(key)
    if spec is None:
        raise BadSelection(f"{where}: unknown field {key!r}; the fields a board filters by: {filterable}", field=key)
    if not spec.filterable:
        raise BadSelection(
            f"{where}: the field {key!r} is not one a board filters by; those it does: {filterable}", field=key
        )
    sign = raw[:2] if raw[:2] in COMPARISONS else raw[:1] if raw[:1] in COMPARISONS else ""
    if op == "=" and sign and not _one_of(spec, raw):
        # parameters:<=1e9 is a comparison; a value that merely starts with one (a choice "<1B") is not.
        op, raw = sign, raw[len(sign) :].strip()
    if op != "=":
        if spec.type != "integer":
            raise BadSelection(f"{where}: {key!r} is {spec.type}, compared only with field:value", field=key)
        number = entry_fields.whole_number(raw)
        if number is None:
            raise BadSelection(
                f"{where}: {key} {op} needs a whole number (1000000000 or 1e9), got {raw[:40]!r}", field=key
            )
        return Condition(key, op, number)
    if spec.type == "integer":
        number = entry_fields.whole_number(raw)
        if number is None:
            raise BadSelection(f"{where}: {key} needs a whole number (1000000000 or 1e9), got {raw[:40]!r}", field=key)
        return Condition(key, op, number)
    try:
        value = entry_fields.clean_value(spec, raw)
    except ServiceError as exc:
        raise BadSelection(f"{where}: {exc.message}", field=key) from None
    if value is None:
        raise BadSelection(f"{where}: {key} needs a value ({key}:...)", field=key)
    return Condition(key, op, value)


# --- named tracks ----------------------------------------------------------------------------------------


def _spec(row: Track) -> TrackSpec:
    return TrackSpec(row.name, row.label, tuple(Condition(*item) for item in json.loads(row.conditions)))


def specs(benchmark: Benchmark | int) -> list[TrackSpec]:
    """A benchmark's named tracks in their order."""
    benchmark_id = benchmark if isinstance(benchmark, int) else benchmark.id
    rows = db.session.scalars(
        select(Track).where(Track.benchmark_id == benchmark_id).order_by(Track.position, Track.id)
    )
    return [_spec(row) for row in rows]


def list_tracks(benchmark_slug: str) -> list[TrackSpec]:
    return specs(get_benchmark(benchmark_slug))


def selection(
    benchmark_id: int,
    track: str | None = None,
    where: str | Sequence[str] | None = None,
    verified: bool = False,
) -> Selection | None:
    """The selection a board is asked for (None: every entry): BadSelection (400) naming an unknown track, or
    the field at fault in a condition."""
    written = [where] if isinstance(where, str) else [text for text in (where or ()) if text]
    if track in (None, "") and not written and not verified:
        return None
    if len(written) > MAX_CONDITIONS:
        raise BadSelection(f"where: at most {MAX_CONDITIONS} conditions, got {len(written)}", field="where")
    fields = entry_fields.specs(benchmark_id)
    conditions = [parse_condition(fields, text) for text in written]
    name, label = None, None
    if track == VERIFIED:
        verified, name, label = True, VERIFIED, "Verified"
    elif track not in (None, ""):
        named = {spec.name: spec for spec in specs(benchmark_id)}
        chosen = named.get(str(track))
        if chosen is None:
            known = ", ".join([VERIFIED, *named])
            raise BadSelection(
                f"track: unknown track {str(track)[:60]!r}; this benchmark's tracks: {known}", field="track"
            )
        conditions = [*chosen.conditions, *conditions]
        name, label = chosen.name, chosen.label
    unique = tuple(dict.fromkeys(conditions))
    if written or (verified and name not in (None, VERIFIED)):
        name, label = None, None  # a named track narrowed further is a selection of its own
    elif verified and not unique:
        name, label = VERIFIED, "Verified"  # ?verified=1 is the verified track
    return Selection(unique, verified, name, label)


def named_selections(benchmark_id: int) -> list[Selection]:
    """Every named track's selection, verified first: the boards the board's job builds with the board."""
    return [Selection((), True, VERIFIED, "Verified")] + [
        Selection(spec.conditions, False, spec.name, spec.label) for spec in specs(benchmark_id)
    ]


def checked_track(benchmark: Benchmark, name: str, label: str, where: Sequence[str]) -> TrackSpec:
    """A track's definition checked whole (BadSelection naming what is wrong), before anything is stored."""
    name = (name or "").strip()
    if not NAME.match(name):
        raise BadSelection(
            f"name must be a lower-case letter then letters, digits or hyphens (at most 40), got {name[:50]!r}",
            field="name",
        )
    if name == VERIFIED:
        raise BadSelection(f"{VERIFIED!r} is the built-in track of verified entries; choose another name", field="name")
    label = (label or "").strip()
    if not label or len(label) > MAX_LABEL:
        raise BadSelection(f"label is required, at most {MAX_LABEL} characters", field="label")
    check_visible("the label", label, field="label")
    written = [text for text in where if isinstance(text, str) and text.strip()]
    if not written or len(written) > MAX_CONDITIONS:
        raise BadSelection(f"a track needs 1 to {MAX_CONDITIONS} conditions (--where field:value)", field="where")
    fields = entry_fields.specs(benchmark)
    conditions = tuple(dict.fromkeys(parse_condition(fields, text) for text in written))
    clash = _never_met(conditions)
    if clash is not None:
        raise BadSelection(
            f"where: no entry can meet both {clash[0]} and {clash[1]}: the track would be empty", field="where"
        )
    return TrackSpec(name, label, conditions)


def _never_met(conditions: Sequence[Condition]) -> tuple[str, str] | None:
    """Two conditions on one field that no value meets together (zero_shot:yes and zero_shot:no; parameters>=1e9
    and parameters<=1e8), as written; None when some value meets them all. A named track keeping no entry ever
    is a maintainer's slip, refused; an ad-hoc selection may be empty."""
    for index, first in enumerate(conditions):
        for second in conditions[index + 1 :]:
            if first.key != second.key:
                continue
            if first.op == "=" and second.op == "=":
                met = first.value == second.value
            elif first.op == "=" or second.op == "=":
                equal, bound = (first, second) if first.op == "=" else (second, first)
                met = bound.keeps({bound.key: equal.value})
            else:
                met = _range_meets(first, second)
            if not met:
                return first.written, second.written
    return None


def _range_meets(first: Condition, second: Condition) -> bool:
    """Whether some whole number meets two comparisons (<=, >=, <, >) on one field."""
    lows = [cast(int, c.value) + (c.op == ">") for c in (first, second) if c.op in (">=", ">")]
    highs = [cast(int, c.value) - (c.op == "<") for c in (first, second) if c.op in ("<=", "<")]
    return not lows or not highs or max(lows) <= min(highs)


def store(benchmark: Benchmark, spec: TrackSpec, *, actor: User | None, via: str) -> Track:
    """Add the track, or change it to `spec`. Audited; the caller commits (add_track, or a bundle's apply)."""
    row = db.session.scalar(select(Track).where(Track.benchmark_id == benchmark.id, Track.name == spec.name))
    action = "track.change" if row is not None else "track.add"
    if row is None:
        position = db.session.scalar(
            select(func.coalesce(func.max(Track.position), -1)).where(Track.benchmark_id == benchmark.id)
        )
        row = Track(benchmark_id=benchmark.id, name=spec.name, position=int(position or 0) + 1)
        db.session.add(row)
    row.label = spec.label
    row.conditions = json.dumps([c.as_list() for c in spec.conditions])
    boards_changed(benchmark)
    audit_log.record(actor, action, f"benchmark {benchmark.slug}", {**spec.as_dict(), "via": via})
    db.session.flush()
    return row


def add_track(
    benchmark_slug: str, name: str, label: str, where: Sequence[str], *, actor: User | None = None, via: str = "cli"
) -> TrackSpec:
    """Define a new track on a benchmark (Conflict if the name is taken); audited."""
    benchmark = get_benchmark(benchmark_slug)
    spec = checked_track(benchmark, name, label, where)
    if any(existing.name == spec.name for existing in specs(benchmark)):
        raise Conflict(f"benchmark {benchmark.slug} has a track {spec.name!r} already; remove it first")
    store(benchmark, spec, actor=actor, via=via)
    commit()
    return spec


def drop(benchmark: Benchmark, name: str, *, actor: User | None, via: str) -> None:
    """Remove a track (its stored boards go with the board's next build). Audited; the caller commits."""
    row = db.session.scalar(select(Track).where(Track.benchmark_id == benchmark.id, Track.name == name))
    if row is None:
        raise NotFound(f"benchmark {benchmark.slug} has no track {name!r}")
    db.session.delete(row)
    boards_changed(benchmark)
    audit_log.record(actor, "track.remove", f"benchmark {benchmark.slug}", {"name": name, "via": via})
    db.session.flush()


def remove_track(benchmark_slug: str, name: str, *, actor: User | None = None, via: str = "cli") -> None:
    drop(get_benchmark(benchmark_slug), name, actor=actor, via=via)
    commit()
