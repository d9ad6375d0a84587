"""Entry fields: a benchmark's fact sheet (zero-shot? parameters? open weights?), which its maintainers define
and teams fill in at upload or at publication. The one place that defines a field, checks a value against its
type and writes a value as people read it.

A field's values live on each submission (Submission.fields, a JSON object {key: value}): yes/no as true or
false, an integer as a number, the rest as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select

from app.db import commit, db
from app.models import ENTRY_FIELD_TYPES, Benchmark, EntryField, Split, Submission, Track, User
from app.services.audit import audit_log
from app.services.catalog.benchmarks import boards_changed, get_benchmark
from app.services.errors import Conflict, InvalidInput, NotFound, check_visible

KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)
MAX_LABEL = 120
MAX_UNIT = 40
MAX_CHOICES = 50
MAX_CHOICE = 80
MAX_TEXT = 500
MAX_URL = 2000
MAX_INTEGER = 10**18  # a count of parameters, tokens or examples; beyond it a typing mistake
YES = ("yes", "true", "1", "on")
NO = ("no", "false", "0", "off")
Value = bool | int | str


@dataclass(frozen=True)
class FieldSpec:
    """A field as the rest of the app reads it (a plain copy: safe in a board's snapshot and across sessions)."""

    key: str
    label: str
    type: str
    choices: tuple[str, ...] = ()
    unit: str | None = None
    required: bool = False
    column: bool = False
    filterable: bool = False

    def text(self, value: Value | None) -> str:
        """The value as a page writes it: yes/no, 7,000,000,000 parameters, the text itself; "" when not given."""
        if value is None:
            return ""
        if self.type == "yesno":
            return "yes" if value else "no"
        if self.type == "integer" and isinstance(value, int):
            return f"{value:,}" + (f" {self.unit}" if self.unit else "")
        return str(value)

    def cell(self, value: Value | None) -> str:
        """The value in a table's column, whose heading names the field (an integer without its unit)."""
        if self.type == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return f"{value:,}"
        return self.text(value)

    def short(self, value: Value | None) -> str:
        """The value in a board's narrow column: a large integer to three significant figures (5.4B, 110M; the
        exact value in the cell's title and in the exports), anything else as `cell` writes it."""
        if self.type == "integer" and isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
            for size, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
                if value >= size:
                    return f"{value / size:.3g}{suffix}"
        return self.cell(value)

    def as_dict(self) -> dict[str, Any]:
        """The field in a bundle's canonical order (and the audit log's)."""
        return {
            "key": self.key,
            "label": self.label,
            "type": self.type,
            "choices": list(self.choices) if self.type == "choice" else None,
            "unit": self.unit if self.type == "integer" else None,
            "required": self.required,
            "column": self.column,
            "filter": self.filterable,
        }


def spec_of(row: EntryField) -> FieldSpec:
    return FieldSpec(
        key=row.key,
        label=row.label,
        type=row.type,
        choices=_choices(row),
        unit=row.unit,
        required=bool(row.required),
        column=bool(row.column),
        filterable=bool(row.filterable),
    )


def specs(benchmark: Benchmark | int) -> list[FieldSpec]:
    """A benchmark's fields in their order."""
    benchmark_id = benchmark if isinstance(benchmark, int) else benchmark.id
    rows = db.session.scalars(
        select(EntryField).where(EntryField.benchmark_id == benchmark_id).order_by(EntryField.position, EntryField.id)
    )
    return [spec_of(row) for row in rows]


def specs_by_benchmark(benchmark_ids: Sequence[int]) -> dict[int, list[FieldSpec]]:
    """The fields of several benchmarks, in one query: {benchmark id: its fields in order} (every id a key)."""
    found: dict[int, list[FieldSpec]] = {benchmark_id: [] for benchmark_id in benchmark_ids}
    if found:
        rows = db.session.scalars(
            select(EntryField)
            .where(EntryField.benchmark_id.in_(list(found)))
            .order_by(EntryField.benchmark_id, EntryField.position, EntryField.id)
        )
        for row in rows:
            found[row.benchmark_id].append(spec_of(row))
    return found


def list_fields(benchmark_slug: str) -> list[FieldSpec]:
    return specs(get_benchmark(benchmark_slug))


# --- defining --------------------------------------------------------------------------------------------


def checked_spec(
    key: str,
    label: str,
    type: str,
    choices: Sequence[str] | None = None,
    unit: str | None = None,
    *,
    required: bool = False,
    column: bool = False,
    filterable: bool = False,
) -> FieldSpec:
    """A field's definition checked whole (InvalidInput naming what is wrong), before anything is stored."""
    key = (key or "").strip()
    if not KEY.match(key):
        raise InvalidInput(
            f"key must be a lower-case letter then letters, digits or underscores (at most 64), got {key[:70]!r}",
            field="key",
        )
    label = (label or "").strip()
    if not label or len(label) > MAX_LABEL:
        raise InvalidInput(f"label is required, at most {MAX_LABEL} characters", field="label")
    check_visible("the label", label, field="label")
    if type not in ENTRY_FIELD_TYPES:
        raise InvalidInput(f"type must be one of {', '.join(ENTRY_FIELD_TYPES)}, got {type!r}", field="type")
    cleaned: tuple[str, ...] = ()
    if type == "choice":
        cleaned = tuple(str(choice).strip() for choice in (choices or ()))
        if not cleaned or len(cleaned) > MAX_CHOICES:
            raise InvalidInput(f"a choice field needs 1 to {MAX_CHOICES} choices (--choices a,b)", field="choices")
        if any(not choice or len(choice) > MAX_CHOICE for choice in cleaned) or len(set(cleaned)) != len(cleaned):
            raise InvalidInput(
                f"choices must be distinct, non-empty, at most {MAX_CHOICE} characters each", field="choices"
            )
        for choice in cleaned:
            check_visible("a choice", choice, field="choices")
    elif choices:
        raise InvalidInput("only a choice field has choices", field="choices")
    unit = (unit or "").strip() or None
    if unit is not None:
        if type != "integer":
            raise InvalidInput("only an integer field has a unit", field="unit")
        if len(unit) > MAX_UNIT:
            raise InvalidInput(f"unit must have at most {MAX_UNIT} characters", field="unit")
        check_visible("the unit", unit, field="unit")
    return FieldSpec(key, label, type, cleaned, unit, bool(required), bool(column), bool(filterable))


def _row(benchmark: Benchmark, key: str) -> EntryField:
    row = db.session.scalar(select(EntryField).where(EntryField.benchmark_id == benchmark.id, EntryField.key == key))
    if row is None:
        raise NotFound(f"benchmark {benchmark.slug} has no entry field {key!r}")
    return row


def store(benchmark: Benchmark, spec: FieldSpec, *, actor: User | None, via: str) -> EntryField:
    """Add the field, or change it to `spec` (its values stay: a changed type is refused while any is held
    that the new definition would refuse). Audited; the caller commits (set_field, or a bundle's transaction)."""
    row = db.session.scalar(
        select(EntryField).where(EntryField.benchmark_id == benchmark.id, EntryField.key == spec.key)
    )
    action = "entry_field.change" if row is not None else "entry_field.add"
    if row is None:
        position = db.session.scalar(
            select(func.coalesce(func.max(EntryField.position), -1)).where(EntryField.benchmark_id == benchmark.id)
        )
        row = EntryField(benchmark_id=benchmark.id, key=spec.key, position=int(position or 0) + 1)
        db.session.add(row)
    else:
        using = _tracks_using(benchmark, spec.key)
        named = set(using.values()) if spec.type == "choice" else set()
        kept = not using or (spec.filterable and spec.type == row.type and named <= set(spec.choices))
        if not kept:
            raise Conflict(
                f"the tracks {', '.join(using)} filter by {spec.key!r}: it stays filterable, of its type and with "
                "the choices they name while a track uses it; remove or change those tracks first"
            )
        for value in _held(benchmark, spec.key):
            try:
                clean_value(spec, value)
            except InvalidInput:
                raise Conflict(
                    f"entries hold values of {spec.key!r} that the new definition refuses ({value!r}); "
                    "remove the field once no entry holds a value, or keep its type"
                ) from None
    row.label, row.type, row.unit = spec.label, spec.type, spec.unit
    row.choices = json.dumps(list(spec.choices)) if spec.type == "choice" else None
    row.required, row.column, row.filterable = spec.required, spec.column, spec.filterable
    boards_changed(benchmark)
    audit_log.record(actor, action, f"benchmark {benchmark.slug}", {**spec.as_dict(), "via": via})
    db.session.flush()
    return row


def add_field(benchmark_slug: str, spec: FieldSpec, *, actor: User | None = None, via: str = "cli") -> FieldSpec:
    """Define a new field on a benchmark (Conflict if the key is taken); audited."""
    benchmark = get_benchmark(benchmark_slug)
    if any(existing.key == spec.key for existing in specs(benchmark)):
        raise Conflict(f"benchmark {benchmark.slug} has a field {spec.key!r} already; remove it first")
    store(benchmark, spec, actor=actor, via=via)
    commit()
    return spec


def _held(benchmark: Benchmark, key: str) -> list[Value]:
    """The values submissions of the benchmark hold for a field."""
    rows = db.session.scalars(
        select(Submission.fields)
        .join(Split, Split.id == Submission.split_id)
        .where(
            Split.benchmark_id == benchmark.id,
            # Only rows whose text names the key are parsed (a crowded benchmark holds hundreds of thousands).
            Submission.fields.contains(json.dumps(key), autoescape=True),
        )
    )
    return [values[key] for values in (json.loads(text) for text in rows if text) if key in values]


def _choices(row: EntryField) -> tuple[str, ...]:
    return tuple(json.loads(row.choices)) if row.choices else ()


def _tracks_using(benchmark: Benchmark, key: str) -> dict[str, Value]:
    """The benchmark's tracks with a condition on the field, with the value it names (a choice's matters):
    services/catalog/tracks.py stores them."""
    rows = db.session.execute(select(Track.name, Track.conditions).where(Track.benchmark_id == benchmark.id))
    return {name: item[2] for name, conditions in rows for item in json.loads(conditions) if item[0] == key}


def drop(benchmark: Benchmark, key: str, *, actor: User | None, via: str) -> EntryField:
    """Remove a field; refused (Conflict) while any submission holds a value for it: those are the teams'
    statements, and removing the field would silently take them off the boards. Audited; the caller commits."""
    row = _row(benchmark, key)
    using = _tracks_using(benchmark, key)
    if using:
        raise Conflict(f"the tracks {', '.join(using)} filter by {key!r}; remove or change them first")
    held = len(_held(benchmark, key))
    if held:
        raise Conflict(
            f"{held:,} submission{'s' if held != 1 else ''} of {benchmark.slug} hold a value of {key!r}; "
            "a field is removed only while no entry holds a value"
        )
    db.session.delete(row)
    boards_changed(benchmark)
    audit_log.record(actor, "entry_field.remove", f"benchmark {benchmark.slug}", {"key": key, "via": via})
    db.session.flush()
    return row


def remove_field(benchmark_slug: str, key: str, *, actor: User | None = None, via: str = "cli") -> None:
    drop(get_benchmark(benchmark_slug), key, actor=actor, via=via)
    commit()


# --- values ------------------------------------------------------------------------------------------------


def _field_error(spec: FieldSpec, text: str) -> InvalidInput:
    return InvalidInput(f"The field {spec.label!r} (fields.{spec.key}) {text}", field=f"fields.{spec.key}")


_SCIENTIFIC = re.compile(r"^\d{1,19}(?:\.\d{1,19})?[eE]\d{1,2}$")


def whole_number(text: str) -> int | None:
    """A whole number from 0 to MAX_INTEGER as a person writes one (a fact sheet's value, a board's filter):
    7000000000, 7_000_000_000, 7,000,000,000 or 7e9 (exactly: 7.5e-1 or 1.23456e2 is not one); None otherwise."""
    cleaned = text.strip().replace("_", "").replace(",", "")
    if cleaned.isascii() and cleaned.isdigit() and len(cleaned) <= 19:
        number = int(cleaned)
    elif _SCIENTIFIC.match(cleaned):
        exact = Decimal(cleaned)
        if exact != exact.to_integral_value():
            return None
        number = int(exact)
    else:
        return None
    return number if number <= MAX_INTEGER else None


def clean_value(spec: FieldSpec, raw: Any) -> Value | None:
    """One value checked against its field's type (InvalidInput naming the field); None when not given."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if spec.type == "yesno":
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().lower() if isinstance(raw, str) else None
        if word in YES:
            return True
        if word in NO:
            return False
        raise _field_error(spec, f"must be yes or no (true/false), got {str(raw)[:40]!r}")
    if spec.type == "integer":
        number = whole_number(str(raw)) if isinstance(raw, int | str) and not isinstance(raw, bool) else None
        if number is not None:
            return number
        unit = f" ({spec.unit})" if spec.unit else ""
        raise _field_error(
            spec,
            f"must be a whole number from 0 to 10^18{unit} (7000000000, 7,000,000,000 or 7e9), got {str(raw)[:40]!r}",
        )
    if not isinstance(raw, str):
        raise _field_error(spec, f"must be text, got {type(raw).__name__}")
    text = raw.strip()
    if "\x00" in text:
        raise _field_error(spec, "must not contain NUL bytes")
    if spec.type == "choice":
        if text not in spec.choices:
            raise _field_error(spec, f"must be one of {', '.join(spec.choices)}, got {text[:40]!r}")
        return text
    if spec.type == "url":
        if len(text) > MAX_URL or not URL.match(text):
            raise _field_error(spec, f"must be an http:// or https:// address of at most {MAX_URL:,} characters")
    elif len(text) > MAX_TEXT:
        raise _field_error(spec, f"must have at most {MAX_TEXT} characters")
    check_visible(f"The field {spec.label!r} (fields.{spec.key})", text, field=f"fields.{spec.key}")
    return text


def clean_values(fields: Sequence[FieldSpec], raw: Mapping[str, Any] | None) -> dict[str, Value]:
    """Values given for a benchmark's fields, checked (InvalidInput naming the first bad or unknown field);
    those not given (or given empty) are left out."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidInput("fields must be an object of field key: value", field="fields")
    by_key = {spec.key: spec for spec in fields}
    for key in raw:
        if key not in by_key:
            known = ", ".join(by_key) or "none"
            raise InvalidInput(
                f"fields: unknown field {str(key)[:70]!r}; this benchmark's fields: {known}", field=f"fields.{key}"
            )
    cleaned = {}
    for spec in fields:
        value = clean_value(spec, raw.get(spec.key))
        if value is not None:
            cleaned[spec.key] = value
    return cleaned


def check_required(fields: Sequence[FieldSpec], values: Mapping[str, Value]) -> None:
    """At publication: every required field has a value (InvalidInput naming the first missing)."""
    for spec in fields:
        if spec.required and values.get(spec.key) is None:
            raise _field_error(spec, "is required to publish")


def values_of(stored: str | None) -> dict[str, Value]:
    """A submission's stored values (Submission.fields)."""
    return json.loads(stored) if stored else {}


def stored(values: Mapping[str, Value]) -> str | None:
    """Values as Submission.fields keeps them (None: none given), keys sorted so equal values store equal text."""
    return json.dumps(dict(values), sort_keys=True, ensure_ascii=False) if values else None
