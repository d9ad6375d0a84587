"""What every configured task type shares: its name and pages' texts from the config, its gold file read in the
declared layout (JSON, JSON lines or CSV; identifiers, consistency groups, fields), its prediction files read
with the shared readers (predictions.py's CSV machinery, json_files' bounded JSON) and aligned to the gold
order, and the synthetic files written in the declared layout. A shape (classification.py, multiple_choice.py,
short_answer.py) says what a label is, how a prediction is stored and how it scores.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from app.evaluation import json_files
from app.evaluation.errors import Problem, ProblemList, ValidationError, at
from app.evaluation.gold import GoldSet, groups_of, object_array, scalar_fields
from app.evaluation.metrics import consistency
from app.evaluation.predictions import (
    Column,
    Layout,
    align,
    checked_text,
    lookup,
    max_line_bytes,
    max_lines_for,
    objects,
    settle,
    strip,
    strip_all,
)
from app.evaluation.subsets import PARTS, field_subsets
from app.evaluation.tasks.base import ACCURACY, Columns, Metric, TaskType, _check_declared
from app.evaluation.tasks.synthetic_files import SyntheticOptions, correct_mask
from app.evaluation.text_files import read_text, show

from .config import Classification, MultipleChoice, ShortAnswer, canonical_json

Config = Classification | MultipleChoice | ShortAnswer
_MISSING = object()
_CELLS_AT_ONCE = 8192  # cells decoded into Python strings at a time (as predictions.settle does)


def json_value_text(value: Any) -> str | None:
    """A scalar of a JSON file as text (a label, an identifier): strings stripped, whole numbers and booleans as
    JSON writes them; None for anything else (null, a fraction, an array, an object)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return None


def _identifier(value: Any) -> str | None:
    """An identifier: a non-empty string or a whole number (never a boolean)."""
    if isinstance(value, bool):
        return None
    text = json_value_text(value)
    return text or None


class ConfiguredTask(TaskType):
    """A task type built from a validated config (config.py); one object per distinct config."""

    config: Config

    def __init__(self, config: Config):
        self.config = config
        digest = hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:16]
        # The config's digest in the name: two benchmarks of different configs never share a gold set's cache entry.
        self.name = f"{config.type}-{digest}"
        self.label = config.label or config.type.replace("-", " ").capitalize()
        self.unit_noun = config.unit_noun
        grouped = config.group_by is not None
        consistency = Metric("consistency", "Consistency", "Cons.", counts=config.unit_noun)
        # Ungrouped, every example is its own unit and the unit noun names the examples ("questions").
        self.declared_metrics = (
            (ACCURACY, consistency) if grouped else (Metric("accuracy", "Accuracy", "Acc.", counts=config.unit_noun),)
        )
        self.primary_metric = "accuracy"
        self.tie_break_metric = "consistency" if grouped else None
        self.subset_metrics = ("accuracy",)
        self.default_subset_fields = None
        pattern = config.group_by.id_pattern if config.group_by else None
        self._id_pattern = re.compile(pattern) if pattern else None
        layout = config.predictions
        self.file_suffix = layout.format
        self.media_type = {"csv": "text/csv", "json": "application/json", "jsonl": "application/jsonl"}[layout.format]
        self.file_format = self._describe_file()
        self.example = self._example_lines()
        _check_declared(self)

    def __repr__(self) -> str:
        return f"<configured task {self.name}>"

    # --- what a shape says ------------------------------------------------------------------------------------

    def _gold_label(self, value: Any) -> tuple[Any, str | None]:
        """One record's label value -> (label, None), or (None, what is wrong: never the value itself)."""
        raise NotImplementedError

    def _gold_labels(self, labels: list[Any]) -> np.ndarray:
        """The labels read, as GoldSet.labels."""
        raise NotImplementedError

    def _code(self, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prediction texts (an object array of str; None: not a text) -> (stored values, valid)."""
        raise NotImplementedError

    def _prediction_json(self, value: Any) -> str | None:
        """A prediction's value in a JSON file as text; None for a value of the wrong kind."""
        return json_value_text(value)

    expected = ""  # what a valid prediction is, for messages

    def _answer_texts(self, gold_value: Any) -> tuple[str, list[str]]:
        """For synthetic files: the right answer to write for a gold label value, and wrong ones to choose from."""
        raise NotImplementedError

    def _synthetic_label(self, rng: np.random.Generator, index: int) -> Any:
        """A synthetic gold record's label value."""
        raise NotImplementedError

    # --- pages ------------------------------------------------------------------------------------------------

    def _describe_file(self) -> str:
        layout = self.config.predictions
        what = self.expected
        if layout.format == "csv":
            header = {
                "optional": f"an optional header line {layout.id},{layout.label}",
                "required": f"a header line naming the columns {layout.id} and {layout.label} (in any order; other "
                "columns are ignored)",
                "none": "no header line",
            }[layout.header]
            if layout.header == "required":
                return f"CSV: {header}, then one line per example, its {layout.label} the prediction, {what}"
            return f"CSV, one line per example: {layout.id},{layout.label} with the prediction {what}; {header}"
        if layout.format == "json":
            return (
                f'JSON: one array of {{"{layout.id}": <identifier>, "{layout.label}": <prediction>}}, one object per '
                f"example of the split, the prediction {what} (other keys are ignored)"
            )
        return (
            f'JSON lines: one object a line, {{"{layout.id}": <identifier>, "{layout.label}": <prediction>}}, one '
            f"per example of the split, the prediction {what} (other keys are ignored)"
        )

    def _example_lines(self) -> tuple[str, str, str]:
        layout = self.config.predictions
        values = [self._example_value(i) for i in range(3)]
        if layout.format == "csv":
            rows = [f"{layout.id},{layout.label}"] + [f"example-{i + 1},{values[i]}" for i in range(2)]
            if layout.header == "none":
                rows = [f"example-{i + 1},{values[i]}" for i in range(3)]
            return rows[0], rows[1], rows[2]
        objects_ = [json.dumps({layout.id: f"example-{i + 1}", layout.label: values[i]}) for i in range(3)]
        if layout.format == "json":
            return f"[{objects_[0]},", f" {objects_[1]},", f" {objects_[2]}]"
        return objects_[0], objects_[1], objects_[2]

    def _example_value(self, index: int) -> Any:
        raise NotImplementedError

    # --- gold -------------------------------------------------------------------------------------------------

    def _gold_records(self, data: bytes, problems: ProblemList) -> Iterator[tuple[int, int | None, Any]]:
        """(position, physical line or None, record) of each record of a gold file in the declared layout;
        unreadable lines are problems."""
        layout = self.config.gold
        if layout.format == "jsonl":
            text = read_text(data)
            position = 0
            for number, raw in enumerate(io.BytesIO(text), 1):
                if not raw.strip():
                    continue
                record = json_files.json_line(raw, number, problems)
                if record is json_files.INVALID:
                    continue
                yield position, number, record
                position += 1
        elif layout.format == "json":
            yield from ((i, None, record) for i, record in enumerate(self._json_records(data)))
        else:
            yield from self._csv_records(data, problems)

    def _json_records(self, data: bytes) -> Iterator[Any]:
        key = self.config.gold.records
        if key is not None:
            try:  # one record at a time where the file allows (a large gold file is never parsed whole)
                yield from json_files.stream_array(data, key)
                return
            except json_files.NotStreamable:
                pass
        document = json_files.load(data, what="gold file")
        found = document.get(key) if key is not None and isinstance(document, dict) else document
        if not isinstance(found, list):
            where = f'an object whose "{key}" is a list of records' if key else "a JSON array of records"
            raise ValidationError(f"expected {where}")
        json_files.check_unicode(data, document, "gold file")
        yield from found

    def _csv_records(self, data: bytes, problems: ProblemList) -> Iterator[tuple[int, int | None, Any]]:
        text = read_text(data).decode("utf-8")
        reader = csv.reader(io.StringIO(text, newline=""))
        header: list[str] | None = None
        position = 0
        try:
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                cells = [cell.strip() for cell in row]
                if header is None:
                    header = cells
                    if len(set(header)) != len(header):
                        raise ValidationError(at(reader.line_num, "the header names a column twice"))
                    continue
                if len(cells) != len(header):
                    problems.add(at(reader.line_num, f"expected {len(header)} columns, found {len(cells)}"))
                    continue
                yield position, reader.line_num, dict(zip(header, cells, strict=True))
                position += 1
        except csv.Error as exc:
            raise ValidationError(at(reader.line_num, f"invalid CSV ({exc})")) from None

    def read_gold(self, data: bytes) -> GoldSet:
        layout, config = self.config.gold, self.config
        problems = ProblemList()
        found: list[tuple[int | None, str]] = []  # (line, problem) of records, in order
        ids: list[str] = []
        labels: list[Any] = []
        groups: list[str] = []
        kept: list[dict[str, Any]] = []
        first: dict[str, tuple[int, int | None]] = {}  # (position, line) where each identifier was first
        numeric = layout.format != "csv"  # every identifier a JSON number so far
        group_field = config.group_by.field if config.group_by else None
        records = 0
        for position, line, record in self._gold_records(data, problems):
            records += 1
            if len(found) >= json_files.MAX_GOLD_PROBLEMS:
                break
            where = f"record {position + 1:,}" if line is None else ""

            def problem(message: str, line: int | None = line, where: str = where) -> None:
                found.append((line, f"{where}: {message}" if where else message))

            if not isinstance(record, dict):
                problem("expected an object")
                continue
            identifier = _identifier(record.get(layout.id))
            if identifier is None:
                problem(f"missing or invalid {layout.id!r} (a string or a whole number)")
                continue
            if identifier in first:
                earlier = first[identifier]
                place = f"record {earlier[0] + 1:,}" if earlier[1] is None else f"line {earlier[1]}"
                problem(f"duplicate identifier {show(identifier)} (first on {place})")
                continue
            first[identifier] = (position, line)
            numeric = numeric and type(record.get(layout.id)) is int
            label, wrong = self._gold_label(record.get(layout.label, _MISSING))
            if wrong is not None:
                problem(f"{wrong} for {show(identifier)}")
                continue
            if self._id_pattern is not None:
                match = self._id_pattern.search(identifier)
                if match is None:
                    problem(
                        f"identifier {show(identifier)} does not match group_by.id_pattern {self._id_pattern.pattern}"
                    )
                    continue
                group = "\x1f".join(part or "" for part in match.groups())
            elif group_field is not None:
                value = json_value_text(record.get(group_field))
                if value is None:
                    problem(f"missing {group_field!r} (group_by.field) for {show(identifier)}")
                    continue
                group = value
            else:
                group = identifier
            ids.append(identifier)
            labels.append(label)
            groups.append(group)
            kept.append({key: value for key, value in record.items() if not isinstance(value, (list, dict))})
        for line, message in found:
            problems.add(at(line, message) if line is not None else Problem(None, message))
        if not records:
            problems.add("gold file contains no examples")
        problems.raise_if_any()
        fields = scalar_fields(kept, exclude={layout.id, layout.label})
        del kept
        if config.gold.format == "csv":
            fields = {name: strip_all(values) for name, values in fields.items()}
        absent = [name for name in config.subset_fields if name not in fields]
        if absent:
            raise ValidationError(
                f"no example has the field {absent[0]!r} that subset_fields names (as text or a whole number)"
            )
        labels_array = self._gold_labels(labels)
        return GoldSet(self.name, object_array(ids), labels_array, groups_of(groups), fields, numeric_ids=numeric)

    def _columns(self, gold: GoldSet, scored: Any, right: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        """Accuracy (``scored(indices)``: its column on those examples, None: all) on the split and each subset;
        with groups, consistency over the examples ``right`` (k, n) on the split and on a blind test's queried
        and sealed parts (whole groups: every metric)."""
        grouped = self.tie_break_metric == "consistency"
        columns: Columns = {"all": {"accuracy": scored(None)}}
        if grouped:
            columns["all"]["consistency"] = consistency(right, gold.groups)
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {"accuracy": scored(indices)}
                if grouped and name in PARTS:
                    columns[name]["consistency"] = consistency(right[:, indices], gold.groups[indices])
        return columns

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        subsets: dict[str, np.ndarray] = {}
        for field in self.config.subset_fields:
            subsets.update(field_subsets(gold, field))
        return subsets

    # --- prediction files -------------------------------------------------------------------------------------

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        layout = self.config.predictions
        if layout.format == "csv":
            return self._parse_csv(data, gold, max_bytes)
        return self._parse_json(data, gold, max_bytes, lines_file=layout.format == "jsonl")

    def _empty(self, gold: GoldSet) -> np.ndarray:
        raise NotImplementedError

    def _parse_csv(self, data: bytes, gold: GoldSet, max_bytes: int | None) -> np.ndarray:
        layout = self.config.predictions
        problems = ProblemList()
        data, start = checked_text(data, max_bytes, max_lines_for(gold.n))
        if layout.header == "required":
            scanned = Layout.scan(data, start=start)
            if scanned.content.size == 0:
                raise ValidationError("file contains no predictions")
            head = int(scanned.content[0])
            names = [cell.lower() for cell in scanned.cells(head)]
            missing = [key for key in (layout.id, layout.label) if key.lower() not in names]
            if missing:
                raise ValidationError(
                    at(
                        head + 1,
                        f"the header line must name the columns {layout.id} and {layout.label}; "
                        f"it has no {', '.join(missing)}",
                    )
                )
            n_fields = len(names)
            limit = max_line_bytes(n_fields)
            long_lines = np.flatnonzero(scanned.ends - scanned.starts > limit)
            if long_lines.size:
                first = int(long_lines[0])
                raise ValidationError(
                    at(
                        first + 1,
                        f"line of {int(scanned.ends[first] - scanned.starts[first]):,} bytes: a line of "
                        f"this file has at most {n_fields} columns and {limit:,} bytes",
                    )
                )
            rows = scanned.keep_well_formed(scanned.content[1:], n_fields, problems)
            ids = Column.of(scanned, rows, names.index(layout.id.lower()), n_fields)
            words = Column.of(scanned, rows, names.index(layout.label.lower()), n_fields)
        else:
            scanned = Layout.scan(data, max_fields=2, start=start)
            rows = scanned.content
            header = [layout.id.lower(), layout.label.lower()]
            if layout.header == "optional" and rows.size and [c.lower() for c in scanned.cells(int(rows[0]))] == header:
                rows = rows[1:]
            if rows.size == 0:
                problems.add(Problem(None, "file contains no predictions"))
                problems.raise_if_any()
            rows = scanned.keep_well_formed(rows, 2, problems)
            ids, words = Column.pair(scanned, rows)
        if rows.size == 0 and not problems:
            problems.add(Problem(None, "file contains no predictions"))
        lines = rows + 1
        values, valid = self._code_column(words)
        problems.add_lines(
            lines,
            np.flatnonzero(~valid),
            lambda r: f"invalid prediction {show(strip(words[r]))} for {show(strip(ids[r]))}; expected {self.expected}",
        )
        positions = gold.positions_of_bytes(ids.fixed())
        misses = np.flatnonzero(positions < 0)
        if misses.size:

            def general(chunk: np.ndarray) -> np.ndarray:
                cells = ids.take(chunk)
                return lookup(gold.id_index, cells, lambda r: gold.id_index.get_indexer(pd.Index(strip_all(cells[r]))))

            settle(positions, misses, general)
        align(positions, gold.n, lines, ids, problems, lambda i: gold.ids[i])
        problems.raise_if_any()
        out = self._empty(gold)
        out[positions] = values
        return out

    def _code_column(self, words: Column) -> tuple[np.ndarray, np.ndarray]:
        """(stored values, valid) of a CSV column: each distinct spelling coded once (a column of labels has a
        few), cells too long for the fixed-width view a chunk at a time."""
        fixed = words.fixed()
        distinct, inverse = np.unique(fixed, return_inverse=True)
        texts = np.array([strip(cell.decode("utf-8")) if cell else None for cell in distinct.tolist()], dtype=object)
        coded, ok = self._code(texts)
        values, valid = coded[inverse], ok[inverse]
        del fixed, inverse
        unsettled = np.flatnonzero(~valid)
        if unsettled.size:
            lengths = words.ends - words.starts
            long_cells = unsettled[lengths[unsettled] > Column.FIXED_WIDTH_LIMIT]
            for at_ in range(0, long_cells.size, _CELLS_AT_ONCE):  # a chunk of Python strings at a time
                chunk = long_cells[at_ : at_ + _CELLS_AT_ONCE]
                values[chunk], valid[chunk] = self._code(strip_all(words.take(chunk)))
            empty = unsettled[lengths[unsettled] == 0]
            if empty.size:
                got, fine = self._code(objects([""] * empty.size))
                values[empty], valid[empty] = got, fine
        return values, valid

    def _parse_json(self, data: bytes, gold: GoldSet, max_bytes: int | None, *, lines_file: bool) -> np.ndarray:
        layout = self.config.predictions
        bound = 4 * max_lines_for(gold.n)
        problems = ProblemList()
        if lines_file:
            text = read_text(data, max_bytes, max_lines_for(gold.n))
            if json_files.value_bound(text) > bound:
                raise ValidationError(
                    "the prediction file holds more JSON values than a valid one for this split can "
                    f"(at most {bound:,})"
                )
            entries: list[Any] = []
            numbers: list[int] = []
            for number, raw in enumerate(io.BytesIO(text), 1):
                if not raw.strip():
                    continue
                entry = json_files.json_line(raw, number, problems)
                if entry is not json_files.INVALID:
                    entries.append(entry)
                    numbers.append(number)
            problems.raise_if_any()
            if not entries:
                raise ValidationError("file contains no predictions")
            json_files.check_unicode(text, entries, "prediction file")
        else:
            document = json_files.load(data, max_bytes=max_bytes, max_values=bound, what="prediction file")
            if not isinstance(document, list):
                raise ValidationError(
                    f'expected a JSON array of {{"{layout.id}": <identifier>, "{layout.label}": <prediction>}}'
                )
            json_files.check_unicode(data, document, "prediction file")
            entries = document
        names: list[str | None] = []
        texts: list[str | None] = []
        bad: list[int] = []  # entries that are not an object with an identifier and a prediction of the right kind
        for row, entry in enumerate(entries):
            if not isinstance(entry, dict):
                bad.append(row)
                names.append(None)
                texts.append(None)
                continue
            written = entry.get(layout.id)
            name = _identifier(written) if type(written) is int or not gold.numeric_ids else None
            value = self._prediction_json(entry.get(layout.label))
            names.append(name)
            texts.append(value)
            if name is None or value is None:
                bad.append(row)
        values, valid = self._code(objects(texts))  # type: ignore[arg-type]
        invalid = [row for row in np.flatnonzero(~valid).tolist() if texts[row] is not None and names[row] is not None]
        positions = gold.id_index.get_indexer(pd.Index(names, dtype=object)) if names else np.zeros(0, np.int64)
        counts = np.bincount(positions[positions >= 0], minlength=gold.n)
        if bad or invalid or (positions < 0).any() or counts.max(initial=0) > 1 or (counts == 0).any():
            lines = np.asarray(numbers if lines_file else json_files.entry_lines(data), dtype=np.int64)
            describe = self._entry_problem(entries, names, texts, lines_file, gold.numeric_ids)
            problems.add_lines(lines, np.asarray(sorted(bad + invalid), dtype=np.int64), describe)
            named = np.flatnonzero(np.asarray([name is not None for name in names], dtype=bool))
            if lines_file:
                align(
                    positions[named],
                    gold.n,
                    lines[named],
                    objects([names[r] for r in named.tolist()]),
                    problems,
                    lambda i: gold.ids[i],
                )
            else:
                json_files.entry_problems(
                    problems,
                    positions[named],
                    gold.n,
                    lines[named],
                    [names[r] for r in named.tolist()],
                    lambda i: str(gold.ids[i]),
                    layout.id,
                )
            problems.raise_if_any()
        out = self._empty(gold)
        out[positions] = values
        return out

    def _entry_problem(
        self, entries: list[Any], names: list[str | None], texts: list[str | None], lines_file: bool, numeric_ids: bool
    ) -> Any:
        layout = self.config.predictions

        def describe(row: int) -> str:
            where = "" if lines_file else f"entry {row + 1:,}: "
            entry = entries[row]
            if not isinstance(entry, dict):
                return f"{where}expected an object with {layout.id} and {layout.label}"
            if names[row] is None:
                kind = "a whole number" if numeric_ids else "a string or a whole number"
                return f"{where}{layout.id} must be {kind}, not {show(entry.get(layout.id))}"
            if texts[row] is None:
                return (
                    f"{where}{names[row]}: {layout.label} must be {self.expected}, not {show(entry.get(layout.label))}"
                )
            return f"{where}invalid prediction {show(texts[row])} for {show(names[row])}; expected {self.expected}"

        return describe

    # --- synthetic files --------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        """A gold file in the declared layout: identifiers <split>-<group>-<member> (groups of four), the
        group_by field 'g<group>', each subset field one of three values, labels the shape's."""
        rng = np.random.default_rng(seed)
        config, layout = self.config, self.config.gold
        records = []
        for i in range(size):
            identifier = f"{split}-{i // 4}-{i % 4}"
            if self._id_pattern is not None and self._id_pattern.search(identifier) is None:
                raise ValueError(f"synthetic identifiers such as {identifier!r} do not match group_by.id_pattern")
            record: dict[str, Any] = {layout.id: identifier, layout.label: self._synthetic_label(rng, i)}
            if config.group_by is not None and config.group_by.field is not None:
                record[config.group_by.field] = f"g{i // 4}"
            for field in config.subset_fields:
                record[field] = ("a", "b", "c")[int(rng.integers(3))]
            records.append(record)
        return _write(
            records,
            layout.format,
            list(records[0]) if records else [layout.id, layout.label],
            records_key=layout.records,
        )

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """Each prediction right with probability ``accuracy`` (a consistency group sharing one draw with
        probability ``group_correlation``), else one of the wrong answers the shape offers."""
        rng = np.random.default_rng(options.seed)
        parsed = self.read_gold(gold)
        layout = self.config.gold
        raw = {
            _identifier(record.get(layout.id)): record.get(layout.label)
            for _, _, record in self._gold_records(gold, ProblemList())
        }
        right = correct_mask(rng, options.accuracy, parsed.groups, options.group_correlation)
        answers = []
        for identifier, is_right in zip(parsed.ids.tolist(), right.tolist(), strict=True):
            good, wrong = self._answer_texts(raw[identifier])
            answers.append(good if is_right or not wrong else wrong[int(rng.integers(len(wrong)))])
        return self._predictions_file(parsed.ids.tolist(), answers, options.header, options.shuffle, rng)

    def synthetic_constant(
        self, gold: bytes, *, header: bool = False, shuffle: bool = False, split: str = "dev", seed: int = 0
    ) -> bytes:
        parsed = self.read_gold(gold)
        value = self._example_value(0)
        return self._predictions_file(
            parsed.ids.tolist(), [value] * parsed.n, header, shuffle, np.random.default_rng(seed)
        )

    def sample(self, gold: GoldSet) -> bytes:
        value = self._example_value(0)
        return self._predictions_file(gold.ids.tolist(), [value] * gold.n, False, False, None)

    def _predictions_file(
        self, ids: list[str], values: list[Any], header: bool, shuffle: bool, rng: np.random.Generator | None
    ) -> bytes:
        layout = self.config.predictions
        order = rng.permutation(len(ids)).tolist() if shuffle and rng is not None else range(len(ids))
        records = [{layout.id: _json_id(ids[i]), layout.label: values[i]} for i in order]
        if layout.format == "csv":
            with_header = layout.header == "required" or (layout.header == "optional" and header)
            rows = [f"{layout.id},{layout.label}"] if with_header else []
            rows.extend(f"{record[layout.id]},{record[layout.label]}" for record in records)
            return ("\n".join(rows) + "\n").encode("utf-8") if rows else b""
        return _write(records, layout.format, [layout.id, layout.label])


def _json_id(identifier: str) -> str | int:
    """An identifier as a JSON file writes it: a whole number as a number (VQA's question ids), else a string."""
    return int(identifier) if identifier.isdigit() and str(int(identifier)) == identifier else identifier


def _write(records: list[dict[str, Any]], format: str, columns: list[str], records_key: str | None = None) -> bytes:
    if format == "jsonl":
        return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")
    if format == "json":
        document: Any = {records_key: records} if records_key else records
        return json.dumps(document, ensure_ascii=False).encode("utf-8")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[record.get(column, "") for column in columns] for record in records])
    return out.getvalue().encode("utf-8")
