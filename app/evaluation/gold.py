"""Official gold files (one JSON object a line) read into arrays: ids, labels, consistency groups, fields.

Gold files come from maintainers, are read once per process and cached by the services, so this is
plain Python over records; json.loads per line dominates (~50 ms of ~80 ms for the 3.7 MB NLVR2 dev
file), and well-formed files take a column-wise fast path for the checks.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from . import json_files
from .errors import Problem, ProblemList, at
from .text_files import read_text, show

Record = dict[str, Any]  # one parsed line of a gold file

# NLVR2 'split-set_id-pair_id-sentence_id'; the consistency group drops pair_id.
NLVR2_IDENTIFIER = re.compile(r"(\S+)-(\d+)-(\d+)-(\d+)")
# NLVR 'n-m'; the consistency group is n.
NLVR_IDENTIFIER = re.compile(r"([^\s-]+)-(\d+)")
# NLVR2 contrast sets: the original NLVR2 identifier and one digit, 'test1-769-1-0-1'; the group is the original.
# No comma, nor a quote first (a cell loses its quotes at its ends): else no `identifier,prediction` line of a
# prediction file could name it, the split's sample file included.
CONTRAST_IDENTIFIER = re.compile(r'([^\s,"][^\s,]*-\d+-\d+-\d+)-\d')
# Winoground 'id': an integer, as the official statistics read it (int() of the label's first part).
WINOGROUND_IDENTIFIER = re.compile(r"0|-?[1-9][0-9]*")
WINOGROUND_TEXTS = ("caption_0", "caption_1", "image_0", "image_1")
VCR_LABELS = ("answer_label", "rationale_label")


@dataclass(eq=False, repr=False)
class GoldSet:
    """The labels of one split, in gold file order."""

    task: str
    ids: np.ndarray  # object array of canonical identifiers
    labels: np.ndarray  # binary tasks: bool (n,); VCR: int8 (n, 2) = (answer_label, rationale_label)
    groups: np.ndarray  # int32 (n,): consistency group of each example, numbered in order of appearance
    fields: dict[str, np.ndarray]  # per-example strings usable for subsets (sentence, urls, region, ...)
    n_images: int = 1  # 6 for nlvr-images: each example is judged on 6 images

    def __repr__(self) -> str:
        # Never the labels: a GoldSet may end up in a log or a traceback.
        return (
            f"GoldSet(task={self.task!r}, n={self.n}, n_groups={self.n_groups}, "
            f"fields={sorted(self.fields)}, n_images={self.n_images})"
        )

    @property
    def n(self) -> int:
        return len(self.ids)

    @cached_property  # gold sets are cached per process; the count is read on every hidden-split upload
    def n_groups(self) -> int:
        return int(np.unique(self.groups).size)

    @cached_property
    def id_index(self) -> pd.Index:
        """A hash index over ids: ``id_index.get_indexer(ids)`` gives rows, -1 for unknown ids."""
        return pd.Index(self.ids, dtype=object)

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
        try:
            json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(at(number, f"invalid JSON ({exc.msg} at column {exc.colno})"))
        except (ValueError, RecursionError):
            problems.add(at(number, "invalid JSON"))
    problems.raise_if_any()
    raise AssertionError("unreachable: a line failed to parse above")


def _scalars(record: Any) -> Any:
    """A record without its nested lists and objects (VCR's answer and rationale texts, boxes): nothing
    reads them, and dropping them line by line keeps a VCR-size gold file's parse to a fraction of the
    memory the whole parsed file would take."""
    if type(record) is not dict:
        return record
    return {key: value for key, value in record.items() if not isinstance(value, (list, dict))}


_LABEL_WORDS = {"true": True, "false": False, "True": True, "False": False, "TRUE": True, "FALSE": False}


def _label(value: object) -> bool | None:
    """True/False from JSON booleans or 'true'/'false' in any case (NLVR2 uses 'True')."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    return None


def _binary_labels(records: list[Record]) -> list[Any] | None:
    labels = [
        value if type(value) is bool else _LABEL_WORDS.get(value) if type(value) is str else None
        for value in (record.get("label") for record in records)
    ]
    return None if None in labels else labels


def _is_choice(value: object) -> TypeGuard[int]:
    """One of VCR's four choices: an integer 0-3, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3


def _vcr_label(record: Record) -> tuple[int, int] | None:
    answer, rationale = (record.get(name) for name in VCR_LABELS)
    return (answer, rationale) if _is_choice(answer) and _is_choice(rationale) else None


def _vcr_labels(records: list[Record]) -> list[Any] | None:
    pairs = [(record.get("answer_label"), record.get("rationale_label")) for record in records]
    flat = [value for pair in pairs for value in pair]
    return pairs if set(map(type, flat)) == {int} and set(flat) <= {0, 1, 2, 3} else None


@dataclass(frozen=True)
class _Format:
    """What every record of a gold file must hold."""

    key: str  # the identifier's key
    pattern: re.Pattern[str]  # the identifier's form
    form: str  # ... described for messages
    label: Callable[[Record], object]  # one record's label, None if invalid
    labels: Callable[[list[Record]], list[Any] | None]  # all labels column-wise, None if any is invalid
    label_problem: str  # message for an invalid label (never echoes the value)
    required: tuple[str, ...] = ()  # string fields every record must have


def _read_examples(data: bytes, spec: _Format) -> tuple[list[str], list[Any], list[Record]]:
    """Identifiers, labels and records of a gold file, or ValidationError naming every bad line.

    A well-formed file passes column-wise checks in a few C-level passes; anything unusual goes
    through the per-record path, which accepts a little more (ids with spaces around them, labels in
    any case) and names each problem.
    """
    records, lines = json_lines(data)
    fast = _read_fast(records, spec)
    return fast if fast is not None else _read_slow(records, lines, spec)


def _read_fast(records: list[Any], spec: _Format) -> tuple[list[str], list[Any], list[Record]] | None:
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


def _read_slow(records: list[Any], lines: np.ndarray, spec: _Format) -> tuple[list[str], list[Any], list[Record]]:
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


_BINARY_LABEL = "missing or invalid 'label' (true or false)"
NLVR2_FORMAT = _Format(
    "identifier",
    NLVR2_IDENTIFIER,
    "split-set-pair-sentence (e.g. 'dev-850-0-1')",
    lambda record: _label(record.get("label")),
    _binary_labels,
    _BINARY_LABEL,
    ("sentence", "left_url", "right_url"),
)
NLVR_FORMAT = _Format(
    "identifier",
    NLVR_IDENTIFIER,
    "n-m (e.g. '1572-0')",
    lambda record: _label(record.get("label")),
    _binary_labels,
    _BINARY_LABEL,
)
VCR_FORMAT = _Format(
    "annot_id",
    re.compile(r"\S(?:.*\S)?"),
    "a non-empty string",
    _vcr_label,
    _vcr_labels,
    "missing or invalid 'answer_label'/'rationale_label' (integers 0-3)",
)

CONTRAST_FORMAT = _Format(
    "identifier",
    CONTRAST_IDENTIFIER,
    "the original NLVR2 identifier and one digit, without spaces or commas nor a quote first (e.g. 'test1-769-1-0-1')",
    lambda record: _label(record.get("label")),
    _binary_labels,
    _BINARY_LABEL,
)
WINOGROUND_FORMAT = _Format(
    "id",
    WINOGROUND_IDENTIFIER,
    "an integer (e.g. 0)",
    lambda record: 0,  # no label: caption_0 goes with image_0 and caption_1 with image_1
    lambda records: [0] * len(records),
    "",
    WINOGROUND_TEXTS,
)


def _groups(keys: list[str]) -> np.ndarray:
    codes, _ = pd.factorize(pd.Series(keys, dtype=object), sort=False)
    return codes.astype(np.int32)


def _object_array(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def read_nlvr2(data: bytes, task: str = "nlvr2") -> GoldSet:
    """NLVR2: 'identifier' split-set-pair-sentence, 'label' True/False, 'sentence', 'left_url', 'right_url'."""
    ids, labels, records = _read_examples(data, NLVR2_FORMAT)
    # 'dev-850-0-1' -> group 'dev-850-1' (the identifier without its pair_id)
    groups = _groups([f"{prefix}-{sentence}" for prefix, _, sentence in (i.rsplit("-", 2) for i in ids)])
    fields = scalar_fields(records, exclude={"identifier", "label"})
    return GoldSet(task, _object_array(ids), np.array(labels, dtype=bool), groups, fields)


def read_nlvr(data: bytes, task: str = "nlvr-structured", n_images: int = 1) -> GoldSet:
    """NLVR: 'identifier' n-m, 'label' true/false, 'sentence' (optional); groups are the sentences n."""
    ids, labels, records = _read_examples(data, NLVR_FORMAT)
    groups = _groups([identifier.rsplit("-", 1)[0] for identifier in ids])
    fields = scalar_fields(records, exclude={"identifier", "label"})
    fields.setdefault("sentence", _object_array([""] * len(ids)))
    return GoldSet(task, _object_array(ids), np.array(labels, dtype=bool), groups, fields, n_images)


def read_vcr(data: bytes, task: str = "vcr") -> GoldSet:
    """VCR annotations: 'annot_id', 'answer_label' and 'rationale_label' (0-3); one group per question."""
    ids, labels, records = _read_examples(data, VCR_FORMAT)
    return GoldSet(
        task,
        _object_array(ids),
        np.array(labels, dtype=np.int8).reshape(-1, 2),
        np.arange(len(ids), dtype=np.int32),
        scalar_fields(records, exclude={"annot_id", *VCR_LABELS}),
    )


def read_nlvr2_contrast(data: bytes, task: str = "nlvr2-contrast") -> GoldSet:
    """NLVR2 contrast sets (``contrast_set_nlvr2.jsonl``): 'identifier' the original NLVR2 identifier and one
    digit, 'label' true/false. The consistency group is the original example: the identifier without its last
    two characters, as the official eval.py groups (``ex['identifier'][:-2]``); the one-digit form keeps that
    the original's identifier."""
    ids, labels, records = _read_examples(data, CONTRAST_FORMAT)
    groups = _groups([identifier[:-2] for identifier in ids])
    fields = scalar_fields(records, exclude={"identifier", "label"})
    return GoldSet(task, _object_array(ids), np.array(labels, dtype=bool), groups, fields)


def read_winoground(data: bytes, task: str = "winoground") -> GoldSet:
    """Winoground ``examples.jsonl``: 'id' an integer, 'caption_0', 'caption_1', 'image_0', 'image_1'; the tags
    ('collapsed_tag', 'secondary_tag', 'num_main_preds', 'tag') become fields. There is no label (the right
    pairing is always caption_0-image_0 and caption_1-image_1): ``labels`` is an empty (n, 0) array. One group
    per example."""
    ids, _, records = _read_examples(data, WINOGROUND_FORMAT)
    return GoldSet(
        task,
        _object_array(ids),
        np.zeros((len(ids), 0), dtype=np.int8),
        np.arange(len(ids), dtype=np.int32),
        scalar_fields(records, exclude={"id"}),
    )


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
            fields[name] = _object_array(values)
        elif types <= {str, int}:
            fields[name] = _object_array([str(value) for value in values])
    return fields
