"""The NLVR family's files: the gold files of NLVR2 and of NLVR (JSON lines) and their prediction files (CSV,
read by the shared CSV readers of app/evaluation/predictions.py, which the family calls)."""

from __future__ import annotations

import re

import numpy as np

from app.evaluation.gold import (
    BINARY_LABEL_PROBLEM,
    GoldSet,
    LineFormat,
    binary_label,
    binary_labels,
    groups_of,
    object_array,
    read_examples,
    scalar_fields,
)

# NLVR2 'split-set_id-pair_id-sentence_id'; the consistency group drops pair_id.
NLVR2_IDENTIFIER = re.compile(r"(\S+)-(\d+)-(\d+)-(\d+)")
# NLVR 'n-m'; the consistency group is n.
NLVR_IDENTIFIER = re.compile(r"([^\s-]+)-(\d+)")

NLVR2_FORMAT = LineFormat(
    "identifier",
    NLVR2_IDENTIFIER,
    "split-set-pair-sentence (e.g. 'dev-850-0-1')",
    lambda record: binary_label(record.get("label")),
    binary_labels,
    BINARY_LABEL_PROBLEM,
    ("sentence", "left_url", "right_url"),
)
NLVR_FORMAT = LineFormat(
    "identifier",
    NLVR_IDENTIFIER,
    "n-m (e.g. '1572-0')",
    lambda record: binary_label(record.get("label")),
    binary_labels,
    BINARY_LABEL_PROBLEM,
)


def read_nlvr2(data: bytes, task: str = "nlvr2") -> GoldSet:
    """NLVR2: 'identifier' split-set-pair-sentence, 'label' True/False, 'sentence', 'left_url', 'right_url'."""
    ids, labels, records = read_examples(data, NLVR2_FORMAT)
    # 'dev-850-0-1' -> group 'dev-850-1' (the identifier without its pair_id)
    groups = groups_of([f"{prefix}-{sentence}" for prefix, _, sentence in (i.rsplit("-", 2) for i in ids)])
    fields = scalar_fields(records, exclude={"identifier", "label"})
    return GoldSet(task, object_array(ids), np.array(labels, dtype=bool), groups, fields)


def read_nlvr(data: bytes, task: str = "nlvr-structured", n_images: int = 1) -> GoldSet:
    """NLVR: 'identifier' n-m, 'label' true/false, 'sentence' (optional); groups are the sentences n."""
    ids, labels, records = read_examples(data, NLVR_FORMAT)
    groups = groups_of([identifier.rsplit("-", 1)[0] for identifier in ids])
    fields = scalar_fields(records, exclude={"identifier", "label"})
    fields.setdefault("sentence", object_array([""] * len(ids)))
    return GoldSet(task, object_array(ids), np.array(labels, dtype=bool), groups, fields, n_images)
