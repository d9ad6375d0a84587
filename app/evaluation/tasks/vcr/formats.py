"""VCR's gold file (the annotations, JSON lines); predictions are a CSV of scores, read by the shared CSV reader
(app/evaluation/predictions.py, parse_vcr)."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

import numpy as np

from app.evaluation.gold import GoldSet, LineFormat, Record, object_array, read_examples, scalar_fields

VCR_LABELS = ("answer_label", "rationale_label")


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
