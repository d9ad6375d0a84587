"""VCR's files: the gold file (the annotations, JSON lines) and the prediction file (a CSV of scores, a header
naming its 21 columns), read with the CSV machinery every reader shares (app/evaluation/predictions.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from app.evaluation.errors import Problem, ProblemList, ValidationError, at
from app.evaluation.gold import GoldSet, LineFormat, Record, object_array, read_examples, scalar_fields
from app.evaluation.predictions import (
    Column,
    Layout,
    align,
    checked_text,
    lookup,
    max_lines_for,
    settle,
    strip,
    strip_all,
)
from app.evaluation.text_files import show

VCR_LABELS = ("answer_label", "rationale_label")
VCR_ANSWER_COLUMNS = tuple(f"answer_{i}" for i in range(4))
VCR_RATIONALE_COLUMNS = tuple(f"rationale_conditioned_on_a{a}_{r}" for a in range(4) for r in range(4))
VCR_SCORE_COLUMNS = VCR_ANSWER_COLUMNS + VCR_RATIONALE_COLUMNS
VCR_COLUMNS = ("annot_id",) + VCR_SCORE_COLUMNS


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


VCR_FORMAT = LineFormat(
    "annot_id",
    re.compile(r"\S(?:.*\S)?"),
    "a non-empty string",
    _vcr_label,
    _vcr_labels,
    "missing or invalid 'answer_label'/'rationale_label' (integers 0-3)",
)


def read_vcr(data: bytes, task: str = "vcr") -> GoldSet:
    """VCR annotations: 'annot_id', 'answer_label' and 'rationale_label' (0-3); one group per question."""
    ids, labels, records = read_examples(data, VCR_FORMAT)
    return GoldSet(
        task,
        object_array(ids),
        np.array(labels, dtype=np.int8).reshape(-1, 2),
        np.arange(len(ids), dtype=np.int32),
        scalar_fields(records, exclude={"annot_id", *VCR_LABELS}),
    )


def parse_vcr(data: bytes, gold: GoldSet, *, max_bytes: int | None = None) -> np.ndarray:
    """VCR score CSV (header + 21 columns, any order) -> int8 array (n, 5) in gold order.

    Columns of the result: argmax over answer_0..3, then for a = 0..3 the argmax over
    rationale_conditioned_on_a{a}_0..3 (all four kept, so a corrected gold answer can be rescored).
    """
    data, start = checked_text(data, max_bytes, max_lines_for(gold.n))
    layout = Layout.scan(data, max_fields=len(VCR_COLUMNS), start=start)
    problems = ProblemList()
    header_row = int(layout.content[0])
    header = [name.lower() for name in layout.cells(header_row)]
    _check_vcr_header(header, header_row + 1)
    rows = layout.content[1:]
    if rows.size == 0:
        problems.add(Problem(None, "file contains no predictions"))
        problems.raise_if_any()
    n_fields = len(header)
    rows = layout.keep_well_formed(rows, n_fields, problems)
    lines = rows + 1
    id_column = header.index("annot_id")
    score_columns = [header.index(name) for name in VCR_SCORE_COLUMNS]
    ids = Column.of(layout, rows, id_column, n_fields)

    # Fast path: pandas parses the scores as floats in C (the identifiers stay byte spans). Any cell it
    # cannot parse, or that is not finite, sends us to the string path, which finds and names every bad cell.
    frame = layout.read(rows, n_fields, dtype=dict.fromkeys(score_columns, np.float64), usecols=score_columns)
    scores = frame[score_columns].to_numpy(dtype=np.float64) if frame is not None else None
    del frame
    if scores is None or not np.isfinite(scores).all():
        scores = _vcr_cells_with_problems(layout, rows, n_fields, ids, score_columns, problems)
    positions = gold.positions_of_bytes(ids.fixed())
    misses = np.flatnonzero(positions < 0)
    if misses.size:

        def general(rows: np.ndarray) -> np.ndarray:
            cells = ids.take(rows)
            return lookup(gold.id_index, cells, lambda r: gold.id_index.get_indexer(pd.Index(strip_all(cells[r]))))

        settle(positions, misses, general)
    align(positions, gold.n, lines, ids, problems, lambda i: gold.ids[i])
    problems.raise_if_any()

    answer = scores[:, :4].argmax(axis=1)
    rationale = scores[:, 4:].reshape(-1, 4, 4).argmax(axis=2)
    predictions = np.zeros((gold.n, 5), dtype=np.int8)
    predictions[positions, 0] = answer
    predictions[positions, 1:] = rationale
    return predictions


def _check_vcr_header(header: list[str], line: int) -> None:
    if not set(header) & set(VCR_COLUMNS):
        raise ValidationError(
            at(
                line,
                "expected a header line naming the columns annot_id, answer_0..answer_3 and "
                "rationale_conditioned_on_a0_0..rationale_conditioned_on_a3_3",
            )
        )
    problems = []
    seen: set[str] = set()
    duplicates = []
    for name in header:
        if name in seen:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        problems.append(at(line, f"duplicate columns: {', '.join(show(n) for n in dict.fromkeys(duplicates))}"))
    missing = [name for name in VCR_COLUMNS if name not in seen]
    if missing:
        problems.append(
            at(
                line,
                f"missing columns: {', '.join(missing)} (the header must name annot_id, "
                "answer_0..answer_3 and rationale_conditioned_on_a0_0..a3_3)",
            )
        )
    extra = [name for name in dict.fromkeys(header) if name not in VCR_COLUMNS]
    if extra:
        problems.append(at(line, f"unexpected columns: {', '.join(show(n) for n in extra)}"))
    if problems:
        raise ValidationError(problems)


_VCR_CHUNK = 4096  # rows read as strings at a time on the slow path: bounds its Python objects


def _vcr_cells_with_problems(
    layout: Layout,
    rows: np.ndarray,
    n_fields: int,
    ids: Column,
    score_columns: list[int],
    problems: ProblemList,
) -> np.ndarray:
    """Scores from string cells, a chunk of rows at a time, to the end of the file: the refusal gives the
    true number of bad lines, and only a chunk's strings are ever held (ProblemList formats the first
    MAX_PROBLEMS and counts the rest)."""
    scores = []
    for start in range(0, rows.size, _VCR_CHUNK):
        chunk = rows[start : start + _VCR_CHUNK]
        frame = layout.read(chunk, n_fields, usecols=score_columns)
        assert frame is not None  # dtype=str always reads
        scores.append(
            _vcr_scores_with_problems(frame, partial(_shifted, ids, start), score_columns, chunk + 1, problems)
        )
        del frame
    return np.concatenate(scores) if scores else np.zeros((0, len(score_columns)), dtype=np.float64)


def _shifted(ids: Column, start: int, row: int) -> str:
    return ids[start + row]


def _vcr_scores_with_problems(
    frame: pd.DataFrame,
    id_of: Callable[[int], str],
    score_columns: list[int],
    lines: np.ndarray,
    problems: ProblemList,
) -> np.ndarray:
    """Scores from string cells; a problem for each cell that is not a finite number."""
    scores = np.empty((len(frame), len(score_columns)), dtype=np.float64)
    for j, (column, name) in enumerate(zip(score_columns, VCR_SCORE_COLUMNS, strict=True)):
        cells = strip_all(frame[column].to_numpy(dtype=object))
        values = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
        scores[:, j] = values

        def invalid(r: int, cells: np.ndarray = cells, name: str = name) -> str:
            return (
                f"invalid score {show(cells[r])} in column {name} for {show(strip(id_of(r)))}; expected a finite number"
            )

        problems.add_lines(lines, np.flatnonzero(~np.isfinite(values)), invalid)
    return scores
