"""Winoground: two captions and two images an example, the same words in a different order; a model scores every
caption with every image and is right when it pairs them the right way round (Thrush et al. 2022).

Gold: the official ``examples.jsonl``, one example a line: ``id`` (an integer), ``caption_0``, ``caption_1``,
``image_0``, ``image_1``, ``tag``, ``secondary_tag``, ``num_main_preds``, ``collapsed_tag``. There is no label:
caption_0 goes with image_0 and caption_1 with image_1, always.

Submission: the official ``statistics/model_scores/*.jsonl`` layout that ``compute_statistics.py`` reads
(``load_results``): JSON lines ``{"label": "<id>_c<i>_i<j>", "score": <number>}``, four an example, the score of
caption i with image j (c0_i0, c0_i1, c1_i0, c1_i1). Stored as float64 (n, 4) in that order, every bit kept.

Metrics, exactly as the official ``text_correct``, ``image_correct`` and ``group_correct``, with a strict ``>`` (a
tie is wrong, -0.0 ties 0.0):
- ``text``: both images pick their own caption, c0_i0 > c1_i0 and c1_i1 > c0_i1;
- ``image``: both captions pick their own image, c0_i0 > c0_i1 and c1_i1 > c1_i0;
- ``group``: both (the primary metric; ties broken by ``text``).
Each is the share of examples right, one judgement an example, like VCR's stages.

Subsets, derived for every split: one per value of ``collapsed_tag``, ``num_main_preds`` and ``secondary_tag``,
named "field:value" with the file's value. An example is in a subset when its value equals it exactly, as the
official ``filter_examples`` selects (``example[key] != value``): the official file has combined secondary tags
("Symbolic, Series") and such an example is in neither "Symbolic" nor "Series" there, nor here (it is in
"secondary_tag:Symbolic, Series"); untagged ("") examples are in no secondary_tag subset. The official script
prints Object/Relation/Both, 1/2 and Symbolic/Pragmatics/Series; those subsets are scored here identically.

Where this differs from the official script, it refuses rather than scores: the official "all" is over every id
of the submission (an id not in examples.jsonl is counted, a gold example left out is not), a repeated label
keeps its last score, a missing score is a KeyError, a NaN compares false silently, a string score compares as a
string. Here every gold example needs its four finite numeric scores, once each, and nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import gold as gold_files
from .. import layout
from ..errors import Problem, ProblemList, at
from ..gold import GoldSet
from ..metrics import accuracy
from ..predictions import max_lines_for
from ..subsets import field_subsets
from ..text_files import check_text, show
from . import synthetic_files
from .base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register

_PAPER = "https://arxiv.org/abs/2204.03162"
# The four scores of an example, in the order predictions store them: caption i with image j.
KEYS = ("c0_i0", "c0_i1", "c1_i0", "c1_i1")
SUBSET_FIELDS = ("collapsed_tag", "num_main_preds", "secondary_tag")
_ID_PART = re.compile(r"[+-]?[0-9]+")  # what int() of the label's first part reads (ASCII digits only)
_MISSING_SHOWN = 10
MAX_LINE_BYTES = 1024  # '{"label": "399_c1_i1", "score": -1.7976931348623157e+308}' is 58


def outcomes(stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(text, image, group) right per example for scores (..., n, 4): the official functions, strict ``>``."""
    c0_i0, c0_i1, c1_i0, c1_i1 = (stacked[..., j] for j in range(4))
    text = (c0_i0 > c1_i0) & (c1_i1 > c0_i1)
    image = (c0_i0 > c0_i1) & (c1_i1 > c1_i0)
    return text, image, text & image


def _comparisons(stacked: np.ndarray) -> np.ndarray:
    """The four comparisons every metric is made of, (..., n, 4) bool: two scored predictions that agree on
    them score the same on every metric and subset."""
    c0_i0, c0_i1, c1_i0, c1_i1 = (stacked[..., j] for j in range(4))
    return np.stack([c0_i0 > c1_i0, c1_i1 > c0_i1, c0_i0 > c0_i1, c1_i1 > c1_i0], axis=-1)


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
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.add(at(number, f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        except (ValueError, RecursionError):
            problems.add(at(number, "invalid JSON"))
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


@register
class Winoground(FixedDtypeTask):
    """Four scores an example; text, image and group right per example (one judgement each), strict ``>``."""

    name = "winoground"
    stored_dtype = np.dtype(np.float64)
    label = "Winoground"
    unit_noun = "examples"
    default_subset_fields = ()  # the rest of the typed subsets: a visitor's choice
    # The paper's order: text, image, group.
    declared_metrics = (
        Metric("text", "Text score", "Text"),
        Metric("image", "Image score", "Image"),
        Metric("group", "Group score", "Group"),
    )
    # The paper's names of its tags (Thrush et al. 2022, tables 3 and 4).
    subset_labels = {
        "collapsed_tag:Object": "Object",
        "collapsed_tag:Relation": "Relation",
        "collapsed_tag:Both": "Both",
        "num_main_preds:1": "1 main pred",
        "num_main_preds:2": "2 main preds",
        "secondary_tag:Symbolic": "Symbolic",
        "secondary_tag:Pragmatics": "Pragmatics",
        "secondary_tag:Series": "Series",
    }
    primary_metric = "group"
    tie_break_metric = "text"
    subset_metrics = ("text", "image", "group")
    file_format = (
        'JSON lines, four per example, as the official model_scores files: {"label": "<id>_c<i>_i<j>", '
        '"score": <number>}, the score of caption i with image j (c0_i0, c0_i1, c1_i0, c1_i1) for every example '
        "id of the split, any order; a higher score is a better match and a tie counts as wrong; scores must be "
        "finite JSON numbers"
    )
    file_suffix = "jsonl"
    media_type = "application/jsonl"
    example = (
        '{"label": "0_c0_i0", "score": 0.83}',
        '{"label": "0_c0_i1", "score": 0.41}',
        '{"label": "0_c1_i0", "score": 0.37}',
    )

    def sample(self, gold: GoldSet) -> bytes:
        return "".join(
            f'{{"label": "{identifier}_{key}", "score": 0.0}}\n' for identifier in gold.ids.tolist() for key in KEYS
        ).encode()

    def read_gold(self, data: bytes) -> GoldSet:
        return gold_files.read_winoground(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return parse_scores(data, gold, max_bytes=max_bytes)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, len(KEYS))

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        subsets: dict[str, np.ndarray] = {}
        for field in SUBSET_FIELDS:
            if field in gold.fields:
                subsets.update(field_subsets(gold, field))  # exact equality, as the official
        return subsets

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        right = dict(zip(self.metrics, outcomes(stacked), strict=True))  # each (k, n)
        columns = {"all": {metric: accuracy(correct) for metric, correct in right.items()}}
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {metric: accuracy(right[metric][:, indices]) for metric in self.subset_metrics}
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        """None: Winoground has no label field to audit (the right pairing is fixed)."""
        return []

    # --- units: an example, right when its group is ---------------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return outcomes(np.asarray(stacked))[2]

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """Every metric counted, one judgement an example; all right when the group is."""
        right = [layout.by_example(outcome) for outcome in outcomes(np.asarray(stacked))]
        return {
            "counts": {metric: (o, 1) for metric, o in zip(self.metrics, right, strict=True)},
            "all_right": right[2],
        }

    def probe_distances(self, new: np.ndarray, stacked: np.ndarray) -> np.ndarray:
        """Share of examples on which the four comparisons differ (not the raw scores: a submission whose scores
        changed but whose comparisons did not scores the same everywhere)."""
        differs = (_comparisons(stacked) != _comparisons(new)[None]).any(axis=-1)
        distances: np.ndarray = differs.mean(axis=1)
        return distances

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        """Examples in the official shape: ids 0..size-1, word-order swaps for captions, the official tag
        vocabulary in about the official proportions (``split`` is not part of Winoground ids)."""
        return synthetic_gold(size, seed)

    def synthetic_predictions(
        self,
        gold: bytes,
        accuracy: float,
        seed: int = 0,
        *,
        header: bool = False,
        shuffle: bool = True,
        split: str = "dev",
        group_correlation: float = 0.0,
        **options: Any,
    ) -> bytes:
        """A model_scores file whose expected ``group`` score is ``accuracy`` (text and image come out higher):
        an example is group-right with that probability, else its scores are drawn at random and made
        group-wrong. Lines in a shuffled order unless ``shuffle`` is false; JSON lines have no header, and an
        example is its own group, so ``header``, ``split`` and ``group_correlation`` change nothing."""
        accuracy = synthetic_files.check_accuracy("accuracy", accuracy)
        synthetic_files.check_accuracy("group_correlation", group_correlation)
        return synthetic_predictions(gold, accuracy, np.random.default_rng(seed), shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return [
            ("Human (Thrush et al. 2022)", {"all": {"text": 89.5, "image": 88.5, "group": 85.5}}, _PAPER),
            ("Chance (Thrush et al. 2022)", {"all": {"text": 25.0, "image": 25.0, "group": 16.67}}, _PAPER),
        ]


# --- synthetic files in the official shapes ----------------------------------------------------------------

# The official tag vocabulary by collapsed tag, and about the official shares (400 examples: Relation 233,
# Object 141, Both 26; secondary tags on a quarter, some combined; num_main_preds 2 on a quarter).
_TAGS = {
    "Relation": ("Adjective-Color", "Preposition", "Determiner-Numeral", "Adjective-Size", "Verb-Intransitive"),
    "Object": ("Noun", "Noun Phrase", "Determiner-Numeral, Noun Phrase", "Pronoun, Noun Phrase"),
    "Both": ("Altered POS", "Noun, Verb-Intransitive", "Scope, Noun, Preposition"),
}
_COLLAPSED = (("Relation", 0.58), ("Object", 0.35), ("Both", 0.07))
_SECONDARY = (
    ("", 0.75),
    ("Symbolic", 0.07),
    ("Series", 0.06),
    ("Morpheme-Level", 0.04),
    ("Pragmatics", 0.04),
    ("Symbolic, Series", 0.02),
    ("Symbolic, Pragmatics", 0.02),
)
_TWO_MAIN_PREDS = {"Relation": 0.41, "Object": 0.08, "Both": 0.04}
_ADJECTIVES = ("old", "young", "tall", "short", "red", "blue", "large", "small", "wet", "dry")
_NOUNS = ("person", "dog", "cat", "cup", "plant", "car", "child", "bird", "chair", "book")
_VERBS = ("is left of", "is on top of", "looks at", "is behind", "is bigger than")


def _choice(rng: np.random.Generator, table: tuple[tuple[str, float], ...], size: int) -> list[str]:
    values, weights = zip(*table, strict=True)
    p = np.array(weights) / sum(weights)
    return [values[i] for i in rng.choice(len(values), size=size, p=p).tolist()]


def synthetic_gold(size: int, seed: int = 0) -> bytes:
    n = synthetic_files.check_count("size", size)
    rng = np.random.default_rng(seed)
    collapsed = _choice(rng, _COLLAPSED, n)
    secondary = _choice(rng, _SECONDARY, n)
    two_preds = rng.random(n)
    rows = []
    for i in range(n):
        a, b = rng.choice(len(_ADJECTIVES), size=2, replace=False).tolist()
        x, y = rng.choice(len(_NOUNS), size=2, replace=False).tolist()
        verb = _VERBS[int(rng.integers(len(_VERBS)))]
        tags = _TAGS[collapsed[i]]
        rows.append(
            synthetic_files.dumps(
                {
                    "id": i,
                    "caption_0": f"a {_ADJECTIVES[a]} {_NOUNS[x]} {verb} a {_ADJECTIVES[b]} {_NOUNS[y]}",
                    "caption_1": f"a {_ADJECTIVES[b]} {_NOUNS[x]} {verb} a {_ADJECTIVES[a]} {_NOUNS[y]}",
                    "image_0": f"ex_{i}_img_0",
                    "image_1": f"ex_{i}_img_1",
                    "tag": tags[int(rng.integers(len(tags)))],
                    "secondary_tag": secondary[i],
                    "num_main_preds": 2 if two_preds[i] < _TWO_MAIN_PREDS[collapsed[i]] else 1,
                    "collapsed_tag": collapsed[i],
                }
            )
        )
    return synthetic_files.lines(rows)


def synthetic_predictions(gold: bytes, accuracy: float, rng: np.random.Generator, shuffle: bool) -> bytes:
    ids = [str(row["id"]) for row in synthetic_files.json_lines(gold)]
    n = len(ids)
    right = rng.random(n) < accuracy
    scores = np.round(rng.random((n, 4)), 4)  # c0_i0, c0_i1, c1_i0, c1_i1
    # Group-right examples: the matching pairs above both others.
    high = np.round(0.6 + 0.4 * rng.random((n, 2)), 4)
    low = np.round(0.5 * rng.random((n, 2)), 4)
    scores[right] = np.stack([high[:, 0], low[:, 0], low[:, 1], high[:, 1]], axis=1)[right]
    # The others: random scores, made group-wrong where the draw happened to be right (c0_i0 no longer above
    # c0_i1 makes the image judgement wrong).
    lucky = ~right & outcomes(scores)[2]
    scores[lucky, 0], scores[lucky, 1] = scores[lucky, 1], scores[lucky, 0]
    lines = [
        f'{{"label": "{ids[i]}_{key}", "score": {json.dumps(float(scores[i, j]))}}}'
        for i in range(n)
        for j, key in enumerate(KEYS)
    ]
    order = rng.permutation(len(lines)) if shuffle else np.arange(len(lines))
    return synthetic_files.lines([lines[i] for i in order.tolist()])
