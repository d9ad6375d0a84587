"""The models of benchmark.yaml (format 1), as the bundle spec describes it: what each key holds, its default,
and the rules between keys. Pydantic, strict (a YAML `yes` is not true, `"5"` is not 5), frozen, unknown keys
refused. Values come in as the YAML reader makes them (app/bundles/reading.py: YAML 1.2's core schema, so dates
are text) or as Python objects (a service building a bundle to export): both validate the same.

Custom errors carry their words in the message (reading.py shows it as is); a rule between keys lists, in the
error's context (`problems`), each key inside the model it is about, so each problem points at that key's line.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from app.evaluation import TASK_TYPES, configured
from app.evaluation.sealed import MAX_FRACTION

SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
SHA256 = re.compile(r"[0-9a-f]{64}")
URL = re.compile(r"https?://[^\s/$.?#][^\s]*", re.IGNORECASE)
MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?")
FIELD_KEY = re.compile(r"[a-z][a-z0-9_]{0,63}")
TRACK_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
FIELD_TYPES = ("yesno", "choice", "integer", "text", "url")
COLUMN_KEY = re.compile(r"[^\s:][^\n]{0,200}:[a-z][a-z0-9_]{0,31}")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
NONE = "none"  # the word the format uses for "no limit" (quotas) and "no date" (phases, references)
MAX_PATH = 255
# A split's policy when the bundle gives none, key by key: a public split shows every score without limits;
# a hidden one gets the safe default (the ladder, 5 a day, 20 a month), as `splits add --hidden` does.
PUBLIC_POLICY: dict[str, Any] = {"feedback": "full", "per_day": None, "per_month": None, "total": None}
HIDDEN_POLICY: dict[str, Any] = {"feedback": "ladder", "per_day": 5, "per_month": 20, "total": None}


def shown(value: Any) -> str:
    """A value as an error message quotes it: text in double quotes (cut at 40 characters), YAML's words for
    true, false and null, "a mapping" / "a list" for collections."""
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:40] + "…"
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return str(value)


def _wrong(message: str) -> PydanticCustomError:
    return PydanticCustomError("bundle_value", "{message}", {"message": message})


def _rule(problems: list[tuple[tuple[str | int, ...], str]]) -> PydanticCustomError:
    """Rules between keys broken inside one model: each (key path inside the model, words)."""
    return PydanticCustomError(
        "bundle_rule", "{message}", {"message": "; ".join(words for _, words in problems), "problems": problems}
    )


def _schema(schema: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema(schema, mode="validation")


# --- values ----------------------------------------------------------------------------------------------


def _slug(value: Any) -> Any:
    if not isinstance(value, str) or not SLUG.fullmatch(value):
        raise _wrong(f"expected a slug (lower-case letters, digits and dashes, at most 64), got {shown(value)}")
    return value


def _sha256(value: Any) -> Any:
    if not isinstance(value, str) or not SHA256.fullmatch(value):
        raise _wrong(f"expected a sha256 digest (64 lower-case hex digits), got {shown(value)}")
    return value


def _relative_path(value: Any) -> Any:
    """A file's name inside the bundle: relative, `/`-separated, no `..`, `.` or empty part, nothing a file
    system reads differently (a backslash, a NUL, a drive)."""
    if not isinstance(value, str):
        raise _wrong(f"expected a path inside the bundle, like splits/dev/labels.jsonl, got {shown(value)}")
    parts = value.split("/")
    wrong = (
        not value
        or len(value) > MAX_PATH
        or value.startswith("/")
        or "\\" in value
        or "\x00" in value
        or re.match(r"[A-Za-z]:", value)
        or any(part in ("", ".", "..") for part in parts)
        or not value.isprintable()
    )
    if wrong:
        raise _wrong(
            "expected a path inside the bundle folder, like splits/dev/labels.jsonl (relative, / between parts, "
            f"no .. or empty part, no backslash), got {shown(value)}"
        )
    return value


def _quota(value: Any) -> Any:
    if value is None or value == NONE:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(f'expected an integer or "none", got {shown(value)}')
    if value < 0:
        raise _wrong(f'expected an integer >= 0 or "none", got {shown(value)}')
    return value


def _count(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _wrong(f"expected an integer >= 0, got {shown(value)}")
    return value


def _moment(value: Any) -> Any:
    """A moment in UTC: an aware datetime, a date (its midnight UTC), their ISO 8601 text (no zone: UTC)."""
    if value is None or value == NONE:
        return None
    if isinstance(value, str) and MOMENT.fullmatch(value):
        with contextlib.suppress(ValueError):  # 2027-02-30: refused below, in the same words
            value = datetime.fromisoformat(value) if "T" in value or " " in value else date.fromisoformat(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(0, 0), tzinfo=UTC)
    raise _wrong(
        f'expected a date and time like 2026-12-01T00:00Z, a date like 2026-12-01, or "none", got {shown(value)}'
    )


def _day(value: Any) -> Any:
    if value is None or value == NONE:
        return None
    if isinstance(value, str) and DAY.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    raise _wrong(f'expected a date like 2019-07-28 or "none", got {shown(value)}')


def _url(value: Any) -> Any:
    if value is not None and (not isinstance(value, str) or not URL.fullmatch(value) or len(value) > 500):
        raise _wrong(f"expected an http(s) address or null, got {shown(value)}")
    return value


def _percentage(value: Any) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 100
    if not ok:
        raise _wrong(f"expected a percentage from 0 to 100, got {shown(value)}")
    return float(value)


def _sealed(value: Any) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= MAX_FRACTION
    if not ok:
        raise _wrong(f"expected a share of groups from 0 to {MAX_FRACTION} (0: no sealed part), got {shown(value)}")
    return float(value)


def _check_task_mapping(value: dict[str, Any]) -> dict[str, Any]:
    """A configured task type (app/evaluation/configured), in its canonical form: `type` first, then every key
    that has a value, defaults too, sorted (keys left null say nothing a reader needs); an export writes it so.
    Each problem names its key below ``task``."""
    try:
        config = configured.parse(value)
    except configured.ConfigError as exc:
        raise _rule(list(exc.errors)) from None
    canonical = _without_nulls(json.loads(configured.canonical_json(config)))
    return {"type": canonical.pop("type"), **canonical}


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _task(value: Any) -> Any:
    if isinstance(value, str):
        if value not in TASK_TYPES:
            raise _wrong(f"unknown task family {shown(value)}; the built-in ones: {', '.join(TASK_TYPES)}")
        return value
    if isinstance(value, dict):
        return _check_task_mapping(value)
    raise _wrong(f"expected a built-in family's name or a mapping (a configured task type), got {shown(value)}")


QUOTA_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 0}, {"enum": [NONE]}, {"type": "null"}]}
MOMENT_SCHEMA = {
    "anyOf": [{"type": "string", "pattern": f"^{MOMENT.pattern}$"}, {"enum": [NONE]}, {"type": "null"}],
    "description": 'ISO 8601: a date and time (with a zone, else UTC), a date alone (its midnight UTC), or "none".',
}


def _field_key(value: Any) -> Any:
    if not isinstance(value, str) or not FIELD_KEY.fullmatch(value):
        raise _wrong(
            "expected a field key (a lower-case letter, then letters, digits or underscores; at most 64), "
            f"got {shown(value)}"
        )
    return value


def _column_key(value: Any) -> Any:
    if not isinstance(value, str) or not COLUMN_KEY.fullmatch(value):
        raise _wrong(f"expected a column key `subset:metric` like all:accuracy, got {shown(value)}")
    return value


FieldKey = Annotated[str, BeforeValidator(_field_key), _schema({"type": "string", "pattern": f"^{FIELD_KEY.pattern}$"})]


def _track_name(value: Any) -> Any:
    if not isinstance(value, str) or not TRACK_NAME.fullmatch(value):
        raise _wrong(
            "expected a track name (a lower-case letter, then letters, digits or hyphens; at most 40), "
            f"got {shown(value)}"
        )
    return value


TrackName = Annotated[
    str, BeforeValidator(_track_name), _schema({"type": "string", "pattern": f"^{TRACK_NAME.pattern}$"})
]
ColumnKey = Annotated[
    str, BeforeValidator(_column_key), _schema({"type": "string", "pattern": f"^{COLUMN_KEY.pattern}$"})
]
Slug = Annotated[str, BeforeValidator(_slug), _schema({"type": "string", "pattern": f"^{SLUG.pattern}$"})]
Sha256 = Annotated[str, BeforeValidator(_sha256), _schema({"type": "string", "pattern": f"^{SHA256.pattern}$"})]
RelativePath = Annotated[
    str, BeforeValidator(_relative_path), _schema({"type": "string", "minLength": 1, "maxLength": MAX_PATH})
]
Quota = Annotated[int | None, BeforeValidator(_quota), _schema(QUOTA_SCHEMA)]
Count = Annotated[int, BeforeValidator(_count), _schema({"type": "integer", "minimum": 0})]
Moment = Annotated[datetime | None, BeforeValidator(_moment), _schema(MOMENT_SCHEMA)]
Day = Annotated[
    date | None,
    BeforeValidator(_day),
    _schema({"anyOf": [{"type": "string", "pattern": f"^{DAY.pattern}$"}, {"enum": [NONE]}, {"type": "null"}]}),
]
Url = Annotated[
    str | None, BeforeValidator(_url), _schema({"anyOf": [{"type": "string", "format": "uri"}, {"type": "null"}]})
]
Percentage = Annotated[float, BeforeValidator(_percentage), _schema({"type": "number", "minimum": 0, "maximum": 100})]
Sealed = Annotated[float, BeforeValidator(_sealed), _schema({"type": "number", "minimum": 0, "maximum": MAX_FRACTION})]
Name = Annotated[str, Field(min_length=1, max_length=120)]
Task = Annotated[
    str | dict[str, Any],
    BeforeValidator(_task),
    _schema(
        {
            "anyOf": [
                {"type": "string", "enum": list(TASK_TYPES)},
                {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}},
            ],
            "description": "A built-in family's registered name, or a mapping: a configured task type.",
        }
    ),
]


# --- models ----------------------------------------------------------------------------------------------


def _by_kind(schema: dict[str, Any]) -> None:
    """A default that depends on the split's kind (public or hidden): said in words, not as one value."""
    schema.pop("default", None)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class FileRef(_Model):
    """A file of the bundle, pinned by the sha256 of its bytes as they sit in the bundle (a `.gz` is gzip,
    decompressed on reading, still pinned by the `.gz`'s bytes)."""

    file: RelativePath = Field(description="Its path inside the bundle folder, `/` between parts.")
    sha256: Sha256 = Field(description="The sha256 of the file's bytes (64 lower-case hex digits).")


class SubsetSpec(_Model):
    """A subset given as a list of identifiers (one a line)."""

    name: Name = Field(description="The subset's name, as boards and reference scores name it.")
    ids: FileRef = Field(description="The file of identifiers, one a line.")


class Policy(_Model):
    """Who may submit how often, and what they see. Each key left out takes the split's default: a public
    split full feedback and no limit, a hidden one the ladder with 5 a day and 20 a month."""

    per_day: Quota = Field(
        default=None,
        description='Scored submissions a team may make a day; "none": no limit (default: public none, hidden 5).',
        json_schema_extra=_by_kind,
    )
    per_month: Quota = Field(
        default=None,
        description='The same, a month; "none": no limit (default: public none, hidden 20).',
        json_schema_extra=_by_kind,
    )
    total: Quota = Field(
        default=None, description='The same, ever; "none": no limit (default: none).', json_schema_extra=_by_kind
    )
    rejected_per_day: Count = Field(default=50, description="Rejected (invalid) files a team may send a day.")
    feedback: Literal["full", "ladder", "none"] = Field(
        default="full",
        description="What a team sees of its scores (default: public full, hidden ladder).",
        json_schema_extra=_by_kind,
    )
    open: bool = Field(default=True, description="Whether the split accepts submissions.")
    sealed: Sealed = Field(
        default=0.0, description=f"Hidden splits only: the share of groups sealed (0 to {MAX_FRACTION}; 0: none)."
    )


class Phase(_Model):
    """When the split takes uploads, and when its scores are planned to be revealed (UTC)."""

    opens: Moment = Field(default=None, description="Uploads are taken from then on.")
    closes: Moment = Field(
        default=None, description="Uploads are refused from then on; the final board is as it stood."
    )
    reveal: Moment = Field(
        default=None, description="The planned reveal of a hidden split's scores (shown, not acted on)."
    )

    @model_validator(mode="after")
    def _closes_after_opens(self) -> Phase:
        if self.opens is not None and self.closes is not None and self.closes <= self.opens:
            raise _rule([(("closes",), f"must be after opens ({self.opens:%Y-%m-%d %H:%M} UTC)")])
        return self


class ReferenceSpec(_Model):
    """A reference row (a paper's baseline, human performance): shown on the board, never ranked."""

    name: Annotated[str, Field(min_length=1, max_length=200)] = Field(description="What the row is called.")
    scores: dict[str, Annotated[dict[str, Percentage], Field(min_length=1)]] = Field(
        min_length=1, description="subset -> metric -> percentage, e.g. {all: {accuracy: 96.2}}."
    )
    source: Url = Field(default=None, description="Where the figures come from (an http(s) address).")
    date: Day = Field(default=None, description="When they were published, YYYY-MM-DD.")


class EntryFieldSpec(_Model):
    """An entry field: one line of the fact sheet teams fill in for each entry (zero-shot? parameters?)."""

    key: FieldKey = Field(description="Its key, as the API and exports name it (e.g. zero_shot).")
    label: Name = Field(description="What a reader sees (e.g. Zero-shot).")
    type: Literal["yesno", "choice", "integer", "text", "url"] = Field(
        description="yesno (true/false), choice (one of `choices`), integer (a whole number >= 0, in `unit`), text, "
        "url (an http(s) address)."
    )
    choices: list[Annotated[str, Field(min_length=1, max_length=80)]] | None = Field(
        default=None, max_length=50, description="A choice field's values, in order; null for the other types."
    )
    unit: Annotated[str, Field(min_length=1, max_length=40)] | None = Field(
        default=None, description='An integer field\'s unit (e.g. "parameters"); null for the other types.'
    )
    required: bool = Field(default=False, description="Needed to publish an entry.")
    column: bool = Field(default=False, description="Shown as a column of the benchmark's boards.")
    filter: bool = Field(default=False, description="Boards may be filtered by it.")

    @model_validator(mode="after")
    def _rules(self) -> EntryFieldSpec:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        if self.type == "choice":
            if not self.choices:
                problems.append((("choices",), "a choice field needs its choices"))
            elif len(set(self.choices)) != len(self.choices):
                problems.append((("choices",), "choices must be distinct"))
        elif self.choices is not None:
            problems.append((("choices",), f"only a choice field has choices (this one is {self.type})"))
        if self.unit is not None and self.type != "integer":
            problems.append((("unit",), f"only an integer field has a unit (this one is {self.type})"))
        if problems:
            raise _rule(problems)
        return self


class TrackSpec(_Model):
    """A track: a named filter over the bundle's filterable entry fields, a tab of the benchmark's boards whose
    entries are ranked among themselves."""

    name: TrackName = Field(
        description="Its name, as `?track=` names it (a lower-case letter, then letters, digits or hyphens); "
        "not `verified`, the built-in track of verified entries."
    )
    label: Name = Field(description="What a reader sees on its tab (e.g. Under 1B parameters).")
    where: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=1,
        max_length=8,
        description="Its conditions (an entry meets them all), each on a field `entry_fields` makes filterable: "
        "`field:value` (zero_shot:yes), or on an integer field `field<=N` (also >=, <, >; N as 1000000000 or 1e9).",
    )


def _name_may_be_left_out(schema: dict[str, Any]) -> None:
    schema["required"] = [key for key in schema["required"] if key != "name"]


class SplitSpec(_Model):
    """A split: its gold file, who sees what, when it takes uploads, its subsets and reference rows."""

    model_config = ConfigDict(json_schema_extra=_name_may_be_left_out)  # the slug stands in (`_defaults`)

    slug: Slug = Field(description="The split's slug (lower-case letters, digits, dashes).")
    name: Name = Field(description="Its display name; default: the slug.")
    hidden: bool = Field(
        default=False, description="A blind test: its labels and scores are never shown until the reveal."
    )
    labels: FileRef = Field(description="The gold file.")
    annotations: FileRef | None = Field(default=None, description="NLVR2's category annotations, if any.")
    choices: FileRef | None = Field(default=None, description="GQA's choices file, if any.")
    subset_field: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="A gold field whose values become subsets."
    )
    subsets: list[SubsetSpec] = Field(default=[], description="Subsets given as identifier lists.")
    policy: Policy = Field(
        default=Policy(), description="Quotas, feedback, open; see Policy for the defaults.", json_schema_extra=_by_kind
    )
    phase: Phase = Field(
        default=Phase(), description="Opening, closing and planned reveal; none by default.", json_schema_extra=_by_kind
    )
    references: list[ReferenceSpec] = Field(default=[], description="Reference rows shown on its board.")

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """The defaults that depend on other keys: the name is the slug; the policy's keys the split's kind's."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("name") is None:
            data["name"] = data.get("slug")
        policy = data.get("policy")
        if policy is None or isinstance(policy, dict):
            data["policy"] = {**(HIDDEN_POLICY if data.get("hidden") is True else PUBLIC_POLICY), **(policy or {})}
        if data.get("phase") is None:
            data["phase"] = {}
        return data

    @model_validator(mode="after")
    def _rules(self) -> SplitSpec:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        seen: dict[str, int] = {}
        for index, subset in enumerate(self.subsets):
            if subset.name in seen:
                problems.append(
                    (("subsets", index, "name"), f"{shown(subset.name)} is also subsets[{seen[subset.name]}]")
                )
            seen.setdefault(subset.name, index)
        if self.policy.sealed and not self.hidden:
            problems.append((("policy", "sealed"), "only a hidden split has a sealed part (this one is public)"))
        if problems:
            raise _rule(problems)
        return self


class Bundle(_Model):
    """A Holdout bundle (format 1): one benchmark, whole."""

    format: Literal[1] = Field(description="The format's version: 1.")
    slug: Slug = Field(description="The benchmark's slug (lower-case letters, digits, dashes).")
    name: Name = Field(description="Its display name.")
    description: Annotated[str, Field(max_length=20_000)] = Field(default="", description="A sentence or two.")
    paper_url: Url = Field(default=None, description="The paper's address.")
    task: Task = Field(description="A built-in family's name (e.g. nlvr2), or a mapping: a configured task type.")
    default_split: Slug | None = Field(default=None, description="The split the benchmark's page lands on.")
    columns: list[ColumnKey] | None = Field(
        default=None,
        max_length=60,
        description="The columns its boards show by default, in order, as `subset:metric` keys (`all:accuracy`, "
        "`genre:fiction:accuracy`); null: the task type's own choice. A visitor may still choose others.",
    )
    entry_fields: list[EntryFieldSpec] = Field(
        default=[],
        max_length=50,
        description="The fact sheet teams fill in for each entry, in the order pages show it.",
    )
    tracks: list[TrackSpec] = Field(
        default=[],
        max_length=50,
        description="Named filters over the filterable entry fields, in the order the boards show their tabs.",
    )
    splits: list[SplitSpec] = Field(min_length=1, description="The splits, in the order the app lists them.")

    @model_validator(mode="after")
    def _rules(self) -> Bundle:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        seen: dict[str, int] = {}
        for index, split in enumerate(self.splits):
            if split.slug in seen:
                problems.append((("splits", index, "slug"), f"{shown(split.slug)} is also splits[{seen[split.slug]}]"))
            seen.setdefault(split.slug, index)
        keys: dict[str, int] = {}
        for index, spec in enumerate(self.entry_fields):
            if spec.key in keys:
                problems.append(
                    (("entry_fields", index, "key"), f"{shown(spec.key)} is also entry_fields[{keys[spec.key]}]")
                )
            keys.setdefault(spec.key, index)
        names: dict[str, int] = {}
        for index, track in enumerate(self.tracks):
            if track.name in names:
                problems.append((("tracks", index, "name"), f"{shown(track.name)} is also tracks[{names[track.name]}]"))
            names.setdefault(track.name, index)
        for index, key in enumerate(self.columns or ()):
            if (self.columns or []).index(key) != index:
                problems.append((("columns", index), f"{shown(key)} is named twice"))
        if self.default_split is not None and self.default_split not in seen:
            problems.append((("default_split",), f"names no split of this bundle: {shown(self.default_split)}"))
        if problems:
            raise _rule(problems)
        return self

    def file_refs(self) -> list[tuple[tuple[str | int, ...], FileRef]]:
        """Every file the bundle names, with its key path, in the file's order."""
        found: list[tuple[tuple[str | int, ...], FileRef]] = []
        for index, split in enumerate(self.splits):
            for key in FILE_KEYS:
                ref = getattr(split, key)
                if ref is not None:
                    found.append((("splits", index, key), ref))
            for position, subset in enumerate(split.subsets):
                found.append((("splits", index, "subsets", position, "ids"), subset.ids))
        return found


FILE_KEYS = ("labels", "annotations", "choices")  # a split's keys that name a file (and each subset's `ids`)
