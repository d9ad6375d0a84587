"""The ``task:`` mapping of a configured task type: pydantic models (unknown keys refused), one per shape, chosen by
``type``; what pydantic cannot say (a vocabulary's duplicates, a regex's group, a key only one format has) is
checked by validators whose messages name the key.

Every string and list is capped: a config comes from a maintainer's file and ends up in the database, in cache
keys and on pages.
"""

from __future__ import annotations

import json
import re
import re._constants as sre_constants  # type: ignore[import-not-found]  # a regex parsed, to see its nesting
import re._parser as sre_parser  # type: ignore[import-not-found]  # (no public API has it)
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

Key = Annotated[str, Field(min_length=1, max_length=100)]  # a key of a gold or prediction file (a CSV column)
Format = Literal["json", "jsonl", "csv"]
MAX_LABELS = 1000
MAX_OPTIONS = 26  # answer letters A-Z
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoldLayout(_Strict):
    """How the gold file is written: one record an example, its identifier under ``id``, its label under ``label``."""

    format: Format
    id: Key
    label: Key
    # JSON only: the key of the top-level object holding the list of records (VQA v2's "annotations");
    # absent: the document is the list.
    records: Key | None = None
    # short-answer only: the label is a list of objects, each answer's text under this key (VQA v2's "answer").
    answer_key: Key | None = None

    @model_validator(mode="after")
    def _records_json_only(self) -> GoldLayout:
        if self.records is not None and self.format != "json":
            raise ValueError("records: only a json gold file has its records under a key")
        return self


class PredictionLayout(_Strict):
    """How a prediction file is written: JSON (an array of objects), JSON lines (an object a line) or CSV."""

    format: Format
    id: Key
    label: Key
    # CSV only. optional: two columns, identifier then prediction, and a first line that names them (``id,label``
    # as declared, any case) is a header; required: a first line naming the columns, found by name in any order
    # (other columns ignored); none: two columns, no header line.
    header: Literal["optional", "required", "none"] = "optional"


class GroupBy(_Strict):
    """A consistency group: the examples sharing a gold field's value, or the part of the identifier a regex
    captures (every group of the regex, together)."""

    field: Key | None = None
    id_pattern: Annotated[str, Field(min_length=1, max_length=200)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> GroupBy:
        if (self.field is None) == (self.id_pattern is None):
            raise ValueError("give exactly one of field or id_pattern")
        if self.id_pattern is not None:
            try:
                pattern = re.compile(self.id_pattern)
            except re.error as exc:
                raise ValueError(f"id_pattern: not a valid regular expression ({exc})") from None
            if pattern.groups < 1:
                raise ValueError("id_pattern: the regular expression must capture the group, e.g. '^(.+)-\\d+$'")
            if _nested_repeat(sre_parser.parse(self.id_pattern)):
                raise ValueError(
                    "id_pattern: a repetition inside a repetition (as in (a+)+) can take exponential time on a long "
                    "identifier that does not match; write it with one level of repetition"
                )
        return self


def _nested_repeat(parsed: Any, inside: bool = False) -> bool:
    """Whether a parsed regex repeats something that itself repeats (more than once each): the shape whose
    backtracking is exponential on a near-miss, searched on every identifier of every gold file read."""
    for op, arguments in parsed:
        if op in _REPEATS:
            low, high, body = arguments
            repeats = high > 1
            if (repeats and inside) or _nested_repeat(body, inside or repeats):
                return True
            continue
        for argument in arguments if isinstance(arguments, (tuple, list)) else (arguments,):
            parts = argument if isinstance(argument, list) else [argument]
            if any(isinstance(part, sre_parser.SubPattern) and _nested_repeat(part, inside) for part in parts):
                return True
    return False


class _Common(_Strict):
    label: Annotated[str, Field(min_length=1, max_length=80)] | None = None  # how pages name the type
    unit_noun: Annotated[str, Field(min_length=1, max_length=40)] = "examples"  # what a consistency group is called
    gold: GoldLayout
    predictions: PredictionLayout
    group_by: GroupBy | None = None
    subset_fields: Annotated[list[Key], Field(max_length=20)] = []

    @field_validator("subset_fields")
    @classmethod
    def _unique_fields(cls, fields: list[str]) -> list[str]:
        if len(set(fields)) != len(fields):
            raise ValueError("each field at most once")
        return fields

    @model_validator(mode="after")
    def _keys_apart(self) -> _Common:
        gold = self.gold
        if gold.id == gold.label:
            raise ValueError("gold.label: the identifier's key and the label's must differ")
        if self.predictions.id == self.predictions.label:
            raise ValueError("predictions.label: the identifier's key and the label's must differ")
        for field in self.subset_fields:
            if field in (gold.id, gold.label):
                raise ValueError(f"subset_fields: {field!r} is the gold file's identifier or label, not a field")
        if self.group_by is not None and self.group_by.field in (gold.id, gold.label):
            raise ValueError(f"group_by.field: {self.group_by.field!r} is the gold file's identifier or label")
        if gold.answer_key is not None and not isinstance(self, ShortAnswer):
            raise ValueError("gold.answer_key: only a short-answer gold file has answers as objects")
        return self


class Classification(_Common):
    type: Literal["classification"]
    labels: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=100)]], Field(min_length=2, max_length=MAX_LABELS)
    ]
    case: Literal["sensitive", "insensitive"] = "insensitive"

    @field_validator("labels")
    @classmethod
    def _vocabulary(cls, labels: list[str], info: Any) -> list[str]:
        if any(label != label.strip() or "," in label for label in labels):
            raise ValueError("a label has no spaces around it and no comma")
        return labels

    @model_validator(mode="after")
    def _distinct(self) -> Classification:
        folded = [label if self.case == "sensitive" else label.lower() for label in self.labels]
        if len(set(folded)) != len(folded):
            rule = "" if self.case == "sensitive" else " (ignoring case, as case: insensitive compares them)"
            raise ValueError(f"labels: each label at most once{rule}")
        return self


class MultipleChoice(_Common):
    type: Literal["multiple-choice"]
    options: Annotated[int, Field(ge=2, le=MAX_OPTIONS)]
    answer: Literal["index", "letter"] = "index"  # index: 0-based; letter: A, B, ... (any case)


class ShortAnswer(_Common):
    type: Literal["short-answer"]
    scoring: Literal["exact", "soft"] = "exact"
    normalise: Literal["vqa", "lower", "none"] = "none"

    @model_validator(mode="after")
    def _soft_needs_lists(self) -> ShortAnswer:
        if self.scoring == "soft" and self.gold.format == "csv":
            raise ValueError("scoring: soft scoring needs each example's annotators' answers as a list: json or jsonl")
        return self


TaskConfig = Annotated[Classification | MultipleChoice | ShortAnswer, Field(discriminator="type")]
CONFIGURED_TYPES = ("classification", "multiple-choice", "short-answer")
_ADAPTER: TypeAdapter[Classification | MultipleChoice | ShortAnswer] = TypeAdapter(TaskConfig)


class ConfigError(ValueError):
    """A ``task:`` mapping that is not a valid configured type. ``errors``: (key path below ``task``, message) of
    each problem, the path as keys and list positions (``("labels", 0)``: a bundle places it on its line);
    ``problems``: each in words, naming its path (``task.labels[0]: ...``)."""

    def __init__(self, errors: list[tuple[tuple[str | int, ...], str]]):
        self.errors = errors
        self.problems = [f"{_written(path)}: {message}" for path, message in errors]
        super().__init__("; ".join(self.problems))


def _written(path: tuple[str | int, ...]) -> str:
    return "task" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def parse(
    config: Mapping[str, Any] | Classification | MultipleChoice | ShortAnswer,
) -> Classification | MultipleChoice | ShortAnswer:
    """The validated config; ConfigError naming every bad key (``task.labels: ...``)."""
    if isinstance(config, (Classification, MultipleChoice, ShortAnswer)):
        return config
    if not isinstance(config, Mapping):
        raise ConfigError([((), f"expected a mapping or a built-in task type's name, got {type(config).__name__}")])
    try:
        return _ADAPTER.validate_python(dict(config))
    except ValidationError as exc:
        raise ConfigError([_error(error) for error in exc.errors()]) from None


_KEY_FIRST = re.compile(r"^([a-z_]+(?:\.[a-z_]+)*): ")


def _error(error: Any) -> tuple[tuple[str | int, ...], str]:
    where: tuple[str | int, ...] = tuple(error["loc"])
    if where and where[0] in CONFIGURED_TYPES:
        where = where[1:]  # the union's tag: not a key of the file
    message = str(error["msg"]).removeprefix("Value error, ")
    key = _KEY_FIRST.match(message) if error["type"] == "value_error" else None
    if key is not None:  # a model's own check names the key it is about first: "labels: ..."
        where, message = (*where, *key.group(1).split(".")), message[key.end() :]
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        where, message = ("type",), f"expected one of {', '.join(CONFIGURED_TYPES)}"
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return where, message


def canonical_json(config: Classification | MultipleChoice | ShortAnswer) -> str:
    """Every key written (defaults too), sorted: two configs that mean the same are the same text."""
    return json.dumps(config.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema() -> dict[str, Any]:
    """The JSON Schema of the ``task:`` mapping."""
    return _ADAPTER.json_schema()
