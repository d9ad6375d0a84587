"""Subsets of a split, as sorted int32 arrays of example indices (gold order).

- field subsets: one per distinct value of a gold field ('region:west');
- category subsets: sentences annotated with categories, the format of NLVR2's annotated dev sentences
  ('category:hard-cardinality'), for a split of any family;
- identifier files: any list of example identifiers a maintainer uploads;
- a blind test's queried and sealed parts (made in sealed.py), whole groups each.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from .errors import Problem, ProblemList, ValidationError, at
from .gold import GoldSet, LazyFields
from .text_files import read_text, show

_BULLETS = ("* ", "- ")

# The subsets a blind test's split is cut into (sealed.py): scored with every metric, as whole groups.
QUERIED = "queried"
SEALED = "sealed"
PARTS = (QUERIED, SEALED)


def _indices(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask).astype(np.int32)


def field_subsets(gold: GoldSet, field: str) -> dict[str, np.ndarray]:
    """'<field>:<value>' -> examples with that value, for every non-empty value of a gold field."""
    if field not in gold.fields:
        available = ", ".join(sorted(gold.fields)) or "none"
        raise ValueError(f"unknown subset field {field!r}; the gold file's fields are: {available}")
    coded = gold.fields.coded(field) if isinstance(gold.fields, LazyFields) else None
    if coded is None:
        codes, values = pd.factorize(gold.fields[field], sort=True)
    else:  # the distinct values sorted as factorize sorts them, without a string made for every row
        found, distinct = coded
        order = np.argsort(distinct, kind="stable")
        renumbered = np.empty(len(order), dtype=np.int64)
        renumbered[order] = np.arange(len(order))
        codes, values = renumbered[np.asarray(found, dtype=np.intp)], distinct[order]
    order = np.argsort(codes, kind="stable")  # stable: ascending indices within each value
    bounds = np.searchsorted(codes[order], np.arange(len(values) + 1))
    return {
        f"{field}:{value}": order[bounds[j] : bounds[j + 1]].astype(np.int32)
        for j, value in enumerate(values.tolist())
        if str(value) != ""
    }


def slug(name: str) -> str:
    """'hard cardinality' -> 'hard-cardinality'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def parse_category_annotations(data: bytes) -> dict[str, list[str]]:
    """The NLVR2 annotated-sentences file -> sentence -> category names.

    Blocks are separated by blank lines: the sentence, then one line per category starting with
    '* ' or '- '. A sentence that appears in several blocks gets the union of their categories.
    """
    text = read_text(data).decode("utf-8")
    problems = ProblemList()
    annotations: dict[str, list[str]] = {}
    sentence: str | None = None
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line:
            sentence = None
            continue
        is_category = line.startswith(_BULLETS) or line in ("*", "-")
        if sentence is None:
            if is_category:
                problems.add(at(number, f"category line {show(line)} has no sentence above it"))
            else:
                sentence = line
                annotations.setdefault(sentence, [])
            continue
        if not is_category:
            problems.add(
                at(
                    number,
                    f"expected a category line starting with '* ' or '- ' after the sentence, "
                    f"found {show(line)} (separate blocks with a blank line)",
                )
            )
            continue
        category = line[1:].strip()
        if not category:
            problems.add(at(number, "empty category name"))
        elif category not in annotations[sentence]:
            annotations[sentence].append(category)
    if not annotations and not problems:
        problems.add(Problem(None, "the annotation file contains no sentences"))
    problems.raise_if_any()
    return annotations


def category_subsets(gold: GoldSet, data: bytes) -> dict[str, np.ndarray]:
    """'category:<slug>' -> every example whose sentence (stripped) is annotated with that category."""
    annotations = parse_category_annotations(data)
    if "sentence" not in gold.fields:
        raise ValueError("category subsets need the gold field 'sentence'")
    sentences = pd.Index(pd.Series(gold.fields["sentence"], dtype=object).str.strip())
    if not sentences.isin(list(annotations)).any():
        raise ValidationError(f"none of the {len(annotations)} annotated sentences matches a sentence of this split")
    by_category: dict[str, list[str]] = {}
    for sentence, categories in annotations.items():
        for category in categories:
            by_category.setdefault(slug(category), []).append(sentence)
    subsets = {}
    for name in sorted(by_category):
        members = _indices(sentences.isin(by_category[name]))
        if members.size:
            subsets[f"category:{name}"] = members
    return subsets


def ids_subset(gold: GoldSet, data: bytes) -> np.ndarray:
    """A file of identifiers -> sorted unique example indices.

    One identifier a line, or JSON lines with 'identifier' (NLVR, NLVR2) or 'annot_id' (VCR), such
    as the official NLVR2 balanced/unbalanced files. Repeated identifiers count once.
    """
    text = read_text(data).decode("utf-8")
    problems = ProblemList()
    ids: list[str] = []
    lines: list[int] = []
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                problems.add(at(number, "invalid JSON"))
                continue
            identifier = record.get("identifier", record.get("annot_id")) if isinstance(record, dict) else None
            if isinstance(identifier, int) and not isinstance(identifier, bool):
                identifier = str(identifier)
            if not isinstance(identifier, str):
                problems.add(at(number, "JSON line has no 'identifier' or 'annot_id'"))
                continue
            line = identifier.strip()
        ids.append(line.strip('"'))
        lines.append(number)
    names = np.array(ids, dtype=object)
    positions = gold.id_index.get_indexer(pd.Index(names))
    problems.add_lines(
        np.array(lines, dtype=np.int64), np.flatnonzero(positions < 0), lambda r: f"unknown identifier {show(names[r])}"
    )
    problems.raise_if_any()
    return np.unique(positions).astype(np.int32)
