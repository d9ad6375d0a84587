"""VQA v2: open-ended answers scored by the official soft accuracy against ten human answers.

Exact to the official scorer (GT-Vision-Lab/VQA, PythonEvaluationTools/vqaEvaluation/vqaEval.py at
a013f0043c1e2cdc995922dfe257f7149aa9af06; tests/differential runs it), quirks included:
- answers (the humans' and the prediction) have newlines and tabs turned to spaces and are stripped;
- only when the ten stripped human answers are not all the same are they and the prediction normalised
  (punctuation, then periods, then lowercase, number words, articles, contractions); a unanimous "2" does not
  match a prediction "two", nor "yes" a "Yes";
- the period rule's regex `(?!<=\\d)(\\.)(?!\\d)` is a lookahead typo: every period not followed by a digit
  goes, and `re.UNICODE` lands in `count`, so only the first 32 of them do;
- a question's accuracy is the mean over the ten leave-one-out sets of nine humans of min(1, matches / 3):
  0, 30, 60, 90 and 100% for 0, 1, 2, 3 and 4 or more matching humans. Overall and per type: the mean over
  questions.

A question's accuracy is counted in points, 3m a question for m humans (30 for ten: 0/9/18/27/30), so the
statistics resample exact integer counts; ranks use a paired permutation test on the points
(statistics.paired_view_ranks), not McNemar's test. Predictions are stored as two 64-bit hashes a question,
of the stripped answer and of its normalised form (which one counts depends on the gold, so a corrected gold
file can be scored again); gold answers as hashes of the form that counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import encoding, json_files, layout
from ..errors import ProblemList, ValidationError
from ..gold import GoldSet
from ..predictions import max_lines_for
from ..subsets import field_subsets
from ..text_files import show
from . import synthetic_files
from .base import Columns, FixedDtypeTask, LabelVotes, Metric, Outcomes, Scores, register

_PAPER = "https://arxiv.org/abs/1612.00837"

# --- the official normalisation, as vqaEval.py writes it ---------------------------------------------------

_CONTRACTIONS = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've", "couldnt": "couldn't",
    "couldn'tve": "couldn't've", "couldnt've": "couldn't've", "didnt": "didn't", "doesnt": "doesn't",
    "dont": "don't", "hadnt": "hadn't", "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't",
    "havent": "haven't", "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm", "Ive": "I've",
    "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've", "itll": "it'll", "let's": "let's",
    "maam": "ma'am", "mightnt": "mightn't", "mightnt've": "mightn't've", "mightn'tve": "mightn't've",
    "mightve": "might've", "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at",
    "'ow'sat": "'ow's'at", "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've", "she's": "she's",
    "shouldve": "should've", "shouldnt": "shouldn't", "shouldnt've": "shouldn't've",
    "shouldn'tve": "shouldn't've", "somebody'd": "somebodyd", "somebodyd've": "somebody'd've",
    "somebody'dve": "somebody'd've", "somebodyll": "somebody'll", "somebodys": "somebody's",
    "someoned": "someone'd", "someoned've": "someone'd've", "someone'dve": "someone'd've",
    "someonell": "someone'll", "someones": "someone's", "somethingd": "something'd",
    "somethingd've": "something'd've", "something'dve": "something'd've", "somethingll": "something'll",
    "thats": "that's", "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've",
    "they'dve": "they'd've", "theyll": "they'll", "theyre": "they're", "theyve": "they've", "twas": "'twas",
    "wasnt": "wasn't", "wed've": "we'd've", "we'dve": "we'd've", "weve": "we've", "werent": "weren't",
    "whatll": "what'll", "whatre": "what're", "whats": "what's", "whatve": "what've", "whens": "when's",
    "whered": "where'd", "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've", "whyll": "why'll",
    "whyre": "why're", "whys": "why's", "wont": "won't", "wouldve": "would've", "wouldnt": "wouldn't",
    "wouldnt've": "wouldn't've", "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll",
    "y'allll": "y'all'll", "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll", "youre": "you're",
    "youve": "you've",
}  # fmt: skip
_NUMBERS = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
_ARTICLES = frozenset(("a", "an", "the"))
_PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")  # sic: a lookahead, not the lookbehind it meant
_COMMA_STRIP = re.compile(r"(\d)(\,)(\d)")
_PUNCT = (";", r"/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
_PERIOD_COUNT = re.UNICODE  # the official passes re.UNICODE (32) where sub() takes its count
_TOUCHED = re.compile(r"[;/\[\]\"{}()=+\\_\-><@`,?!.]")  # text without these passes processPunctuation unchanged


def _punctuation(text: str) -> str:
    """vqaEval.processPunctuation: the checks look at the original text, the replacements at the output."""
    if _TOUCHED.search(text) is None:
        return text
    out = text
    digit_comma = _COMMA_STRIP.search(text) is not None
    for mark in _PUNCT:
        if (mark + " " in text or " " + mark in text) or digit_comma:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD_STRIP.sub("", out, _PERIOD_COUNT)


def _digits_articles(text: str) -> str:
    """vqaEval.processDigitArticle: lowercase words, number words to digits, articles out, contractions."""
    words = [_NUMBERS.get(word, word) for word in text.lower().split()]
    return " ".join(_CONTRACTIONS.get(word, word) for word in words if word not in _ARTICLES)


def normalised(text: str) -> str:
    """The form an answer is compared in when the humans disagree."""
    return _digits_articles(_punctuation(text))


def stripped(text: str) -> str:
    """Every answer first: newlines and tabs to spaces, then stripped."""
    return text.replace("\n", " ").replace("\t", " ").strip()


def _answer_hashes(answers: Sequence[str]) -> np.ndarray:
    """(len, 2) uint64: each answer's stripped form and normalised form, hashed; each distinct answer once."""
    codes, distinct = pd.factorize(np.asarray([stripped(a) for a in answers], dtype=object))
    forms = np.empty((len(distinct), 2), dtype=object)
    forms[:, 0] = distinct
    forms[:, 1] = [normalised(text) for text in distinct.tolist()]
    hashed: np.ndarray = encoding.text_hashes(forms)[codes]
    return hashed.reshape(len(answers), 2)


# --- gold -----------------------------------------------------------------------------------------------------

GOLD_DTYPE_FIELDS = ("normalise", "answers")
_FIELDS = ("answer_type", "question_type", "image_id")  # per-question fields kept (subsets, pages)


def _gold_dtype(humans: int) -> np.dtype:
    return np.dtype([("normalise", bool), ("answers", np.uint64, (humans,))])


def read_gold(data: bytes, task: str = "vqa-v2") -> GoldSet:
    """The official annotations file: {"annotations": [{"question_id", "answers": [{"answer", "answer_id",
    ...} x m], "answer_type", "question_type", "image_id", ...}]} (m humans, the same m for every question)."""
    try:  # one annotation at a time where the file allows (a 214k-question file: 1.2 GB parsed whole)
        return _read_annotations(json_files.stream_array(data, "annotations"), task)
    except json_files.NotStreamable:
        pass
    document = json_files.load(data, what="annotations file")
    annotations = document.get("annotations") if isinstance(document, dict) else None
    if not isinstance(annotations, list) or not annotations:
        raise ValidationError(
            'expected the official annotations file: an object whose "annotations" is a non-empty list'
        )
    json_files.check_unicode(data, document, "annotations file")  # answers are hashed, types name subsets
    return _read_annotations(annotations, task)


def _read_annotations(annotations: Iterable[Any], task: str) -> GoldSet:
    """read_gold's checks and arrays, over the annotations as they come."""
    problems = ProblemList()
    ids: list[str] = []
    texts: list[str] = []
    humans: int | None = None
    fields: dict[str, list[str]] = {name: [] for name in _FIELDS}
    for number, record in enumerate(annotations, 1):
        if problems.count >= json_files.MAX_GOLD_PROBLEMS:  # first: every problem below continues the loop
            break
        where = f"annotation {number:,}"
        if not isinstance(record, dict):
            problems.add(f"{where}: expected an object")
            continue
        question = record.get("question_id")
        if type(question) is not int:
            problems.add(f"{where}: missing or invalid question_id (an integer)")
            continue
        where = f"question {question}"
        answers = record.get("answers")
        if not isinstance(answers, list) or not answers or len(answers) > 30:
            problems.add(f"{where}: 'answers' must be a list of 1 to 30 human answers")
            continue
        try:
            written = [a["answer"] for a in answers]
        except (TypeError, KeyError, IndexError):
            written = [None]
        if not all(type(text) is str for text in written):
            problems.add(f"{where}: every human answer must be an object with a string 'answer'")
            continue
        if _repeats([a.get("answer_id") for a in answers]) and _repeats(answers):
            # The official leave-one-out drops every entry equal to the left-out one (dict equality).
            problems.add(f"{where}: two human answers are the same entry (give each its own answer_id)")
            continue
        if humans is None:
            humans = len(answers)
        elif len(answers) != humans:
            problems.add(f"{where}: {len(answers)} human answers; every question must have the same number ({humans})")
            continue
        ids.append(str(question))
        texts.extend(written)
        for name in _FIELDS:
            value = record.get(name, "")
            fields[name].append(value if isinstance(value, str) else str(value) if type(value) is int else "")
    problems.raise_if_any()
    if humans is None:
        raise ValidationError(
            'expected the official annotations file: an object whose "annotations" is a non-empty list'
        )
    distinct, counts = np.unique(np.asarray(ids, dtype=object), return_counts=True)
    if (counts > 1).any():
        raise ValidationError(f"question {distinct[counts > 1][0]} appears twice in the annotations file")
    forms = _answer_hashes(texts).reshape(len(ids), humans, 2)
    unanimous = (forms[:, :, 0] == forms[:, :1, 0]).all(axis=1)
    labels = np.empty(len(ids), dtype=_gold_dtype(humans))
    labels["normalise"] = ~unanimous
    labels["answers"] = np.where(unanimous[:, None], forms[:, :, 0], forms[:, :, 1])
    return GoldSet(
        task,
        _objects(ids),
        labels,
        np.arange(len(ids), dtype=np.int32),
        {name: _objects(values) for name, values in fields.items()},
    )


def _repeats(values: list[Any]) -> bool:
    """Whether two of the JSON values are equal as Python compares them (1 == 1.0 == true), as the official
    leave-one-out compares answer entries; integer answer ids, the usual, in one set."""
    if all(type(value) is int for value in values):
        return len(set(values)) != len(values)
    return len(set(map(_key, values))) != len(values)


def _key(value: Any) -> Any:
    """A hashable key of a parsed JSON value, equal for values Python finds equal in parsed entries: json.loads makes
    every NaN the same object, and dict equality takes an object as equal to itself."""
    if isinstance(value, dict):
        return frozenset((key, _key(item)) for key, item in value.items())
    if isinstance(value, list):
        return ("list", *map(_key, value))
    if isinstance(value, float) and value != value:
        return ("nan",)
    return value  # str, None and numbers (bool and int hash as the float they equal)


def _objects(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _entry_problem(row: int, entry: Any) -> str:
    """What is wrong with one entry of a results file (one that is wrong)."""
    if not isinstance(entry, dict):
        return f"entry {row + 1:,}: expected an object with question_id and answer"
    question, answer = entry.get("question_id"), entry.get("answer")
    if type(question) is not int:
        return f"entry {row + 1:,}: question_id must be an integer, not {show(question)}"
    return f"entry {row + 1:,}: question {question}: answer must be a string, not {show(answer)}"


# --- scoring --------------------------------------------------------------------------------------------------


def points_of(gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
    """(k, n) uint8: each question's accuracy in points of 3m (m humans): k matching humans score
    k min(3, k - 1) + (m - k) min(3, k), the sum of the m leave-one-out min(3, matches) (0/9/18/27/30 of 30)."""
    answers = gold.labels["answers"]  # (n, m)
    humans = answers.shape[1]
    compared = np.where(gold.labels["normalise"][None, :], stacked[..., 1], stacked[..., 0])  # (k, n)
    out = np.empty(compared.shape, dtype=np.uint8)
    step = max(1, 4_000_000 // max(1, answers.size))  # (rows, n, m) comparisons at a time
    for start in range(0, compared.shape[0], step):
        matches = (answers[None] == compared[start : start + step, :, None]).sum(axis=2)
        left_in = np.minimum(3, np.maximum(matches - 1, 0))  # a matching human left out: the others match
        out[start : start + step] = matches * left_in + (humans - matches) * np.minimum(3, matches)
    return out


@register
class VQAv2(FixedDtypeTask):
    """Open-ended answers, soft accuracy against the humans' answers (see the module's docstring)."""

    name = "vqa-v2"
    stored_dtype = np.dtype(np.uint64)
    label = "VQA v2"
    unit_noun = "questions"
    default_subset_fields = ("answer_type",)  # the rest of the typed subsets: a visitor's choice
    declared_metrics = (Metric("accuracy", "Accuracy", "Acc.", counts="questions"),)
    # The official board's columns, in its order: Overall, Yes/No, Number, Other.
    subset_labels = {"answer_type:yes/no": "Yes/No", "answer_type:number": "Number", "answer_type:other": "Other"}
    primary_metric = "accuracy"
    tie_break_metric = None
    subset_metrics = ("accuracy",)
    file_format = (
        'The official results JSON: one array of {"question_id": <integer>, "answer": "<text>"}, one object per '
        "question of the split (other keys are ignored). Answers are compared as the official vqaEval.py "
        "compares them: stripped, and normalised (punctuation, number words, articles, case) only where the "
        "humans disagree"
    )
    rank_test = (
        "a paired permutation test on {metric} (each question's difference in points, its sign "
        "flipped at random under the null; normal approximation)"
    )
    file_suffix = "json"
    media_type = "application/json"
    example = (
        '[{"question_id": 262148000, "answer": "down"},',
        ' {"question_id": 262148001, "answer": "2"},',
        ' {"question_id": 262148002, "answer": "yes"}]',
    )

    def column_label(self, subset: str, metric: str, *, short: bool = False) -> str:
        """The official board's headers: Overall, and an answer type's accuracy by its name alone."""
        if subset == "all":
            return "Overall"
        if subset in self.subset_labels:
            return self.subset_labels[subset]
        return super().column_label(subset, metric, short=short)

    def sample(self, gold: GoldSet) -> bytes:
        entries = ",\n".join(f' {{"question_id": {question}, "answer": "yes"}}' for question in gold.ids.tolist())
        return f"[\n{entries}\n]\n".encode()

    def read_gold(self, data: bytes) -> GoldSet:
        return read_gold(data, self.name)

    def parse(self, data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
        """The results JSON -> (n, 2) uint64 answer hashes in gold order; refuses naming lines and ids."""
        # An entry is an object and its two values; other keys and the separators are allowed for.
        document = json_files.load(data, max_bytes=max_bytes, max_values=4 * max_lines_for(gold.n), what="results file")
        if not isinstance(document, list):
            raise ValidationError('expected the official results file: a JSON array of {"question_id", "answer"}')
        json_files.check_unicode(data, document, "results file")  # an answer is hashed as UTF-8
        questions: list[Any] = []
        answers: list[str] = []
        bad: list[int] = []  # entries that are not an object with an integer question_id and a string answer
        for row, entry in enumerate(document):
            if not isinstance(entry, dict):
                bad.append(row)
                questions.append(None)
                answers.append("")
                continue
            question, answer = entry.get("question_id"), entry.get("answer")
            questions.append(str(question) if type(question) is int else None)
            answers.append(answer if isinstance(answer, str) else "")
            if type(question) is not int or not isinstance(answer, str):
                bad.append(row)
        positions = gold.id_index.get_indexer(pd.Index(questions, dtype=object)) if questions else np.zeros(0, int)
        counts = np.bincount(positions[positions >= 0], minlength=gold.n)
        if bad or (positions < 0).any() or counts.max(initial=0) > 1 or (counts == 0).any():
            self._refuse(data, gold, document, questions, positions, bad)
        del document
        predictions = np.empty((gold.n, 2), dtype=np.uint64)
        predictions[positions] = _answer_hashes(answers)
        return predictions

    @staticmethod
    def _refuse(
        data: bytes, gold: GoldSet, document: list[Any], questions: list[Any], positions: np.ndarray, bad: list[int]
    ) -> None:
        lines = np.asarray(json_files.entry_lines(data), dtype=np.int64)
        problems = ProblemList()
        # Only the problems shown are put in words (a 50 MB file may have a million bad entries).
        problems.add_lines(lines, np.asarray(bad, dtype=np.int64), lambda row: _entry_problem(row, document[row]))
        named = np.flatnonzero(np.asarray([question is not None for question in questions], dtype=bool))
        json_files.entry_problems(
            problems,
            positions[named],
            gold.n,
            lines[named],
            [questions[row] for row in named.tolist()],
            lambda row: str(gold.ids[row]),
            "question_id",
        )
        problems.raise_if_any()

    def prediction_shape(self, gold_n: int) -> tuple[int, ...]:
        return (gold_n, 2)

    def _derived_subsets(self, gold: GoldSet) -> dict[str, np.ndarray]:
        subsets: dict[str, np.ndarray] = {}
        for field in ("answer_type", "question_type"):
            if field in gold.fields:
                subsets.update(field_subsets(gold, field))
        return subsets

    def _score_columns(self, gold: GoldSet, stacked: np.ndarray, subsets: dict[str, np.ndarray]) -> Columns:
        points = points_of(gold, stacked).astype(np.float64)
        full = 3.0 * gold.labels["answers"].shape[1]
        columns = {"all": {"accuracy": points.mean(axis=1) / full * 100.0}}
        for name, indices in subsets.items():
            if len(indices):
                columns[name] = {"accuracy": points[:, indices].mean(axis=1) / full * 100.0}
        return columns

    def label_votes(self, gold: GoldSet, stacked: np.ndarray) -> list[LabelVotes]:
        return []  # ten free-text human answers: no label a vote could contradict

    # --- units: a question, scored in points ------------------------------------------------------------------

    def unit_points(self, gold: GoldSet) -> int:
        return 3 * int(gold.labels["answers"].shape[1])

    def unit_scores(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        return points_of(gold, stacked)

    def unit_correctness(self, gold: GoldSet, stacked: np.ndarray) -> np.ndarray:
        """Full credit (enough humans agree): what the probe check compares, a function of each question's
        prediction alone."""
        full: np.ndarray = points_of(gold, stacked) == self.unit_points(gold)
        return full

    def example_outcomes(self, gold: GoldSet, stacked: np.ndarray) -> Outcomes:
        points = points_of(gold, stacked)
        full = self.unit_points(gold)
        return {
            "counts": {"accuracy": (layout.by_example(points), full)},
            "all_right": layout.by_example((points == full).view(np.uint8)),
            "points": {"accuracy": full},
        }

    def zero_one_losses(self, gold: GoldSet, predictions: np.ndarray) -> np.ndarray:
        """The Ladder's losses: 1 - a question's accuracy (soft: 0, 0.1, 0.4, 0.7 or 1 with ten humans)."""
        points = points_of(gold, np.asarray(predictions)[None])[0]
        losses: np.ndarray = 1.0 - points / float(self.unit_points(gold))
        return losses

    # --- synthetic data ---------------------------------------------------------------------------------------

    def synthetic_gold(self, size: int, seed: int = 0, *, split: str = "dev") -> bytes:
        from . import vqa_synthetic

        return vqa_synthetic.gold(size, seed)

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
        """A results file answering each question with its most common human answer (in one of its spellings)
        with probability ``accuracy``, else with a wrong answer of the same type."""
        from . import vqa_synthetic

        accuracy = synthetic_files.check_accuracy("accuracy", accuracy)
        return vqa_synthetic.predictions(gold, accuracy, seed, shuffle=shuffle)

    def demo_references(self, split_slug: str) -> list[tuple[str, Scores, str]]:
        return []
