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

import numpy as np

from app.evaluation import layout
from app.evaluation.gold import GoldSet
from app.evaluation.metrics import accuracy
from app.evaluation.subsets import field_subsets
from app.evaluation.tasks.base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register
from app.evaluation.tasks.synthetic_files import SyntheticOptions

from . import formats, synthetic
from .formats import KEYS
from .scoring import comparisons, outcomes

_PAPER = "https://arxiv.org/abs/2204.03162"
SUBSET_FIELDS = ("collapsed_tag", "num_main_preds", "secondary_tag")


@register
class Winoground(FixedDtypeTask):
    """Four scores an example; text, image and group right per example (one judgement each), strict ``>``."""

    name = "winoground"
    list_position = 60
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
        return formats.read_winoground(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_scores(data, gold, max_bytes=max_bytes)

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
        differs = (comparisons(stacked) != comparisons(new)[None]).any(axis=-1)
        distances: np.ndarray = differs.mean(axis=1)
        return distances

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        """Examples in the official shape: ids 0..size-1, word-order swaps for captions, the official tag
        vocabulary in about the official proportions (``split`` is not part of Winoground ids)."""
        return synthetic.gold(size, seed)

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """A model_scores file whose expected ``group`` score is ``accuracy`` (text and image come out higher):
        an example is group-right with that probability, else its scores are drawn at random and made
        group-wrong. Lines in a shuffled order unless ``shuffle`` is false; JSON lines have no header, and an
        example is its own group, so ``header``, ``split`` and ``group_correlation`` change nothing."""
        return synthetic.predictions(gold, options.accuracy, np.random.default_rng(options.seed), options.shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return [
            ("Human (Thrush et al. 2022)", {"all": {"text": 89.5, "image": 88.5, "group": 85.5}}, _PAPER),
            ("Chance (Thrush et al. 2022)", {"all": {"text": 25.0, "image": 25.0, "group": 16.67}}, _PAPER),
        ]
