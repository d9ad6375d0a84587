"""VQA v2's files: the official annotations file (gold) and results file (predictions), and the official answer
normalisation they are compared in (see family.py's docstring for the quirks kept)."""

from __future__ import annotations

import array
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from app.evaluation import encoding, json_files
from app.evaluation.errors import ProblemList, ValidationError
from app.evaluation.gold import GoldSet, coded_fields, object_array
from app.evaluation.predictions import max_lines_for
from app.evaluation.text_files import show

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
    """(len, 2) uint64: each answer's stripped form and normalised form, hashed; each distinct answer once (and
    each distinct text stripped once: a results file repeats a few thousand answers 447,793 times)."""
    written, texts = pd.factorize(object_array(list(answers)))
    forms, distinct = pd.factorize(np.asarray([stripped(text) for text in texts.tolist()], dtype=object))
    codes = forms[written] if len(texts) else written
    forms = np.empty((len(distinct), 2), dtype=object)
    forms[:, 0] = distinct
    forms[:, 1] = [normalised(text) for text in distinct.tolist()]
    hashed: np.ndarray = encoding.text_hashes(forms)[codes]
    return hashed.reshape(len(answers), 2)


# --- gold -----------------------------------------------------------------------------------------------------

GOLD_DTYPE_FIELDS = ("normalise", "answers")
_FIELDS = ("answer_type", "question_type", "image_id")  # per-question fields kept (subsets, pages)
_ROWS = 1 << 16  # questions whose labels are made at a time
_FEW_ANSWERS = 2**16 - 30  # distinct answers whose codes fit two bytes (a question's 30 at most may come at once)


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
    """read_gold's checks and arrays, over the annotations as they come. Each distinct answer text and field value
    is kept once, the rest as codes: 4.5 million answers of a test-std-size file as strings would cost 270 MB."""
    problems = ProblemList()
    ids: array.array[int] | list[int] = array.array("q")  # a list once an id is past 64 bits
    texts: dict[str, int] = {}  # each distinct human answer -> its code
    # The code of every human answer, question by question: two bytes each while there are few distinct answers.
    codes = array.array("H")
    humans: int | None = None
    values: dict[str, dict[str, int]] = {name: {} for name in _FIELDS}  # a field's distinct values -> codes
    fields: dict[str, array.array[int]] = {name: array.array("i") for name in _FIELDS}
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
            problems.add(f"{where}: 'answers' must be an array of 1 to 30 human answers")
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
        try:
            ids.append(question)
        except OverflowError:
            ids = [*ids, question]
        codes.extend([texts.setdefault(text, len(texts)) for text in written])
        if codes.typecode == "H" and len(texts) > _FEW_ANSWERS:
            codes = array.array("i", codes)
        for name in _FIELDS:
            value = record.get(name, "")
            value = value if isinstance(value, str) else str(value) if type(value) is int else ""
            seen = values[name]
            fields[name].append(seen.setdefault(value, len(seen)))
    problems.raise_if_any()
    if humans is None:
        raise ValidationError(
            'expected the official annotations file: an object whose "annotations" is a non-empty list'
        )
    ints = np.frombuffer(ids, dtype=np.int64) if isinstance(ids, array.array) else None
    if (len(set(ids)) if ints is None else np.unique(ints).size) != len(ids):
        distinct, counts = np.unique(np.asarray([str(question) for question in ids], dtype=object), return_counts=True)
        raise ValidationError(f"question {distinct[counts > 1][0]} appears twice in the annotations file")
    hashed = _answer_hashes(list(texts))  # (distinct, 2)
    del texts
    # A question is unanimous when its humans' stripped forms are one: compared as codes of those forms.
    same_form = pd.factorize(hashed[:, 0])[0].astype(np.int32)
    by_question = np.frombuffer(codes, dtype=np.uint16 if codes.typecode == "H" else np.int32).reshape(len(ids), humans)
    form_codes = same_form[by_question]
    unanimous = (form_codes == form_codes[:, :1]).all(axis=1)
    del form_codes
    labels = np.empty(len(ids), dtype=_gold_dtype(humans))
    labels["normalise"] = ~unanimous
    answers = labels["answers"]
    for start in range(0, len(ids), _ROWS):  # a block at a time: no (n, m) temporary beside the labels
        rows, agreed = by_question[start : start + _ROWS], unanimous[start : start + _ROWS]
        block = hashed[rows, 1]
        block[agreed] = hashed[rows[agreed], 0]
        answers[start : start + _ROWS] = block
    del by_question, codes
    # Kept as codes: a column of strings is made only if something reads it (subsets read the codes).
    fields_made = coded_fields(
        {name: (np.frombuffer(fields[name], dtype=np.int32), _distinct(values[name])) for name in _FIELDS}
    )
    groups = np.arange(len(ids), dtype=np.int32)
    if ints is None:  # a question id past 64 bits: kept as text alone
        return GoldSet(task, object_array([str(question) for question in ids]), labels, groups, fields_made)
    # The ids become strings only if something asks for them (a score never does: parse_results reads int_ids).
    made: GoldSet = GoldSet.lazily(
        {"task": task, "labels": labels, "groups": groups, "fields": fields_made, "n_images": 1, "numeric_ids": False},
        {"ids": lambda: object_array([str(question) for question in ints.tolist()])},
        {"int_ids": ints},
    )
    return made


def _distinct(values: dict[str, int]) -> Callable[[], np.ndarray]:
    distinct = object_array(list(values))
    return lambda: distinct


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


# --- the results file -------------------------------------------------------------------------------------------


_NO_ENTRY: dict[str, Any] = {}  # what parse_results reads in place of an entry that is not an object


def _entry_problem(row: int, entry: Any) -> str:
    """What is wrong with one entry of a results file (one that is wrong)."""
    if not isinstance(entry, dict):
        return f"entry {row + 1:,}: expected an object with question_id and answer"
    question, answer = entry.get("question_id"), entry.get("answer")
    if type(question) is not int:
        return f"entry {row + 1:,}: question_id must be an integer, not {show(question)}"
    return f"entry {row + 1:,}: question {question}: answer must be a string, not {show(answer)}"


def parse_results(data: bytes, gold: GoldSet, max_bytes: int | None = None) -> np.ndarray:
    """The results JSON -> (n, 2) uint64 answer hashes in gold order; refuses naming lines and ids."""
    # An entry is an object and its two values; other keys and the separators are allowed for.
    document = json_files.load(data, max_bytes=max_bytes, max_values=4 * max_lines_for(gold.n), what="results file")
    if not isinstance(document, list):
        raise ValidationError('expected the official results file: a JSON array of {"question_id", "answer"}')
    json_files.check_unicode(data, document, "results file")  # an answer is hashed as UTF-8
    # Each entry's question id (an int, None where it is not one) and answer ("" where it is not a string).
    entries = [entry if type(entry) is dict else _NO_ENTRY for entry in document]
    questions: list[Any] = [entry.get("question_id") for entry in entries]
    answers: list[Any] = [entry.get("answer") for entry in entries]
    bad: list[int] = []  # entries that are not an object with an integer question_id and a string answer
    if set(map(type, questions)) != {int} or set(map(type, answers)) != {str}:  # in C: the usual file passes
        for row, entry in enumerate(entries):
            if type(questions[row]) is not int:
                questions[row] = None
            if type(answers[row]) is not str:
                answers[row] = ""
            if questions[row] is None or type(entry.get("answer")) is not str or entry is _NO_ENTRY:
                bad.append(row)
    del entries
    positions = _positions(gold, questions)
    counts = np.bincount(positions[positions >= 0], minlength=gold.n)
    if bad or (positions < 0).any() or counts.max(initial=0) > 1 or (counts == 0).any():
        _refuse(data, gold, document, [None if q is None else str(q) for q in questions], positions, bad)
    del document
    predictions = np.empty((gold.n, 2), dtype=np.uint64)
    predictions[positions] = _answer_hashes(answers)
    return predictions


def _positions(gold: GoldSet, questions: list[Any]) -> np.ndarray:
    """Each question's row in the gold set, -1 for one not there (or no integer): looked up as int64 where the
    gold ids are (no string made of either), else as text."""
    if not questions:
        return np.zeros(0, dtype=np.int64)
    if gold.int_ids is not None:
        try:
            values = np.array([-1 if q is None else q for q in questions], dtype=np.int64)
        except OverflowError:
            pass  # an id past 64 bits: no gold id, found as text below
        else:
            positions = gold.positions_of_ints(values)
            # -1 stood for "no integer": never a row, even where the gold has a question -1
            positions[[row for row, question in enumerate(questions) if question is None]] = -1
            return positions
    texts = pd.Index([None if q is None else str(q) for q in questions], dtype=object)
    found: np.ndarray = gold.id_index.get_indexer(texts)
    return found


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
        gold.id_at,
        "question_id",
    )
    problems.raise_if_any()
