"""Gold sets (GoldSet) and the shared reader of JSON-lines gold files: a family describes its records in a
LineFormat (in its folder's ``formats.py``) and read_examples reads them into ids, labels and fields.

Gold files come from maintainers and are read once (the services keep what they parse to as a folder of arrays
every process maps: mapped_gold.py), so this is plain Python over records; json.loads per line dominates (~50 ms
of ~80 ms for the 3.7 MB NLVR2 dev file), and well-formed files take a column-wise fast path for the checks.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import json_files
from .errors import Problem, ProblemList, at
from .text_files import read_text, show

Record = dict[str, Any]  # one parsed line of a gold file


class LazyFields(Mapping[str, np.ndarray]):
    """A gold set's fields, each made on first use (a mapped gold set's text columns become Python strings only
    when something reads them). A field kept as codes (``coded``: each row's code, and a maker of the distinct
    values) gives them to field_subsets, which needs no column of strings."""

    def __init__(
        self,
        makers: dict[str, Callable[[], np.ndarray]],
        coded: dict[str, tuple[np.ndarray, Callable[[], np.ndarray]]] | None = None,
    ):
        self._makers = dict(makers)
        self._coded = dict(coded or {})
        self._made: dict[str, np.ndarray] = {}
        self._categories: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = self._makers[name]()
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)

    def coded(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(each row's code, the distinct values as an object array) of a field kept as codes; None otherwise."""
        if name not in self._coded:
            return None
        codes, categories = self._coded[name]
        made = self._categories.get(name)
        if made is None:
            made = self._categories[name] = categories()
        return codes, made

    def part(self, indices: np.ndarray) -> LazyFields:
        """The fields of the rows ``indices`` alone: those kept as codes stay so."""
        coded = {name: (np.asarray(codes)[indices], categories) for name, (codes, categories) in self._coded.items()}
        part = coded_fields(coded)
        for name in self._makers:
            if name not in coded:
                part._makers[name] = _taken(self, name, indices)
        return part

    def made(self) -> list[np.ndarray]:
        """The fields and distinct values made so far (what this process holds of them)."""
        return [*self._made.values(), *self._categories.values()]


def _taken(fields: LazyFields, name: str, indices: np.ndarray) -> Callable[[], np.ndarray]:
    return lambda: fields[name][indices]


def coded_fields(columns: dict[str, tuple[np.ndarray, Callable[[], np.ndarray]]]) -> LazyFields:
    """Fields kept as (codes, maker of the distinct values): each column of strings made on first use."""

    def column(codes: np.ndarray, categories: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
        def made() -> np.ndarray:
            values = categories()
            return values[np.asarray(codes, dtype=np.intp)] if len(values) else object_array([])

        return made

    fields = LazyFields({name: column(codes, categories) for name, (codes, categories) in columns.items()}, columns)
    return fields


@dataclass(eq=False, repr=False)
class GoldSet:
    """The labels of one split, in gold file order.

    A gold set mapped from its compact folder (mapped_gold) is made by ``lazily``: its ids (and any text column)
    become Python strings on first use, and what the lookups need instead (``int_ids``, the ids as bytes) is
    given to it whole."""

    task: str
    ids: np.ndarray  # object array of canonical identifiers
    labels: np.ndarray  # binary tasks: bool (n,); VCR: int8 (n, 2) = (answer_label, rationale_label)
    groups: np.ndarray  # int32 (n,): consistency group of each example, numbered in order of appearance
    fields: Mapping[str, np.ndarray]  # per-example strings usable for subsets (sentence, urls, region, ...)
    n_images: int = 1  # 6 for nlvr-images: each example is judged on 6 images
    # Every identifier a JSON number in the gold file (VQA v2's question ids): a JSON prediction file of a
    # configured type must write them as numbers too, as the official formats do.
    numeric_ids: bool = False

    @classmethod
    def lazily(cls, values: dict[str, Any], makers: dict[str, Callable[[], Any]], known: dict[str, Any]) -> Any:
        """A gold set of this class with the attributes ``values``, those of ``makers`` made on first use, and the
        cached properties ``known`` already worked out (``int_ids``, ``_id_bytes``)."""
        gold = cls.__new__(cls)
        gold.__dict__.update(values)
        gold.__dict__.update(known)
        gold.__dict__["_makers"] = dict(makers)
        return gold

    def part(self, indices: np.ndarray) -> GoldSet:
        """The gold set of the examples ``indices`` alone, in gold order (sealed.restrict). Ids not yet made into
        strings and fields kept as codes stay so: the part of a mapped gold set makes no string of its own."""
        indices = np.asarray(indices, dtype=np.intp)
        fields = self.fields
        if "ids" in self.__dict__ or self.int_ids is None or not isinstance(fields, LazyFields):
            return replace(
                self,
                ids=self.ids[indices],
                labels=self.labels[indices],
                groups=self.groups[indices],
                fields={name: values[indices] for name, values in fields.items()},
            )
        ints = np.asarray(self.int_ids)[indices]
        values = {spec.name: getattr(self, spec.name) for spec in dataclass_fields(self) if spec.name != "ids"}
        values.update(labels=self.labels[indices], groups=self.groups[indices], fields=fields.part(indices))
        made: GoldSet = type(self).lazily(
            values, {"ids": lambda: object_array([str(value) for value in ints.tolist()])}, {"int_ids": ints}
        )
        return made

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            # Only reached for an attribute not yet set: one ``lazily`` left to be made.
            maker = self.__dict__.get("_makers", {}).get(name)
            if maker is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            value = self.__dict__[name] = maker()
            return value

    def __repr__(self) -> str:
        # Never the labels: a GoldSet may end up in a log or a traceback.
        return (
            f"GoldSet(task={self.task!r}, n={self.n}, n_groups={self.n_groups}, "
            f"fields={sorted(self.fields)}, n_images={self.n_images})"
        )

    @property
    def n(self) -> int:
        return len(self.groups)

    def id_at(self, row: int) -> str:
        """One identifier as text, without making every identifier a Python string (a refusal names a few)."""
        if "ids" in self.__dict__ or self.int_ids is None:
            return str(self.ids[row])
        return str(int(self.int_ids[row]))

    @cached_property  # gold sets are cached per process; the count is read on every hidden-split upload
    def n_groups(self) -> int:
        return int(np.unique(self.groups).size)

    @cached_property
    def id_index(self) -> pd.Index:
        """A hash index over ids: ``id_index.get_indexer(ids)`` gives rows, -1 for unknown ids."""
        return pd.Index(self.ids, dtype=object)

    @cached_property
    def int_ids(self) -> np.ndarray | None:
        """The ids as int64 where every one is an integer written as Python writes it (VQA v2's question ids),
        else None: a results file's integers are looked up without a string made of any."""
        ids = self.ids.tolist()
        if not ids or type(ids[0]) is not str or not _INTEGER.fullmatch(ids[0]):
            return None
        try:
            ints = np.array([int(identifier) for identifier in ids], dtype=np.int64)
        except (ValueError, OverflowError):
            return None
        if any(str(value) != identifier for value, identifier in zip(ints.tolist(), ids, strict=True)):
            return None
        return ints

    @cached_property
    def int_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        """``int_ids`` sorted, and the row of each: positions_of_ints searches them (two arrays a mapped gold set
        keeps in its folder, where a hash table would be this process's own)."""
        ints = self.int_ids
        if ints is None:
            raise ValueError("the gold set's ids are not integers")
        order = np.argsort(ints, kind="stable")
        return ints[order], order

    def positions_of_ints(self, values: np.ndarray) -> np.ndarray:
        """Rows of the int64 ``values`` among ``int_ids`` (which must not be None); -1 for those not there."""
        ints = self.int_ids
        if ints is None:
            raise ValueError("the gold set's ids are not integers")
        if values.size == self.n and (values == ints).all():
            return np.arange(self.n, dtype=np.int64)  # the usual file: every id, in the gold file's order
        ordered, order = self.int_lookup
        if ordered.size == 0:
            return np.full(values.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(ordered, values), ordered.size - 1)
        return np.where(ordered[at] == values, order[at], -1).astype(np.int64)

    @cached_property
    def _id_bytes(self) -> np.ndarray:
        return np.array([identifier.encode("utf-8") for identifier in self.ids.tolist()] or [b""])

    @cached_property
    def _id_hash_index(self) -> pd.Index | None:
        if self._id_bytes.dtype.itemsize > HASHED_WIDTH:
            return None  # ids this long are left to the caller's general path
        index = pd.Index(byte_hashes(self._id_bytes))
        return index if index.is_unique else None  # two ids sharing a hash: no hash lookup for this gold set

    def positions_of_bytes(self, cells: np.ndarray) -> np.ndarray:
        """Rows of ``cells`` (a numpy bytes array, 'S<width>') that spell a gold id exactly; -1 elsewhere.

        Prediction files name every example: this settles a well-formed file in C, without making a
        Python string of any cell (a hash table over 64-bit hashes of the ids, then an exact comparison).
        """
        if self.n == 0 or cells.size == 0 or cells.dtype.itemsize > HASHED_WIDTH or self._id_hash_index is None:
            return np.full(cells.size, -1, dtype=np.int64)  # the caller's general path decides
        if cells.size == self.n and (cells == self._id_bytes).all():
            return np.arange(self.n, dtype=np.int64)  # the usual file: every id, in the gold file's order
        rows = self._id_hash_index.get_indexer(pd.Index(byte_hashes(cells)))
        # Equal hashes are not proof: compare the bytes.
        return np.where((rows >= 0) & (self._id_bytes[rows] == cells), rows, -1).astype(np.int64)

    @cached_property
    def image_index(self) -> pd.Index:
        """Keys 'n-m-k' of every image (k < n_images) in the order of the aligned predictions (n, n_images)."""
        if self.n_images == 1:
            return self.id_index
        images = np.tile(np.array([f"-{k}" for k in range(self.n_images)]), self.n)
        keys = np.strings.add(np.repeat(self.ids.astype(str), self.n_images), images)
        return pd.Index(keys.astype(object))

    @cached_property
    def index(self) -> dict[str, int]:
        return {identifier: row for row, identifier in enumerate(self.ids.tolist())}


_INTEGER = re.compile(r"-?[1-9][0-9]{0,18}|0")  # what str() of an int64 can write
# Odd 64-bit multipliers, one per 8-byte word of a cell (identifiers over 64 bytes take the general path).
HASHED_WIDTH = 64
_HASH_MULTIPLIERS = np.random.default_rng(0x601D).integers(1, 2**63, size=HASHED_WIDTH // 8, dtype=np.uint64) * 2 + 1


def byte_hashes(cells: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each cell of a numpy bytes array ('S<width>', width <= 64), the same for the
    same bytes whatever the array's width (NUL padding adds nothing)."""
    width = cells.dtype.itemsize
    words = -(-width // 8)
    if words > _HASH_MULTIPLIERS.size:
        raise ValueError(f"cells of {width} bytes are too wide to hash")
    raw = np.zeros((cells.size, words * 8), dtype=np.uint8)
    raw[:, :width] = np.ascontiguousarray(cells).view(np.uint8).reshape(cells.size, width)
    # Integer arrays wrap modulo 2**64: what a hash wants.
    hashes: np.ndarray = (raw.view("<u8") * _HASH_MULTIPLIERS[:words]).sum(axis=1, dtype=np.uint64)
    return hashes


def _numbered_lines(data: bytes) -> Iterator[tuple[int, str]]:
    """(physical line number, text) of each non-blank line, one at a time: neither the file's text nor a
    list of its lines is ever held (together they would cost twice the file; a VCR-size gold file is 25 MB).
    UTF-8 never has a newline byte inside a character, so the lines are those of the decoded text."""
    for number, raw in enumerate(io.BytesIO(data), 1):
        line = raw.decode("utf-8")
        if line.strip():
            yield number, line


def json_lines(data: bytes) -> tuple[list[Any], np.ndarray]:
    """Records of a JSON-lines file and their physical line numbers; blank lines are skipped."""
    data = read_text(data)
    numbers: list[int] = []
    records: list[Any] = []
    try:
        for number, line in _numbered_lines(data):
            records.append(_scalars(json.loads(line)))
            numbers.append(number)
    except (ValueError, RecursionError):
        pass  # find and name every bad line
    else:
        # Identifiers and fields become UTF-8 (prediction files, subset names, pages): none may be a lone surrogate.
        json_files.check_unicode(data, records, "gold file")
        return records, np.array(numbers, dtype=np.int64)
    del records
    problems = ProblemList()
    for number, line in _numbered_lines(data):
        json_files.json_line(line, number, problems)
    problems.raise_if_any()
    raise AssertionError("unreachable: a line failed to parse above")


def _scalars(record: Any) -> Any:
    """A record without its nested lists and objects (VCR's answer and rationale texts, boxes): nothing
    reads them, and dropping them line by line keeps a VCR-size gold file's parse to a fraction of the
    memory the whole parsed file would take."""
    if type(record) is not dict:
        return record
    return {key: value for key, value in record.items() if not isinstance(value, (list, dict))}


BINARY_LABEL_PROBLEM = "missing or invalid 'label' (true or false)"
_LABEL_WORDS = {"true": True, "false": False, "True": True, "False": False, "TRUE": True, "FALSE": False}


def binary_label(value: object) -> bool | None:
    """True/False from JSON booleans or 'true'/'false' in any case (NLVR2 uses 'True')."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    return None


def binary_labels(records: list[Record]) -> list[Any] | None:
    """Every record's 'label' column-wise (binary_label's fast path), None if any is not a label."""
    labels = [
        value if type(value) is bool else _LABEL_WORDS.get(value) if type(value) is str else None
        for value in (record.get("label") for record in records)
    ]
    return None if None in labels else labels


@dataclass(frozen=True)
class LineFormat:
    """What every record of a gold file must hold."""

    key: str  # the identifier's key
    pattern: re.Pattern[str]  # the identifier's form
    form: str  # ... described for messages
    label: Callable[[Record], object]  # one record's label, None if invalid
    labels: Callable[[list[Record]], list[Any] | None]  # all labels column-wise, None if any is invalid
    label_problem: str  # message for an invalid label (never echoes the value)
    required: tuple[str, ...] = ()  # string fields every record must have


def binary_format(key: str, pattern: re.Pattern[str], form: str, required: tuple[str, ...] = ()) -> LineFormat:
    """A gold file whose records' 'label' is true or false (binary_label's spellings)."""
    return LineFormat(key, pattern, form, _record_label, binary_labels, BINARY_LABEL_PROBLEM, required)


def _record_label(record: Record) -> bool | None:
    return binary_label(record.get("label"))


def read_examples(data: bytes, spec: LineFormat) -> tuple[list[str], list[Any], list[Record]]:
    """Identifiers, labels and records of a gold file, or ValidationError naming every bad line.

    A well-formed file passes column-wise checks in a few C-level passes; anything unusual goes
    through the per-record path, which accepts a little more (ids with spaces around them, labels in
    any case) and names each problem.
    """
    records, lines = json_lines(data)
    fast = _read_fast(records, spec)
    return fast if fast is not None else _read_slow(records, lines, spec)


def _read_fast(records: list[Any], spec: LineFormat) -> tuple[list[str], list[Any], list[Record]] | None:
    if not records or not all(type(record) is dict for record in records):
        return None
    ids = [record.get(spec.key) for record in records]
    if set(map(type, ids)) != {str} or len(set(ids)) != len(ids):
        return None
    if not pd.Series(ids, dtype=object).str.fullmatch(spec.pattern).all():
        return None
    for name in spec.required:
        if {type(record.get(name)) for record in records} != {str}:
            return None
    labels = spec.labels(records)
    return None if labels is None else (ids, labels, records)


def _read_slow(records: list[Any], lines: np.ndarray, spec: LineFormat) -> tuple[list[str], list[Any], list[Record]]:
    problems = ProblemList()
    ids: list[str] = []
    labels: list[Any] = []
    kept: list[Record] = []
    first_line: dict[str, int] = {}
    for record, line in zip(records, lines.tolist(), strict=True):
        if not isinstance(record, dict):
            problems.add(at(line, "expected a JSON object"))
            continue
        identifier = record.get(spec.key)
        if isinstance(identifier, int) and not isinstance(identifier, bool):
            identifier = str(identifier)
        if not isinstance(identifier, str) or not identifier.strip():
            problems.add(at(line, f"missing or invalid {spec.key!r}"))
            continue
        identifier = identifier.strip()
        if not spec.pattern.fullmatch(identifier):
            problems.add(at(line, f"identifier {show(identifier)} is not of the form {spec.form}"))
            continue
        if identifier in first_line:
            problems.add(at(line, f"duplicate identifier {show(identifier)} (first on line {first_line[identifier]})"))
            continue
        first_line[identifier] = line
        absent = [name for name in spec.required if not isinstance(record.get(name), str)]
        if absent:
            problems.add(at(line, f"missing {', '.join(repr(n) for n in absent)} for {show(identifier)}"))
            continue
        label = spec.label(record)
        if label is None:
            problems.add(at(line, f"{spec.label_problem} for {show(identifier)}"))
            continue
        ids.append(identifier)
        labels.append(label)
        kept.append(record)
    if not records:
        problems.add(Problem(None, "gold file contains no examples"))
    problems.raise_if_any()
    return ids, labels, kept


def groups_of(keys: list[str]) -> np.ndarray:
    """Consistency groups numbered in order of first appearance, one per distinct key."""
    codes, _ = pd.factorize(pd.Series(keys, dtype=object), sort=False)
    return codes.astype(np.int32)


def object_array(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def scalar_fields(records: list[Record], exclude: set[str]) -> dict[str, np.ndarray]:
    """Top-level fields whose values are all strings or integers, as strings (absent -> '').

    They can define subsets (VCR 'region'); identifiers and labels are never fields.
    """
    if not records:
        return {}
    first = list(records[0])
    names = first + sorted(set().union(*records) - set(first))
    fields = {}
    for name in names:
        if name in exclude:
            continue
        values = [record.get(name, "") for record in records]
        types = set(map(type, values))
        if types == {str}:
            fields[name] = object_array(values)
        elif types <= {str, int}:
            fields[name] = object_array([str(value) for value in values])
    return fields
