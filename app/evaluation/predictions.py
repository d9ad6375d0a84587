"""Parse an uploaded prediction file into an array aligned to the gold order, or raise ValidationError.

Every parse runs the same stages:
1. ``read_text``: size limit, binary content, UTF-8, byte-order mark, emptiness.
2. ``_Layout``: one numpy pass over the bytes finds every physical line, its number of fields and
   the blank lines, so each row keeps its real line number whatever pandas would count.
3. One ``pandas.read_csv`` (C engine) call on the lines that have the right number of fields.
4. Task-specific checks on the cells, then ``_align``: unknown, duplicate and missing identifiers,
   joined on identifiers through ``pandas.Index.get_indexer`` (never on row order).
Python-level loops only format problems (at most a few dozen) or handle rare layouts.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import Problem, ProblemList, ValidationError, at

BOM = b"\xef\xbb\xbf"
LABELS = ("true", "false")
IMAGES_PER_NLVR_EXAMPLE = 6
# Around a cell: whitespace, including the '\r' of CRLF files, and the quotes of files written with
# QUOTE_ALL (quoting is otherwise off, so a stray quote can never swallow the following lines).
_CELL_PADDING = " \t\r\x0b\x0c\""
_SPLIT_PREFIX = r"^[A-Za-z][A-Za-z0-9]*-"  # 'dev-', 'test-', 'hidden-' in front of an NLVR identifier
_IMAGE_EXTENSION = r"\.[A-Za-z]{2,5}$"  # '.png' (or any other image extension) after an image name
_MISSING_SHOWN = 10

VCR_ANSWER_COLUMNS = tuple(f"answer_{i}" for i in range(4))
VCR_RATIONALE_COLUMNS = tuple(f"rationale_conditioned_on_a{a}_{r}" for a in range(4) for r in range(4))
VCR_SCORE_COLUMNS = VCR_ANSWER_COLUMNS + VCR_RATIONALE_COLUMNS
VCR_COLUMNS = ("annot_id",) + VCR_SCORE_COLUMNS


def show(value: object, limit: int = 60) -> str:
    """A value quoted for a message, shortened so that one absurd cell cannot flood the page."""
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.2f} MB ({size:,} bytes)"


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_text(data: bytes, max_bytes: int | None = None) -> bytes:
    """The checks every uploaded text file passes first; returns the bytes without a byte-order mark."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValidationError(f"expected the file's bytes, got {type(data).__name__}")
    data = bytes(data)
    if max_bytes is not None and len(data) > max_bytes:
        raise ValidationError(f"file is too large: {_megabytes(len(data))}; the limit is {_megabytes(max_bytes)}")
    if data.startswith(BOM):
        data = data[len(BOM):]  # the BOM is not a line, so line numbers are unchanged
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ValidationError(
            at(_line_at(data, nul), "binary content (NUL byte); upload a plain UTF-8 text file, not a spreadsheet or archive")
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            at(_line_at(data, exc.start), f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8")
        ) from None
    if not data.strip():
        raise ValidationError("file is empty")
    return data


@dataclass
class _Layout:
    """Physical lines of a text file: byte spans, field counts, and which lines have content."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    fields: np.ndarray
    content: np.ndarray  # 0-based indices of the non-blank lines

    @classmethod
    def scan(cls, data: bytes) -> _Layout:
        arr = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(arr == 0x0A)
        starts = np.concatenate(([0], newlines + 1))
        ends = np.concatenate((newlines, [len(data)]))
        if starts[-1] == len(data):  # a final newline does not open another line
            starts, ends = starts[:-1], ends[:-1]
        commas = np.flatnonzero(arr == 0x2C)
        # Commas before the end of each line, differenced: the commas on each line.
        fields = np.diff(np.searchsorted(commas, ends), prepend=0) + 1
        has_content = np.ones(len(starts), dtype=bool)
        # Only comma-free lines can be blank; checking just those keeps the happy path loop-free.
        for i in np.flatnonzero(fields == 1).tolist():
            if not data[starts[i] : ends[i]].strip():
                has_content[i] = False
        return cls(data, starts, ends, fields, np.flatnonzero(has_content))

    def cells(self, i: int) -> list[str]:
        text = self.data[self.starts[i] : self.ends[i]].decode("utf-8")
        return [cell.strip(_CELL_PADDING) for cell in text.split(",")]

    def keep_well_formed(self, rows: np.ndarray, n_fields: int, problems: ProblemList) -> np.ndarray:
        """Rows with exactly ``n_fields`` fields; a problem for each of the others."""
        bad = self.fields[rows] != n_fields
        if bad.any():
            lines = rows + 1
            problems.add_lines(
                lines, np.flatnonzero(bad),
                lambda r: f"expected {n_fields} columns, found {int(self.fields[rows[r]])}",
            )
        return rows[~bad]

    def read(self, rows: np.ndarray, n_fields: int, dtype: object = str) -> pd.DataFrame | None:
        """The cells of ``rows`` (all with ``n_fields`` fields) as a DataFrame with columns 0..n_fields-1.

        Returns None when pandas cannot convert a cell to ``dtype``; with dtype=str it always succeeds.
        """
        if rows.size == 0:
            return pd.DataFrame({c: pd.Series([], dtype=object) for c in range(n_fields)})
        first, last = int(rows[0]), int(rows[-1])
        if last - first + 1 == rows.size:  # contiguous (the usual case): one slice, no copy per line
            chunk = self.data[self.starts[first] : self.ends[last]]
        else:
            chunk = b"\n".join(self.data[s:e] for s, e in zip(self.starts[rows].tolist(), self.ends[rows].tolist()))
        try:
            frame = pd.read_csv(
                io.BytesIO(chunk), engine="c", sep=",", header=None, names=list(range(n_fields)),
                index_col=False, dtype=dtype, na_filter=False, keep_default_na=False,
                quoting=csv.QUOTE_NONE, lineterminator="\n", skip_blank_lines=False, encoding="utf-8",
            )
        except (ValueError, OverflowError, pd.errors.ParserError):
            frame = None  # e.g. a score that is not a number; the caller looks again with dtype=str
        if frame is not None and len(frame) == rows.size:
            return frame
        if dtype is not str:
            return None
        # Defensive: pandas saw the lines differently (it never has in testing); split them in Python.
        lines = [self.data[s:e].decode("utf-8") for s, e in zip(self.starts[rows].tolist(), self.ends[rows].tolist())]
        return pd.DataFrame([line.split(",") for line in lines], columns=list(range(n_fields)), dtype=object)


def _clean(column: pd.Series) -> np.ndarray:
    return column.str.strip(_CELL_PADDING).to_numpy(dtype=object)


def _align(
    positions: np.ndarray,
    size: int,
    lines: np.ndarray,
    shown: np.ndarray,
    problems: ProblemList,
    name_of: Callable[[int], str],
    what: str = "identifier",
    hint: Callable[[int], str] = lambda row: "",
) -> None:
    """Unknown (position -1), duplicate and missing identifiers, each a problem naming lines and ids."""
    unknown = np.flatnonzero(positions < 0)
    problems.add_lines(lines, unknown, lambda r: f"unknown {what} {show(shown[r])}{hint(r)}")
    known = np.flatnonzero(positions >= 0)
    order = known[np.argsort(positions[known], kind="stable")]  # stable: first occurrence first
    ordered = positions[order]
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1]) + 1
    if repeated.size:
        run_starts = np.where(np.r_[True, ordered[1:] != ordered[:-1]], np.arange(ordered.size), 0)
        first_row = dict(zip(order[repeated].tolist(), order[np.maximum.accumulate(run_starts)[repeated]].tolist()))
        problems.add_lines(
            lines, order[repeated],
            lambda r: f"duplicate {what} {show(shown[r])} (first on line {int(lines[first_row[r]])})",
        )
    covered = np.zeros(size, dtype=bool)
    covered[positions[known]] = True
    missing = np.flatnonzero(~covered)
    if missing.size:
        names = ", ".join(show(name_of(int(i))) for i in missing[:_MISSING_SHOWN])
        more = f" and {missing.size - _MISSING_SHOWN} more" if missing.size > _MISSING_SHOWN else ""
        plural = "s" if missing.size != 1 else ""
        problems.add(Problem(None, f"missing predictions for {missing.size} {what}{plural} of {size}: {names}{more}"))


def _lookup_with_prefix(index: pd.Index, ids: np.ndarray) -> np.ndarray:
    """Gold rows of ``ids``; an id not found as written is tried again without a split prefix ('dev-')."""
    positions = index.get_indexer(ids)
    misses = np.flatnonzero(positions < 0)
    if misses.size:
        stripped = pd.Series(ids[misses], dtype=object).str.replace(_SPLIT_PREFIX, "", n=1, regex=True)
        changed = (stripped.to_numpy(dtype=object) != ids[misses])
        retried = index.get_indexer(stripped.to_numpy(dtype=object))
        positions[misses] = np.where(changed, retried, -1)
    return positions


def _looks_like_header(cells: list[str]) -> bool:
    """'identifier,prediction', 'id,label', ...: a first cell with no digit (ids have them), no label."""
    return len(cells) == 2 and cells[1].lower() not in LABELS and not any(ch.isdigit() for ch in cells[0])


def _no_rows(problems: ProblemList) -> None:
    problems.add(Problem(None, "file contains no predictions"))
    problems.raise_if_any()


def parse_binary(data: bytes, gold, *, max_bytes: int | None = None, split_prefix: bool = False) -> np.ndarray:
    """``identifier,true|false`` lines -> bool array (n,) in gold order.

    ``split_prefix``: also accept identifiers with a split prefix (NLVR 'dev-1572-0' for '1572-0').
    """
    data = read_text(data, max_bytes)
    layout = _Layout.scan(data)
    problems = ProblemList()
    rows = layout.content
    if _looks_like_header(layout.cells(int(rows[0]))):
        rows = rows[1:]
    if rows.size == 0:
        _no_rows(problems)
    rows = layout.keep_well_formed(rows, 2, problems)
    frame = layout.read(rows, 2)
    lines = rows + 1
    ids, words = _clean(frame[0]), _clean(frame[1])
    is_true, valid = _read_labels(words)
    problems.add_lines(
        lines, np.flatnonzero(~valid),
        lambda r: f"invalid prediction {show(words[r])} for {show(ids[r])}; expected true or false",
    )
    positions = _lookup_with_prefix(gold.id_index, ids) if split_prefix else gold.id_index.get_indexer(ids)
    _align(positions, gold.n, lines, ids, problems, lambda i: gold.ids[i])
    problems.raise_if_any()
    predictions = np.zeros(gold.n, dtype=bool)
    predictions[positions] = is_true
    return predictions


def _read_labels(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lowered = pd.Series(words, dtype=object).str.lower().to_numpy(dtype=object)
    is_true = lowered == "true"
    return is_true, is_true | (lowered == "false")


def parse_images(data: bytes, gold, *, max_bytes: int | None = None) -> np.ndarray:
    """NLVR image predictions, one line per image ('dev-1572-0-3.png,true') -> bool array (n, 6).

    Accepted names: with or without the split prefix and the extension; 'n-m' must be a gold example
    and k in 0..5.
    """
    data = read_text(data, max_bytes)
    layout = _Layout.scan(data)
    problems = ProblemList()
    rows = layout.content
    if _looks_like_header(layout.cells(int(rows[0]))):
        rows = rows[1:]
    if rows.size == 0:
        _no_rows(problems)
    rows = layout.keep_well_formed(rows, 2, problems)
    frame = layout.read(rows, 2)
    lines = rows + 1
    names, words = _clean(frame[0]), _clean(frame[1])
    is_true, valid = _read_labels(words)
    problems.add_lines(
        lines, np.flatnonzero(~valid),
        lambda r: f"invalid prediction {show(words[r])} for {show(names[r])}; expected true or false",
    )
    n_images = gold.n_images
    # 'dev-1572-0-3.png' -> example 'dev-1572-0' and image '3' (slicing is much faster than a regex split)
    bare = pd.Series(names, dtype=object).str.replace(_IMAGE_EXTENSION, "", n=1, regex=True)
    image = pd.Index([str(k) for k in range(n_images)]).get_indexer(bare.str[-1].to_numpy(dtype=object))
    well_named = (bare.str[-2] == "-").to_numpy() & (image >= 0)
    examples = _lookup_with_prefix(gold.id_index, bare.str[:-2].to_numpy(dtype=object))
    positions = np.where(well_named & (examples >= 0), examples * n_images + image, -1)
    _align(
        positions, gold.n * n_images, lines, names, problems,
        lambda i: f"{gold.ids[i // n_images]}-{i % n_images}", what="image",
        hint=lambda r: "" if well_named[r] else f" (expected 'n-m-k' with image number k in 0-{n_images - 1})",
    )
    problems.raise_if_any()
    predictions = np.zeros(gold.n * n_images, dtype=bool)
    predictions[positions] = is_true
    return predictions.reshape(gold.n, n_images)


def parse_vcr(data: bytes, gold, *, max_bytes: int | None = None) -> np.ndarray:
    """VCR score CSV (header + 21 columns, any order) -> int8 array (n, 5) in gold order.

    Columns of the result: argmax over answer_0..3, then for a = 0..3 the argmax over
    rationale_conditioned_on_a{a}_0..3 (all four kept, so a corrected gold answer can be rescored).
    """
    data = read_text(data, max_bytes)
    layout = _Layout.scan(data)
    problems = ProblemList()
    header_row = int(layout.content[0])
    header = [name.lower() for name in layout.cells(header_row)]
    _check_vcr_header(header, header_row + 1)
    rows = layout.content[1:]
    if rows.size == 0:
        _no_rows(problems)
    n_fields = len(header)
    rows = layout.keep_well_formed(rows, n_fields, problems)
    lines = rows + 1
    id_column = header.index("annot_id")
    score_columns = [header.index(name) for name in VCR_SCORE_COLUMNS]

    # Fast path: pandas parses the scores as floats in C. Any cell it cannot parse, or that is not
    # finite, sends us to the string path, which finds and names every bad cell.
    dtypes = {column: np.float64 for column in score_columns} | {id_column: str}
    frame = layout.read(rows, n_fields, dtype=dtypes)
    scores = None if frame is None else frame[score_columns].to_numpy(dtype=np.float64)
    if scores is None or not np.isfinite(scores).all():
        frame = layout.read(rows, n_fields)
        ids = _clean(frame[id_column])
        scores = _vcr_scores_with_problems(frame, score_columns, ids, lines, problems)
    else:
        ids = _clean(frame[id_column])
    positions = gold.id_index.get_indexer(ids)
    _align(positions, gold.n, lines, ids, problems, lambda i: gold.ids[i])
    problems.raise_if_any()

    answer = scores[:, :4].argmax(axis=1)
    rationale = scores[:, 4:].reshape(-1, 4, 4).argmax(axis=2)
    predictions = np.zeros((gold.n, 5), dtype=np.int8)
    predictions[positions, 0] = answer
    predictions[positions, 1:] = rationale
    return predictions


def _check_vcr_header(header: list[str], line: int) -> None:
    if not set(header) & set(VCR_COLUMNS):
        raise ValidationError(at(line, "expected a header line naming the columns annot_id, answer_0..answer_3 and "
                                       "rationale_conditioned_on_a0_0..rationale_conditioned_on_a3_3"))
    problems = []
    seen: set[str] = set()
    duplicates = [name for name in header if name in seen or seen.add(name)]
    if duplicates:
        problems.append(at(line, f"duplicate columns: {', '.join(show(n) for n in dict.fromkeys(duplicates))}"))
    missing = [name for name in VCR_COLUMNS if name not in seen]
    if missing:
        problems.append(at(line, f"missing columns: {', '.join(missing)} (the header must name annot_id, "
                                 "answer_0..answer_3 and rationale_conditioned_on_a0_0..a3_3)"))
    extra = [name for name in dict.fromkeys(header) if name not in VCR_COLUMNS]
    if extra:
        problems.append(at(line, f"unexpected columns: {', '.join(show(n) for n in extra)}"))
    if problems:
        raise ValidationError(problems)


def _vcr_scores_with_problems(
    frame: pd.DataFrame, score_columns: list[int], ids: np.ndarray, lines: np.ndarray, problems: ProblemList
) -> np.ndarray:
    """Scores from string cells; a problem for each cell that is not a finite number."""
    scores = np.empty((len(frame), len(score_columns)), dtype=np.float64)
    for j, (column, name) in enumerate(zip(score_columns, VCR_SCORE_COLUMNS)):
        cells = _clean(frame[column])
        values = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
        scores[:, j] = values
        problems.add_lines(
            lines, np.flatnonzero(~np.isfinite(values)),
            lambda r, cells=cells, name=name: (
                f"invalid score {show(cells[r])} in column {name} for {show(ids[r])}; expected a finite number"
            ),
        )
    return scores
