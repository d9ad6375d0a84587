"""The NLVR2 contrast sets' files: the gold file (``contrast_set_nlvr2.jsonl``, JSON lines) and the prediction
file, NLVR2's CSV with 1 and 0 allowed (read by the NLVR family's reader)."""

from __future__ import annotations

import re

import numpy as np

from app.evaluation.gold import (
    GoldSet,
    binary_format,
    groups_of,
    object_array,
    read_examples,
    scalar_fields,
)
from app.evaluation.tasks.nlvr.formats import parse_binary

# The original NLVR2 identifier and one digit, 'test1-769-1-0-1'; the group is the original.
# No comma, nor a quote first (a cell loses its quotes at its ends): else no `identifier,prediction` line of a
# prediction file could name it, the split's sample file included.
CONTRAST_IDENTIFIER = re.compile(r'([^\s,"][^\s,]*-\d+-\d+-\d+)-\d')
CONTRAST_FORMAT = binary_format(
    "identifier",
    CONTRAST_IDENTIFIER,
    "the original NLVR2 identifier and one digit, without spaces or commas nor a quote first (e.g. 'test1-769-1-0-1')",
)


def read_nlvr2_contrast(data: bytes, task: str = "nlvr2-contrast") -> GoldSet:
    """NLVR2 contrast sets (``contrast_set_nlvr2.jsonl``): 'identifier' the original NLVR2 identifier and one
    digit, 'label' true/false. The consistency group is the original example: the identifier without its last
    two characters, as the official eval.py groups (``ex['identifier'][:-2]``); the one-digit form keeps that
    the original's identifier."""
    ids, labels, records = read_examples(data, CONTRAST_FORMAT)
    groups = groups_of([identifier[:-2] for identifier in ids])
    fields = scalar_fields(records, exclude={"identifier", "label"})
    return GoldSet(task, object_array(ids), np.array(labels, dtype=bool), groups, fields)


def parse_predictions(data: bytes, gold: GoldSet, *, max_bytes: int | None = None) -> np.ndarray:
    """``identifier,prediction`` lines, the prediction true or false (any case) or 1 or 0 -> bool array (n,)."""
    return parse_binary(data, gold, max_bytes=max_bytes, digits=True)
