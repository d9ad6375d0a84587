"""Winoground's files: the official ``examples.jsonl`` (gold, JSON lines, no label) and a model_scores file of
JSON lines (predictions), as family.py's docstring describes them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import numpy as np

from app.evaluation import json_files
from app.evaluation.errors import Problem, ProblemList, at
from app.evaluation.gold import GoldSet, LineFormat, object_array, read_examples, scalar_fields
from app.evaluation.predictions import max_lines_for
from app.evaluation.text_files import check_text, show

# The four scores of an example, in the order predictions store them: caption i with image j.
KEYS = ("c0_i0", "c0_i1", "c1_i0", "c1_i1")
# Winoground 'id': an integer, as the official statistics read it (int() of the label's first part).
WINOGROUND_IDENTIFIER = re.compile(r"0|-?[1-9][0-9]*")
WINOGROUND_TEXTS = ("caption_0", "caption_1", "image_0", "image_1")
WINOGROUND_FORMAT = LineFormat(
    "id",
    WINOGROUND_IDENTIFIER,
    "an integer (e.g. 0)",
    lambda record: 0,  # no label: caption_0 goes with image_0 and caption_1 with image_1
    lambda records: [0] * len(records),
    "",
    WINOGROUND_TEXTS,
)
_ID_PART = re.compile(r"[+-]?[0-9]+")  # what int() of the label's first part reads (ASCII digits only)
_MISSING_SHOWN = 10
MAX_LINE_BYTES = 1024  # '{"label": "399_c1_i1", "score": -1.7976931348623157e+308}' is 58


def read_winoground(data: bytes, task: str = "winoground") -> GoldSet:
    """Winoground ``examples.jsonl``: 'id' an integer, 'caption_0', 'caption_1', 'image_0', 'image_1'; the tags
    ('collapsed_tag', 'secondary_tag', 'num_main_preds', 'tag') become fields. There is no label (the right
    pairing is always caption_0-image_0 and caption_1-image_1): ``labels`` is an empty (n, 0) array. One group
    per example."""
    ids, _, records = read_examples(data, WINOGROUND_FORMAT)
    return GoldSet(
        task,
        object_array(ids),
        np.zeros((len(ids), 0), dtype=np.int8),
        np.arange(len(ids), dtype=np.int32),
        scalar_fields(records, exclude={"id"}),
    )


def _score_value(value: object) -> float | str:
    """A score as float64, or what is wrong with it. JSON numbers only (not booleans, not strings); finite; an
    integer must be exactly a float64 (else two different scores could tie here and not in the official code)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "is not a number"
    try:
        number = float(value)
    except OverflowError:
        return "is too large"
    if number != number:
        return "is NaN; scores must be finite numbers"
    if number in (float("inf"), float("-inf")):
        return "is infinite; scores must be finite numbers"
    if isinstance(value, int) and number != value:
        return "is an integer a 64-bit float cannot hold exactly; write it as a float"
    return number


def _lines(data: bytes, start: int, problems: ProblemList) -> Iterator[tuple[int, bytes]]:
    """(physical line number, stripped bytes) of every non-blank line from ``start``; a line longer than a
    valid one can be is a problem, named with its length and never copied (nor is the file)."""
    number = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        if end - start > MAX_LINE_BYTES:
            problems.add(
                at(
                    number,
                    f"line of {end - start:,} bytes: a line holds one label and its score ({MAX_LINE_BYTES:,} at most)",
                )
            )
        else:
            text = data[start:end].strip()
            if text:
                yield number, text
        start = end + 1


def parse_scores(data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
    """An official model_scores file -> float64 (n, 4) in gold order (columns as KEYS); ValidationError naming
    the line and the label of every problem, and the labels missing."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    start = check_text(data, max_bytes, max_lines_for(4 * gold.n))
    problems = ProblemList()
    scores = np.zeros((gold.n, len(KEYS)), dtype=np.float64)
    first_line = np.zeros((gold.n, len(KEYS)), dtype=np.int64)  # 0: not seen yet
    rows = gold.index
    for number, text in _lines(data, start, problems):
        record = json_files.json_line(text, number, problems)
        if record is json_files.INVALID:
            continue
        if not isinstance(record, dict):
            problems.add(at(number, 'expected a JSON object {"label": "<id>_c<i>_i<j>", "score": <number>}'))
            continue
        label = record.get("label")
        if not isinstance(label, str):
            problems.add(at(number, "missing or invalid 'label' (a string such as '12_c0_i1')"))
            continue
        parts = label.strip().split("_")
        key = "_".join(parts[1:])
        if len(parts) != 3 or not _ID_PART.fullmatch(parts[0]) or key not in KEYS:
            problems.add(at(number, f"label {show(label)} is not of the form <id>_c<0|1>_i<0|1> (e.g. '12_c0_i1')"))
            continue
        row = rows.get(str(int(parts[0])))
        if row is None:
            problems.add(at(number, f"unknown id {show(parts[0])} in label {show(label)}"))
            continue
        column = KEYS.index(key)
        value = _score_value(record["score"]) if "score" in record else "is missing"
        if isinstance(value, str):
            shown = f" {show(json.dumps(record['score']))}" if "score" in record else ""
            problems.add(at(number, f"score{shown} for {show(label)} {value}"))
            continue
        if first_line[row, column]:
            problems.add(at(number, f"duplicate label {show(label)} (first on line {int(first_line[row, column])})"))
            continue
        first_line[row, column] = number
        scores[row, column] = value
    missing = np.argwhere(first_line == 0)
    if missing.size:
        names = ", ".join(show(f"{gold.ids[r]}_{KEYS[c]}") for r, c in missing[:_MISSING_SHOWN].tolist())
        more = f" and {len(missing) - _MISSING_SHOWN:,} more" if len(missing) > _MISSING_SHOWN else ""
        examples = np.unique(missing[:, 0]).size
        problems.add(
            Problem(
                None,
                f"missing scores for {len(missing):,} label{'s' if len(missing) != 1 else ''} of {first_line.size:,} "
                f"({examples:,} example{'s' if examples != 1 else ''}): {names}{more}",
            )
        )
    if problems:
        problems.hint(f"labels look like {gold.ids[0]}_c0_i0")
    problems.raise_if_any()
    return scores
