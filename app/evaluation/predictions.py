"""What every CSV prediction reader shares: the limits of a prediction file, its lines and cells read without a
copy of the upload, true/false words, and identifiers aligned to the gold order with one way of naming what is
wrong. Each family's readers are in its folder (``app/evaluation/tasks/<family>/formats.py``) and call these.

A reader runs the same stages:
1. ``checked_text`` (``text_files.check_text``): size limit, line count, binary content, UTF-8, byte-order mark,
   emptiness.
2. ``Layout``: one numpy pass over the bytes finds every physical line, its number of fields and
   the blank lines, so each row keeps its real line number whatever pandas would count.
3. The cells of the lines that have the right number of fields: identifiers (and true|false words) as
   byte spans (``Column``), settled through a fixed-width numpy bytes view where spelled exactly as expected;
   numbers through ``pandas.read_csv`` (C engine, ``Layout.read``), a few MB of lines at a time.
4. The family's checks on the cells, then ``align``: unknown, duplicate and missing identifiers,
   joined on identifiers through ``pandas.Index.get_indexer`` (never on row order).
Python-level loops only format problems (at most a few dozen) or handle rare layouts.

Memory: the upload is never copied (no slice of it, no decoded text of it). Whatever is made in proportion
to it is made a chunk at a time: a few MB of bytes looked at, a few thousand cells decoded into Python
strings (``settle``), a few MB of lines handed to pandas; what outlives a chunk is a few numbers per line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .errors import Problem, ProblemList, ValidationError, at
from .text_files import check_text, show

LABELS = ("true", "false")
# Around a cell: whitespace, including the '\r' of CRLF files, and the quotes of files written with
# QUOTE_ALL (quoting is otherwise off, so a stray quote can never swallow the following lines).
_CELL_PADDING = ' \t\r\x0b\x0c"'
_MISSING_SHOWN = 10
_FIELD_CHUNK = 1 << 22  # bytes a field-counting step looks at: bounds its temporary arrays
_FIND_CHUNK = 1 << 20  # bytes looked at a time for a byte's offsets (8 bytes an offset found)
_READ_CHUNK = 1 << 22  # bytes of lines handed to pandas at a time: bounds its tokenizer's buffers
_CELLS_AT_ONCE = 8192  # cells decoded into Python strings at a time on the general paths
_NOT_SPACE = np.ones(256, dtype=bool)
_NOT_SPACE[list(b" \t\r\n\x0b\x0c")] = False  # what bytes.strip() removes


def max_lines_for(rows: int) -> int:
    """Physical lines a prediction file for ``rows`` expected rows may have: the rows, a header, and
    room for blank lines; anything longer is refused before its lines are looked at."""
    return 2 * rows + 1000


def max_line_bytes(n_fields: int) -> int:
    """The longest line a file of ``n_fields`` columns may have: generous for spaces, quotes and
    long float spellings, and small enough that the cells of all lines stay a few MB."""
    return 256 + 128 * n_fields


def _count_per_line(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For each line [start, end) of a file's consecutive lines (``starts``/``ends`` of every line), how
    many of its bytes ``table`` marks; temporary arrays stay within a few times _FIND_CHUNK bytes whatever
    the file's size or shape."""
    counts = np.zeros(starts.size, dtype=np.int64)
    i = 0
    while i < starts.size:
        # Lines from i whose bytes fit in one chunk (at least one line).
        j = max(int(np.searchsorted(ends, starts[i] + _FIND_CHUNK, side="right")), i + 1)
        lo, hi = int(starts[i]), int(ends[j - 1])
        if hi > lo:
            marked = table[arr[lo:hi]].view(np.uint8)
            spans = starts[i:j] - lo
            nonempty = ends[i:j] > starts[i:j]
            # reduceat sums in a copy of the chunk cast to its dtype: 4 bytes a byte (a line has < 2 GB)
            sums = np.add.reduceat(marked, np.minimum(spans, marked.size - 1), dtype=np.int32)
            counts[i:j] = np.where(nonempty, sums, 0)
        i = j
    return counts


def _positions(arr: np.ndarray, byte: int) -> np.ndarray:
    """Offsets of ``byte`` in ``arr``, found a chunk at a time (no temporary array the size of the file)."""
    found = [
        np.flatnonzero(arr[start : start + _FIELD_CHUNK] == byte) + start for start in range(0, arr.size, _FIELD_CHUNK)
    ]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _nth(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray, byte: int, k: int) -> np.ndarray:
    """For each line [start, end) (in file order, each holding more than ``k`` of ``byte``), the offset of
    its k-th (0-based) ``byte``. Lines are taken a chunk at a time, so only that chunk's offsets are ever
    held, whatever the lines between them hold."""
    found = np.empty(starts.size, dtype=np.int64)
    i = 0
    while i < starts.size:
        j = max(int(np.searchsorted(ends, starts[i] + _FIND_CHUNK, side="right")), i + 1)
        lo, hi = int(starts[i]), int(ends[j - 1])
        offsets = np.flatnonzero(arr[lo:hi] == byte)
        found[i:j] = offsets[np.searchsorted(offsets, starts[i:j] - lo) + k] + lo
        i = j
    return found


class _Spans(io.RawIOBase):
    """Byte spans of a buffer, one after the other, as a binary file: what pandas reads lines from
    without a copy of them being made."""

    def __init__(self, data: bytes, starts: np.ndarray, stops: np.ndarray):
        super().__init__()
        self._view = memoryview(data)
        self._spans = list(zip(starts.tolist(), stops.tolist(), strict=True))[::-1]  # popped from the end
        self._at = self._stop = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(out):
            if self._at >= self._stop:
                if not self._spans:
                    break
                self._at, self._stop = self._spans.pop()
            n = min(len(out) - filled, self._stop - self._at)
            out[filled : filled + n] = self._view[self._at : self._at + n]
            filled += n
            self._at += n
        return filled


_IS_COMMA = np.zeros(256, dtype=bool)
_IS_COMMA[0x2C] = True


def _fields_per_line(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    return _count_per_line(arr, starts, ends, _IS_COMMA) + 1


@dataclass
class Layout:
    """Physical lines of a text file: byte spans, field counts, and which lines have content."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    fields: np.ndarray
    content: np.ndarray  # 0-based indices of the non-blank lines

    @classmethod
    def scan(cls, data: bytes, max_fields: int | None = None, start: int = 0) -> Layout:
        """The lines of ``data`` from offset ``start`` (past a byte-order mark); with ``max_fields``, the
        first line longer than a valid line of that many columns can be is refused, naming it, before any
        cell is read."""
        arr = np.frombuffer(data, dtype=np.uint8)
        newlines = _positions(arr, 0x0A)  # bounded: check_text has checked the line count
        starts = np.concatenate(([start], newlines + 1))
        ends = np.concatenate((newlines, [len(data)]))
        if starts[-1] == len(data):  # a final newline does not open another line
            starts, ends = starts[:-1], ends[:-1]
        if max_fields is not None:
            limit = max_line_bytes(max_fields)
            long_lines = np.flatnonzero(ends - starts > limit)
            if long_lines.size:
                first = int(long_lines[0])
                opening = show(data[starts[first] : starts[first] + 40].decode("utf-8", "replace"))
                raise ValidationError(
                    at(
                        first + 1,
                        f"line of {int(ends[first] - starts[first]):,} bytes: a line of this file has at most "
                        f"{max_fields} columns and {limit:,} bytes ({opening})",
                    )
                )
        fields = _fields_per_line(arr, starts, ends)
        has_content = np.ones(len(starts), dtype=bool)
        # Only comma-free lines can be blank: usually a handful (checked one by one), but a file
        # of many must not cost a Python loop, so then look for a non-space byte a chunk at a time.
        candidates = np.flatnonzero(fields == 1)
        if candidates.size <= 64:
            for i in candidates.tolist():
                has_content[i] = bool(data[starts[i] : ends[i]].strip())
        else:
            has_content[candidates] = _count_per_line(arr, starts, ends, _NOT_SPACE)[candidates] > 0
        return cls(data, starts, ends, fields, np.flatnonzero(has_content))

    def text(self, i: int) -> str:
        return self.data[self.starts[i] : self.ends[i]].decode("utf-8").strip()

    def cells(self, i: int) -> list[str]:
        return [cell.strip(_CELL_PADDING) for cell in self.text(i).split(",")]

    def keep_well_formed(self, rows: np.ndarray, n_fields: int, problems: ProblemList) -> np.ndarray:
        """Rows with exactly ``n_fields`` fields; a problem for each of the others."""
        bad = self.fields[rows] != n_fields
        if bad.any():
            lines = rows + 1
            problems.add_lines(
                lines,
                np.flatnonzero(bad),
                lambda r: f"expected {n_fields} columns, found {int(self.fields[rows[r]])}: {show(self.text(rows[r]))}",
            )
        kept: np.ndarray = rows[~bad]
        return kept

    def read(
        self, rows: np.ndarray, n_fields: int, dtype: Any = str, usecols: list[int] | None = None
    ) -> pd.DataFrame | None:
        """The cells of ``rows`` (all with ``n_fields`` fields) as a DataFrame with columns 0..n_fields-1
        (``usecols``: only those). The lines go to pandas a block of about _READ_CHUNK bytes at a time,
        straight from the upload (``_Spans``), and a block that fails stops the reading.

        Returns None when pandas cannot convert a cell to ``dtype``; with dtype=str it always succeeds.
        """
        columns = list(range(n_fields)) if usecols is None else list(usecols)
        if rows.size == 0:
            return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
        frames = []
        ends = self.ends[rows]
        i = 0
        while i < rows.size:
            j = max(int(np.searchsorted(ends, self.starts[rows[i]] + _READ_CHUNK, side="right")), i + 1)
            frame = self._read_block(rows[i:j], n_fields, dtype, usecols)
            if frame is None:
                return None
            frames.append(frame)
            i = j
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def _read_block(
        self, rows: np.ndarray, n_fields: int, dtype: Any, usecols: list[int] | None
    ) -> pd.DataFrame | None:
        # Each line with its newline; runs of consecutive lines are one span (the whole block, usually).
        starts, stops = self.starts[rows], np.minimum(self.ends[rows] + 1, len(self.data))
        breaks = np.flatnonzero(starts[1:] != stops[:-1]) + 1
        spans = _Spans(self.data, starts[np.r_[0, breaks]], stops[np.r_[breaks - 1, rows.size - 1]])
        try:
            frame: pd.DataFrame | None = pd.read_csv(
                cast(Any, spans),  # a binary file object: pandas reads it a few hundred kB at a time
                engine="c",
                sep=",",
                header=None,
                names=list(range(n_fields)),
                usecols=usecols,
                index_col=False,
                dtype=dtype,
                na_filter=False,
                keep_default_na=False,
                quoting=csv.QUOTE_NONE,
                lineterminator="\n",
                skip_blank_lines=False,
                encoding="utf-8",
            )
        except (ValueError, OverflowError, pd.errors.ParserError):
            frame = None  # e.g. a score that is not a number; the caller looks again with dtype=str
        if frame is not None and len(frame) == rows.size:
            return frame
        if dtype is not str:
            return None
        # Defensive: pandas saw the lines differently (it never has in testing); split them in Python.
        lines = [
            self.data[s:e].decode("utf-8")
            for s, e in zip(self.starts[rows].tolist(), self.ends[rows].tolist(), strict=True)
        ]
        frame = pd.DataFrame([line.split(",") for line in lines], columns=list(range(n_fields)), dtype=object)
        return frame if usecols is None else frame[list(usecols)]


def strip(cell: str) -> str:
    """A cell without the spaces, '\\r' and quotes around it."""
    return cell.strip(_CELL_PADDING)


def objects(values: list[str]) -> np.ndarray:
    """An object array of ``values`` (str).

    The general paths clean cells with plain str methods rather than pandas' ``.str`` accessor: a Series
    and its cached accessor refer to each other, so the strings of every chunk would wait for the garbage
    collector instead of going when the chunk is done (pandas loops over object cells in Python either way).
    """
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def strip_all(cells: np.ndarray) -> np.ndarray:
    """``strip`` of every cell, as an object array."""
    return objects([cell.strip(_CELL_PADDING) for cell in cells.tolist()])


def lookup(index: pd.Index, cells: np.ndarray, general: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Positions of ``cells`` in ``index`` (-1: unknown): one hash lookup of the cells as they are,
    then ``general(rows)`` (cleaning, other spellings) for the rows, few or all, not found that way."""
    positions = index.get_indexer(pd.Index(cells))
    misses = np.flatnonzero(positions < 0)
    if misses.size:
        positions[misses] = general(misses)
    return positions


_LABEL_SPELLINGS = pd.Index(["true", "false", "True", "False", "TRUE", "FALSE"])  # even: true, odd: false


def _read_labels(words: np.ndarray, digits: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(is_true, valid) for prediction cells: true/false in any case, spaces and quotes around allowed;
    with ``digits`` also 1 (true) and 0 (false)."""
    codes = _LABEL_SPELLINGS.get_indexer(pd.Index(words))
    misses = np.flatnonzero(codes < 0)
    if misses.size:
        lowered = objects([strip(word).lower() for word in words[misses].tolist()])
        true, false = (lowered == "true"), (lowered == "false")
        if digits:
            true, false = true | (lowered == "1"), false | (lowered == "0")
        codes[misses] = np.where(true, 0, np.where(false, 1, -1))
    return (codes >= 0) & (codes % 2 == 0), codes >= 0


def align(
    positions: np.ndarray,
    size: int,
    lines: np.ndarray,
    cells: np.ndarray | Column,
    problems: ProblemList,
    name_of: Callable[[int], str],
    what: str = "identifier",
    hint: Callable[[int], str] = lambda row: "",
    spelling: str = "",
    names: str = "",
) -> None:
    """Unknown (position -1), duplicate and missing identifiers, each a problem naming lines and ids; unknown
    ones also give the refusal a hint of the split's form, its first identifier ("identifiers look like
    dev-850-0-0", then ``spelling``: other accepted spellings). ``what`` names one row's key in the messages,
    ``names`` (default ``what`` + 's') what the hint says look like the first."""
    unknown = np.flatnonzero(positions < 0)
    problems.add_lines(lines, unknown, lambda r: f"unknown {what} {show(strip(cells[r]))}{hint(r)}")
    if unknown.size and size:
        problems.hint(f"{names or what + 's'} look like {name_of(0)}{spelling}")
    known = np.flatnonzero(positions >= 0)
    counts = np.bincount(positions[known], minlength=size)
    if counts.max(initial=0) > 1:  # some identifier is repeated: find each repeat and its first line
        order = known[np.argsort(positions[known], kind="stable")]  # stable: first occurrence first
        ordered = positions[order]
        repeated = np.flatnonzero(ordered[1:] == ordered[:-1]) + 1
        run_starts = np.where(np.r_[True, ordered[1:] != ordered[:-1]], np.arange(ordered.size), 0)
        first_row = dict(
            zip(order[repeated].tolist(), order[np.maximum.accumulate(run_starts)[repeated]].tolist(), strict=True)
        )
        problems.add_lines(
            lines,
            order[repeated],
            lambda r: f"duplicate {what} {show(strip(cells[r]))} (first on line {int(lines[first_row[r]])})",
        )
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        names = ", ".join(show(name_of(int(i))) for i in missing[:_MISSING_SHOWN])
        more = f" and {missing.size - _MISSING_SHOWN:,} more" if missing.size > _MISSING_SHOWN else ""
        plural = "s" if missing.size != 1 else ""
        problems.add(
            Problem(None, f"missing predictions for {missing.size:,} {what}{plural} of {size:,}: {names}{more}")
        )


def _looks_like_header(cells: list[str]) -> bool:
    """'identifier,prediction', 'id,label', ...: a first cell with no digit (ids have them), no label."""
    return len(cells) == 2 and cells[1].lower() not in LABELS and not any(ch.isdigit() for ch in cells[0])


def checked_text(data: bytes, max_bytes: int | None, max_lines: int) -> tuple[bytes, int]:
    """(the file's bytes, where its text starts) once ``check_text`` has passed it; never a copy of bytes."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    return data, check_text(data, max_bytes, max_lines)


def two_column_rows(
    data: bytes, max_bytes: int | None, problems: ProblemList, expected_rows: int
) -> tuple[Layout, np.ndarray]:
    """The layout of an 'identifier,prediction' file and its rows with exactly two fields (header skipped)."""
    data, start = checked_text(data, max_bytes, max_lines_for(expected_rows))
    layout = Layout.scan(data, max_fields=2, start=start)
    rows = layout.content
    if _looks_like_header(layout.cells(int(rows[0]))):
        rows = rows[1:]
    if rows.size == 0:
        problems.add(Problem(None, "file contains no predictions"))
        problems.raise_if_any()
    return layout, layout.keep_well_formed(rows, 2, problems)


@dataclass
class Column:
    """One column of a file as byte spans, one per row. Cells are decoded only where the byte-level fast
    path does not settle them (a chunk of them at a time), or for a message."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray

    # Cells longer than this skip the fixed-width fast path (one absurd cell must not cost rows x its size);
    # the gold ids' hash lookup takes cells up to this width.
    FIXED_WIDTH_LIMIT = 64

    @classmethod
    def pair(cls, layout: Layout, rows: np.ndarray) -> tuple[Column, Column]:
        """(first, second) column of rows that hold exactly one comma; the second without a final '\r'."""
        arr = np.frombuffer(layout.data, dtype=np.uint8)
        starts, ends = layout.starts[rows], layout.ends[rows]
        comma = _nth(arr, starts, ends, 0x2C, 0)
        ends = ends - (arr[np.maximum(ends - 1, 0)] == 0x0D)  # CRLF: the '\r' is padding either way
        return cls(layout.data, starts, comma), cls(layout.data, comma + 1, ends)

    @classmethod
    def of(cls, layout: Layout, rows: np.ndarray, column: int, n_fields: int) -> Column:
        """Column ``column`` of rows that hold exactly ``n_fields`` fields; the last without a final '\r'."""
        arr = np.frombuffer(layout.data, dtype=np.uint8)
        starts, ends = layout.starts[rows], layout.ends[rows]
        first = starts if column == 0 else _nth(arr, starts, ends, 0x2C, column - 1) + 1
        if column == n_fields - 1:
            last = ends - (arr[np.maximum(ends - 1, 0)] == 0x0D)
        else:
            last = _nth(arr, starts, ends, 0x2C, column)
        return cls(layout.data, first, last)

    @property
    def size(self) -> int:
        return int(self.starts.size)

    def __getitem__(self, row: int) -> str:
        return self.data[int(self.starts[row]) : int(self.ends[row])].decode("utf-8")

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The decoded cells of ``rows`` as an object array of str."""
        starts, ends = self.starts[rows].tolist(), self.ends[rows].tolist()
        return np.array([self.data[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)] or [], dtype=object)

    def fixed(self) -> np.ndarray:
        """Every cell's bytes as a numpy bytes array ('S<width>'); cells over the width limit become b''
        (which matches no identifier or label, so they take the general path). Made a block of rows at a
        time, so its index matrix stays a few MB."""
        lengths = self.ends - self.starts
        width = int(min(lengths.max(initial=1), self.FIXED_WIDTH_LIMIT)) or 1
        arr = np.frombuffer(self.data, dtype=np.uint8)
        offsets = np.arange(width)
        cells = np.zeros(self.size, dtype=f"S{width}")
        step = max(_FIELD_CHUNK // (8 * width), 1)
        for lo in range(0, self.size, step):
            starts, sizes = self.starts[lo : lo + step], lengths[lo : lo + step]
            matrix = arr[np.minimum(starts[:, None] + offsets, arr.size - 1)]
            matrix[offsets >= sizes[:, None]] = 0
            matrix[sizes > width] = 0
            cells[lo : lo + step] = np.ascontiguousarray(matrix).view(f"S{width}").ravel()
        return cells


def settle(out: np.ndarray, rows: np.ndarray, work: Callable[[np.ndarray], np.ndarray]) -> None:
    """``out[rows] = work(rows)``, _CELLS_AT_ONCE rows at a time: the general paths decode cells into Python
    strings (and clean copies of them), and a file of long junk cells must not have all of them at once."""
    for k in range(0, rows.size, _CELLS_AT_ONCE):
        chunk = rows[k : k + _CELLS_AT_ONCE]
        out[chunk] = work(chunk)


def true_or_false(words: Column, digits: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(is_true, valid) of a column of true/false words (with ``digits``, 1/0 too): spelled exactly in
    bytes, else cell by cell."""
    fixed_words = words.fixed()
    is_true = (fixed_words == b"true") | (fixed_words == b"True") | (fixed_words == b"TRUE")
    valid = is_true | (fixed_words == b"false") | (fixed_words == b"False") | (fixed_words == b"FALSE")
    if digits:
        one = fixed_words == b"1"
        is_true |= one
        valid |= one | (fixed_words == b"0")
    del fixed_words
    unsettled = np.flatnonzero(~valid)
    codes = np.zeros(unsettled.size, dtype=np.int8)  # 0: false, 1: true, -1: neither
    settle(codes, np.arange(unsettled.size), lambda k: _label_codes(words.take(unsettled[k]), digits))
    is_true[unsettled], valid[unsettled] = codes == 1, codes >= 0
    return is_true, valid


def _label_codes(words: np.ndarray, digits: bool = False) -> np.ndarray:
    is_true, valid = _read_labels(words, digits)
    return np.where(valid, is_true.astype(np.int8), -1)
