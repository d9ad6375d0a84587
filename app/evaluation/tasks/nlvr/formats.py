"""The NLVR family's files: the gold files of NLVR2 and of NLVR (JSON lines) and their prediction files (CSV:
``identifier,true|false`` a line, or one line an image for NLVR over images), read with the CSV machinery every
reader shares (app/evaluation/predictions.py). The NLVR2 contrast sets read theirs with ``parse_binary`` too."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from app.evaluation.errors import ProblemList
from app.evaluation.gold import (
    GoldSet,
    binary_format,
    groups_of,
    object_array,
    read_examples,
    scalar_fields,
)
from app.evaluation.predictions import (
    Column,
    align,
    lookup,
    objects,
    settle,
    strip,
    strip_all,
    true_or_false,
    two_column_rows,
)
from app.evaluation.text_files import show

# NLVR2 'split-set_id-pair_id-sentence_id'; the consistency group drops pair_id.
NLVR2_IDENTIFIER = re.compile(r"(\S+)-(\d+)-(\d+)-(\d+)")
# NLVR 'n-m'; the consistency group is n.
NLVR_IDENTIFIER = re.compile(r"([^\s-]+)-(\d+)")
IMAGES_PER_NLVR_EXAMPLE = 6
# 'dev-', 'test-', 'hidden-' in front of an NLVR identifier; bounded, as it is spelled onto every gold key.
_SPLIT_PREFIX = r"^[A-Za-z][A-Za-z0-9]{0,15}-"
_IMAGE_EXTENSION = r"\.[A-Za-z]{2,5}$"  # '.png' (or any other image extension) after an image name
_SPLIT_PREFIX_RE = re.compile(_SPLIT_PREFIX)
_IMAGE_EXTENSION_RE = re.compile(_IMAGE_EXTENSION)

NLVR2_FORMAT = binary_format(
    "identifier",
    NLVR2_IDENTIFIER,
    "split-set-pair-sentence (e.g. 'dev-850-0-1')",
    ("sentence", "left_url", "right_url"),
)
NLVR_FORMAT = binary_format("identifier", NLVR_IDENTIFIER, "n-m (e.g. '1572-0')")


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


# --- prediction files ---------------------------------------------------------------------------------------


def parse_binary(
    data: bytes, gold: GoldSet, *, max_bytes: int | None = None, split_prefix: bool = False, digits: bool = False
) -> np.ndarray:
    """NLVR2's and NLVR's predictions, ``identifier,true|false`` lines -> bool array (n,) in gold order.

    ``split_prefix``: also accept identifiers with a split prefix (NLVR 'dev-1572-0' for '1572-0').
    ``digits``: also accept 1 for true and 0 for false (the NLVR2 contrast sets' own files).
    """
    problems = ProblemList()
    layout, rows = two_column_rows(data, max_bytes, problems, gold.n)
    lines = rows + 1
    ids, words = Column.pair(layout, rows)
    # Fast path in bytes: labels spelled exactly, identifiers exactly as in the gold file. Whatever it
    # leaves (padding, quotes, split prefixes, typos) takes the general path, cell by cell.
    is_true, valid = true_or_false(words, digits)
    expected = "true, false, 1 or 0" if digits else "true or false"
    problems.add_lines(
        lines,
        np.flatnonzero(~valid),
        lambda r: f"invalid prediction {show(strip(words[r]))} for {show(strip(ids[r]))}; expected {expected}",
    )
    positions = gold.positions_of_bytes(ids.fixed())
    misses = np.flatnonzero(positions < 0)
    if misses.size:
        index = _affixed(gold.id_index, ids[int(misses[0])], prefix=split_prefix, suffix=False)

        def general(rows: np.ndarray) -> np.ndarray:
            cells = ids.take(rows)
            return lookup(index, cells, lambda r: _identifier_positions(gold.id_index, cells[r], split_prefix))

        settle(positions, misses, general)
    spelling = ", with or without a split prefix such as dev-" if split_prefix else ""
    align(positions, gold.n, lines, ids, problems, lambda i: gold.ids[i], spelling=spelling)
    problems.raise_if_any()
    predictions = np.zeros(gold.n, dtype=bool)
    predictions[positions] = is_true
    return predictions


def parse_images(data: bytes, gold: GoldSet, *, max_bytes: int | None = None) -> np.ndarray:
    """NLVR image predictions, one line per image ('dev-1572-0-3.png,true') -> bool array (n, 6).

    Accepted names: with or without the split prefix and the extension; 'n-m' must be a gold example
    and k in 0..5.
    """
    problems = ProblemList()
    layout, rows = two_column_rows(data, max_bytes, problems, gold.n * gold.n_images)
    lines = rows + 1
    names, words = Column.pair(layout, rows)
    is_true, valid = true_or_false(words)
    problems.add_lines(
        lines,
        np.flatnonzero(~valid),
        lambda r: f"invalid prediction {show(strip(words[r]))} for {show(strip(names[r]))}; expected true or false",
    )
    n_images = gold.n_images
    well_named = np.ones(names.size, dtype=bool)  # for hints: 'n-m-k' with k in range

    def general(rows: np.ndarray, cells: np.ndarray) -> np.ndarray:
        # 'dev-1572-0-3.png' -> example 'dev-1572-0' and image '3' (slicing beats a regex split)
        bare = [_IMAGE_EXTENSION_RE.sub("", strip(cell), count=1) for cell in cells.tolist()]
        image = pd.Index([str(k) for k in range(n_images)]).get_indexer(pd.Index(objects([b[-1:] for b in bare])))
        named = np.array([b[-2:-1] == "-" for b in bare], dtype=bool) & (image >= 0)
        well_named[rows] = named
        examples = _identifier_positions(gold.id_index, objects([b[:-2] for b in bare]), split_prefix=True)
        return np.where(named & (examples >= 0), examples * n_images + image, -1)

    keys = gold.image_index
    index = _affixed(keys, names[0], prefix=True, suffix=True) if names.size else keys

    def find(rows: np.ndarray) -> np.ndarray:
        cells = names.take(rows)
        return lookup(index, cells, lambda r: general(rows[r], cells[r]))

    positions = np.full(names.size, -1, dtype=np.int64)
    settle(positions, np.arange(names.size), find)
    align(
        positions,
        gold.n * n_images,
        lines,
        names,
        problems,
        lambda i: keys[i],
        what="image",
        names="image names",
        hint=lambda r: "" if well_named[r] else f" (expected 'n-m-k' with image number k in 0-{n_images - 1})",
        spelling=", with or without a split prefix such as dev- and an extension such as .png",
    )
    problems.raise_if_any()
    predictions = np.zeros(gold.n * n_images, dtype=bool)
    predictions[positions] = is_true
    return predictions.reshape(gold.n, n_images)


def _affixed(keys: pd.Index, first: str, prefix: bool, suffix: bool) -> pd.Index:
    """``keys`` spelled like ``first``, the first identifier of a file ('dev-1572-0-3.png' for '1572-0-3').

    Files name every row the same way, so one vectorised spelling of all keys lets a single hash
    lookup resolve the whole file; rows spelled otherwise still go through the general path.
    """
    first = strip(first)
    prefixes = [""] + ([m[0] for m in [re.match(_SPLIT_PREFIX, first)] if m] if prefix else [])
    suffixes = [""] + ([m[0] for m in [re.search(_IMAGE_EXTENSION, first)] if m] if suffix else [])
    for head in prefixes:
        for tail in suffixes:
            if (head or tail) and first[len(head) : len(first) - len(tail)] in keys:
                spelled = np.strings.add(np.strings.add(head, keys.to_numpy().astype(str)), tail)
                return pd.Index(spelled.astype(object))
    return keys


def _without_prefix(index: pd.Index, ids: np.ndarray) -> np.ndarray:
    """Positions of ids written with a split prefix ('dev-1572-0' for '1572-0'); -1 where that fails."""
    stripped = objects([_SPLIT_PREFIX_RE.sub("", identifier, count=1) for identifier in ids.tolist()])
    return np.where(stripped != ids, index.get_indexer(pd.Index(stripped)), -1)


def _identifier_positions(index: pd.Index, ids: np.ndarray, split_prefix: bool) -> np.ndarray:
    """General path for identifiers: surrounding spaces or quotes, then an optional split prefix."""
    ids = strip_all(ids)
    positions = index.get_indexer(pd.Index(ids))
    if split_prefix:
        misses = np.flatnonzero(positions < 0)
        positions[misses] = _without_prefix(index, ids[misses])
    return positions
