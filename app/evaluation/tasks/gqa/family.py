"""GQA: open answers to compositional questions about real images, scored as the official eval.py (of GQA 1.2).

Gold: the official questions JSON (``{tier}_all_questions.json``, or a balanced file), one object keyed by
question id. Submission: the official predictions JSON, ``[{"questionId": ..., "prediction": ...}]``, one entry
for every question of the gold file (the official script needs them all: unbalanced questions count only as
entailed questions in the consistency).

What the official script does (measured by running it: tests/differential/FINDINGS.md), and so this module:
- a prediction is right when it equals the gold answer exactly (case and spaces count, nothing is normalised);
- every metric is over the BALANCED questions alone; ``binary`` and ``open`` split them by structural type
  (``open``: "query", ``binary``: every other type, whatever the answer); ``accuracy``, ``binary``, ``open`` and
  the ``consistency`` are ``avg(list) * 100`` with ``avg([]) == 0``;
- ``consistency``: for every balanced question answered right whose ``entailed`` list (less its own id) is not
  empty, the share of those entailed questions (balanced or not; repeats count) answered right; their mean;
- ``distribution``: the chi-square of the predicted against the gold answer counts of each global group (over
  the group's gold answers only), averaged weighted by the group's questions, divided by 100; lower is better.
  A file with no balanced question in a global group has no distribution (the official script divides by zero
  there): it is left out of the scores rather than the file refused;
- ``validity`` and ``plausibility`` (only on a split with the official choices file: choices.py): the share of
  the balanced questions whose prediction is in the question's ``valid`` (``plausible``) list exactly, by
  ``belongs``: a question whose detailed type contains "Common" takes ``["color", "material", "shape"]`` as its
  list instead; ``avg(list) * 100``. A split without a choices file has neither metric (the official script
  would report 0 for both with the empty file it then needs).

Units: the balanced questions, each right or wrong on the primary metric (accuracy): the ranks' McNemar tests,
the Ladder's losses and the probe check count them alone. A bootstrap resamples images (a question's group is
its image): the questions of one image are not independent, and GQA asks many questions of each image.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from app.evaluation import encoding, layout
from app.evaluation.gold import GoldSet
from app.evaluation.subsets import PARTS
from app.evaluation.tasks.base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register
from app.evaluation.tasks.synthetic_files import SyntheticOptions

from . import choices, formats, synthetic
from .scoring import CHOICES_METRICS, average, scoring_of, whole

_PAPER = "https://arxiv.org/abs/1902.09506"
SUBSET_FIELDS = ("structural", "semantic")  # the subsets every split gets, as the official per-type accuracies
AUDIT_CLASSES = ("no", "yes", "another answer")  # a label audit's classes (label_votes)
_NO_YES = encoding.text_hashes(["no", "yes"])


def _audit_class(hashes: np.ndarray) -> np.ndarray:
    """0 for "no", 1 for "yes", 2 for any other answer (int8, the shape of `hashes`)."""
    hashes = np.asarray(hashes)
    classes: np.ndarray = np.where(hashes == _NO_YES[0], 0, np.where(hashes == _NO_YES[1], 1, 2)).astype(np.int8)
    return classes


@register
class GQA(FixedDtypeTask):
    """GQA (Hudson and Manning 2019), scored exactly as its official eval.py: see the module docstring."""

    name = "gqa"
    list_position = 40
    stored_dtype = np.dtype(np.uint64)
    label = "GQA"
    unit_noun = "images"
    default_subset_fields = ()  # the rest of the typed subsets: a visitor's choice
    # As eval.py prints them. Binary and open count their balanced questions, accuracy all balanced ones; the
    # distribution is a chi-square (no percentage, lower is better), shown to four decimals and never ranked.
    declared_metrics = (
        Metric("accuracy", "Accuracy", "Acc.", counts="balanced questions"),
        Metric("binary", "Binary", "Bin.", counts="balanced binary questions"),
        Metric("open", "Open", counts="balanced open questions"),
        Metric("consistency", "Consistency", "Cons.", counts="entailed questions"),
        Metric("validity", "Validity", "Valid.", counts="balanced questions"),
        Metric("plausibility", "Plausibility", "Plaus.", counts="balanced questions"),
        Metric("distribution", "Distribution", "Distr.", unit="plain", lower_is_better=True, decimals=4, ranks=False),
    )
    choices_metrics = CHOICES_METRICS  # reported only where the split has the official choices file
    choices_file = "GQA's official {tier}_choices.json"
    # The paper's names of the structural and semantic types (eval.py prints the raw ones).
    subset_labels = {
        **{f"structural:{t}": t.capitalize() for t in ("verify", "query", "choose", "logical", "compare")},
        "semantic:rel": "Relation",
        "semantic:attr": "Attribute",
        "semantic:obj": "Object",
        "semantic:cat": "Category",
        "semantic:global": "Global",
    }
    # The consistency is a mean over the questions answered right (a ratio of sums over images only once the
    # right answers are known) and the distribution a chi-square: no group sums a bootstrap can resample.
    estimate_only_metrics = ("consistency", "distribution")
    primary_metric = "accuracy"
    # None: binary (or open) would favour one kind of question arbitrarily; GQA's own boards rank by accuracy.
    tie_break_metric = None
    subset_metrics = ("accuracy",)
    file_format = (
        'JSON, the official GQA predictions format: one array of {"questionId": "...", "prediction": "..."} '
        "objects, one for every question of the split (balanced or not: unbalanced ones count in the "
        "consistency), the prediction a string compared exactly with the answer (case and spaces count)"
    )
    file_suffix = "json"
    media_type = "application/json"
    example = (
        '[{"questionId": "20968379", "prediction": "no"},',
        '{"questionId": "20968380", "prediction": "left"},',
        '{"questionId": "201307251", "prediction": "table"}]',
    )

    def sample(self, gold: GoldSet) -> bytes:
        rows = ",\n".join(json.dumps({"questionId": qid, "prediction": "yes"}) for qid in gold.ids.tolist())
        return ("[\n" + rows + "\n]\n").encode("utf-8")

    def read_gold(self, data: bytes) -> GoldSet:
        return formats.read_questions(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        return formats.parse_predictions(data, gold, max_bytes)

    def read_choices(self, gold: GoldSet, data: bytes, max_bytes: int | None = None) -> bytes:
        """The official choices file, checked against the gold set (ValidationError), in its compact stored
        form: the lists of the balanced questions alone, aligned to the gold rows."""
        questions = whole(gold)
        balanced = scoring_of(questions).balanced
        return choices.read_choices(data, questions.ids, balanced, max_bytes=max_bytes).to_bytes()

    def with_choices(self, gold: GoldSet, compact: bytes) -> GoldSet:
        """The gold set with the stored choices (read_choices' bytes) attached; ValidationError when they miss a
        balanced question of it (a corrected gold file may make one balanced)."""
        questions = whole(gold)
        attached = choices.Choices.from_bytes(compact)
        choices.check_covers(attached, questions.ids, scoring_of(questions).balanced)
        return replace(questions, choices=attached)

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n,)

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        """'structural:<type>' and 'semantic:<type>': the balanced questions of each type, as the official
        per-type accuracies (their sizes are its question counts)."""
        balanced = scoring_of(gold).balanced
        subsets = {}
        for name in SUBSET_FIELDS:
            values = gold.fields[name]
            for value in sorted(set(values[balanced].tolist())):
                subsets[f"{name}:{value}"] = np.flatnonzero(balanced & (values == value)).astype(np.int32)
        return subsets

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        scoring = scoring_of(gold)
        right = stacked == scoring.answer
        columns: Columns = {"all": scoring.metrics(stacked, right, None)}
        for name, indices in subsets.items():
            indices = np.asarray(indices, dtype=np.intp)
            counted = indices[scoring.balanced[indices]]
            if counted.size == 0:
                continue  # no balanced question: the official script reports no such type
            if name in PARTS:  # a blind test's queried and sealed parts: every metric
                members = np.zeros(gold.n, dtype=bool)
                members[indices] = True
                columns[name] = scoring.metrics(stacked, right, members)
            else:
                columns[name] = {"accuracy": average(right[:, counted])}
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        """The answer as yes, no or another answer: a yes/no label the submissions contradict (about half of GQA's
        questions are yes/no) is found; open answers have no fixed classes, so they are one class here."""
        return [
            LabelVotes("answer", _audit_class(scoring_of(gold).answer), _audit_class(stacked)[..., None], AUDIT_CLASSES)
        ]

    # --- units: the balanced questions ----------------------------------------------------------------------

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """(k, balanced questions) bool, in gold order: what accuracy counts."""
        scoring = scoring_of(gold)
        rows = np.flatnonzero(scoring.balanced)
        correct: np.ndarray = np.asarray(stacked)[:, rows] == scoring.answer[rows]
        return correct

    def counted_units(self, gold: GoldSet, metric: str, indices: np.ndarray | None = None) -> int:
        """The balanced questions among `indices` (binary, open: of that kind). The consistency and the distribution
        count no units (estimate-only): the balanced questions are returned for them."""
        scoring = scoring_of(gold)
        mask = {"binary": scoring.binary, "open": scoring.open}.get(metric, scoring.balanced)
        return int(np.count_nonzero(mask if indices is None else mask[np.asarray(indices)]))

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        """Accuracy, binary and open (and with a choices file validity and plausibility) counted per question:
        right (1 or 0) where the metric counts the question, with one judgement a counted question and none
        another."""
        scoring = scoring_of(gold)
        stacked = np.asarray(stacked)
        right = layout.by_example(stacked == scoring.answer)  # (n, k) uint8
        counts = {}
        for metric, mask in (("accuracy", scoring.balanced), ("binary", scoring.binary), ("open", scoring.open)):
            counted = mask.view(np.uint8)
            counts[metric] = (right * counted[:, None], counted)
        rows = np.flatnonzero(scoring.balanced)
        for metric, inside in scoring.choice_outcomes(stacked, rows).items():
            full = np.zeros(stacked.shape, dtype=bool)
            full[:, rows] = inside
            counts[metric] = (layout.by_example(full), scoring.balanced.view(np.uint8))
        return {"counts": counts, "all_right": right}

    def probe_distances(self, new: np.ndarray, stacked: np.ndarray) -> np.ndarray:
        """Without the gold set: the share of every question on which each earlier file differs. The probe check
        asks split_probe_distances, which counts the balanced questions alone (the units)."""
        return super().probe_distances(new, stacked)

    def split_probe_distances(self, gold: GoldSet, new: np.ndarray, blobs: Sequence[bytes]) -> np.ndarray:
        """The share of the balanced questions on which each stored file differs from the new one: a change to an
        unbalanced prediction moves no released figure, so it neither hides a probe nor makes one."""
        rows = np.flatnonzero(scoring_of(gold).balanced)
        mine = np.asarray(new)[rows]
        distances = np.empty(len(blobs))
        for i, blob in enumerate(blobs):  # one blob at a time, read in place: a stack of all-questions files is large
            if len(blob) != 8 * gold.n:
                raise ValueError(f"stored predictions have {len(blob)} bytes; expected {8 * gold.n}")
            distances[i] = np.count_nonzero(np.frombuffer(blob, dtype="<u8")[rows] != mine) / max(rows.size, 1)
        return distances

    # --- synthetic data -------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        return synthetic.gqa_gold(size, seed=seed)

    def synthetic_file(self, gold: bytes, options: SyntheticOptions) -> bytes:
        """Each prediction right with probability ``accuracy`` (an image's questions sharing one draw with
        probability ``group_correlation``); JSON has no header line."""
        return synthetic.predictions(
            gold,
            options.accuracy,
            np.random.default_rng(options.seed),
            shuffle=options.shuffle,
            group_correlation=options.group_correlation,
        )

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        """The paper's abstract: humans 89.3%, a blind LSTM 42.1% (accuracy)."""
        return [
            ("Human (Hudson and Manning 2019)", {"all": {"accuracy": 89.3}}, _PAPER),
            ("Blind LSTM (Hudson and Manning 2019)", {"all": {"accuracy": 42.1}}, _PAPER),
        ]
