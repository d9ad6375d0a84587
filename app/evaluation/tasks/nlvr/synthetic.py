"""Synthetic files of the NLVR family (NLVR2; NLVR, structured and over images): gold files, NLVR2 category
annotations and true/false prediction files.

Everything here is made up. The generators mimic the *shapes* of the official files (keys, identifier
schemes, group sizes, label balance, image-pair reuse) so the demo and the scale tests never need the real
data. Pure: standard library and numpy only; deterministic for a given ``seed``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

import numpy as np

from app.evaluation.tasks import synthetic_files as files

NLVR2_CATEGORIES: tuple[str, ...] = (
    "hard cardinality",
    "soft cardinality",
    "existential quantifier",
    "universal quantifier",
    "coordination",
    "coreference",
    "spatial relation",
    "comparison",
    "negation",
    "presupposition",
    "cc ambiguity",
    "pp ambiguity",
)

# NLVR2 shape: a set has 4 image pairs x 2 sentences.
PAIRS_PER_SET = 4
SENTENCES_PER_SET = 2
# NLVR shape: 4 examples per sentence, 6 images (box permutations) per example.
EXAMPLES_PER_NLVR_SENTENCE = 4
IMAGES_PER_NLVR_EXAMPLE = 6

# Number of True labels in one NLVR2 consistency group of 4 (mostly 2 of 4, as
# the sentences were written to be true for half of the pairs). Mean 2.05/4,
# i.e. ~51% True, and ~4% of groups all True.
_GROUP_TRUE_COUNTS = np.array([0, 1, 2, 3, 4])
_GROUP_TRUE_PROBS = np.array([0.01, 0.06, 0.84, 0.05, 0.04])
# Probability that sentence 1 of a set gets a fresh pair at a pair_id instead
# of reusing sentence 0's pair (those examples end up in no bias subset).
_P_FRESH_PAIR = 0.16
# Probability that a pair slot reuses a pair from an earlier set.
_P_CROSS_SET_REUSE = 0.04
# Probability that a set's sentence-1 labels follow sentence 0's arrangement
# (lowers the share of repeated pairs with both labels from ~52% to ~40%).
_P_ALIGNED_LABELS = 0.3


# --------------------------------------------------------------------------
# Vocabulary (invented for this project)
# --------------------------------------------------------------------------

# (singular, plural)
_NOUNS: tuple[tuple[str, str], ...] = (
    ("dog", "dogs"),
    ("cat", "cats"),
    ("penguin", "penguins"),
    ("bus", "buses"),
    ("bottle", "bottles"),
    ("cup", "cups"),
    ("horse", "horses"),
    ("duck", "ducks"),
    ("laptop", "laptops"),
    ("bicycle", "bicycles"),
    ("lamp", "lamps"),
    ("chair", "chairs"),
    ("sheep", "sheep"),
    ("goat", "goats"),
    ("rabbit", "rabbits"),
    ("parrot", "parrots"),
    ("tiger", "tigers"),
    ("zebra", "zebras"),
    ("truck", "trucks"),
    ("boat", "boats"),
    ("guitar", "guitars"),
    ("umbrella", "umbrellas"),
    ("vase", "vases"),
    ("candle", "candles"),
    ("teapot", "teapots"),
    ("backpack", "backpacks"),
    ("sofa", "sofas"),
    ("monkey", "monkeys"),
    ("seal", "seals"),
    ("owl", "owls"),
    ("pillow", "pillows"),
    ("shoe", "shoes"),
    ("kite", "kites"),
    ("drum", "drums"),
    ("lobster", "lobsters"),
    ("snail", "snails"),
    ("wolf", "wolves"),
    ("fox", "foxes"),
    ("camel", "camels"),
    ("tractor", "tractors"),
)
_ADJECTIVES: tuple[str, ...] = (
    "black",
    "white",
    "brown",
    "red",
    "blue",
    "green",
    "yellow",
    "grey",
    "small",
    "large",
    "striped",
    "spotted",
    "wooden",
    "shiny",
    "fluffy",
    "young",
    "old",
    "orange",
    "pink",
    "dark",
)
_NUMBERS: tuple[str, ...] = ("two", "three", "four", "five", "six", "seven", "eight")
_PLACES: tuple[str, ...] = (
    "on a wooden floor",
    "in front of a brick wall",
    "on green grass",
    "on a sandy beach",
    "near a window",
    "on a white background",
    "in the snow",
    "beside a fence",
    "on a kitchen table",
    "under a tree",
    "in shallow water",
    "on a red carpet",
    "next to a door",
    "on a gravel path",
    "in a cardboard box",
)
_POSES: tuple[str, ...] = (
    "facing the camera",
    "lying down",
    "standing upright",
    "partly hidden",
    "turned to the left",
    "turned to the right",
    "seen from above",
    "in motion",
    "close to the edge of the frame",
    "casting a long shadow",
)
_SIDES: tuple[str, ...] = ("left", "right")

# NLVR2 sentence templates. Slots: {n} noun, {ns} plural, {num} number word,
# {adj}/{adj2} adjectives, {place}, {pose}, {side}/{other} image sides.
_NLVR2_TEMPLATES: tuple[str, ...] = (
    "Exactly {num} {adj} {ns} can be seen in the {side} picture.",
    "The {side} image contains exactly {num} {adj} {ns} {place}.",
    "At least one {adj} {n} is {pose} {place}.",
    "In each image, a {adj} {n} is {pose}.",
    "The {side} image shows more {ns} than the {other} image.",
    "One image contains a single {adj} {n}, and the other image contains {num} {ns}.",
    "No image contains a {adj} {n} {place}.",
    "Both images show a {adj} {n} {place}.",
    "A {adj} {n} in the {side} image is {pose} next to a {adj2} {n}.",
    "The {n} in the {side} image is {adj} and it is {pose}.",
    "There are {num} {ns} in total, and all of them are {adj}.",
    "The {side} image has twice as many {ns} as the {other} image, and one {n} is {adj}.",
    "Each image shows one {adj} {n} {place}, and neither {n} is {pose}.",
    "There is a {adj} {n} above a {adj2} {n} in the {side} image.",
    "The {other} image does not show any {adj} {ns}, but the {side} image shows {num}.",
    "Fewer than {num} {ns} are {pose} in the {side} image.",
)

# Keyword rules that assign annotation categories from a sentence's wording.
_CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("hard cardinality", re.compile(r"\b(exactly|two|three|four|five|six|seven|eight|single|one)\b")),
    ("soft cardinality", re.compile(r"\b(at least|more than|fewer than|several|many|total)\b")),
    ("existential quantifier", re.compile(r"\b(there is|there are|at least one|contains a|show a|shows a)\b")),
    ("universal quantifier", re.compile(r"\b(each|both|all|every|neither)\b")),
    ("coordination", re.compile(r"\b(and|but)\b")),
    ("coreference", re.compile(r"\b(it|them|its|their)\b")),
    ("spatial relation", re.compile(r"\b(left|right|above|next to|near|under|beside|in front of)\b")),
    ("comparison", re.compile(r"\b(more|fewer|twice)\b")),
    ("negation", re.compile(r"\b(no|not|neither|any)\b")),
    ("presupposition", re.compile(r"\b(the other|the \w+ in)\b")),
    ("pp ambiguity", re.compile(r"\b(on|in|near|under|beside) (a|the) \w+ (on|in|near|under)\b")),
)

# NLVR (structured) vocabulary.
_NLVR_COLORS: tuple[str, ...] = ("Black", "Yellow", "#0099ff")
_NLVR_COLOR_WORDS = {"Black": "black", "Yellow": "yellow", "#0099ff": "blue"}
_NLVR_TYPES: tuple[str, ...] = ("square", "triangle", "circle")
_NLVR_SIZES: tuple[int, ...] = (10, 20, 30)
_NLVR_TEMPLATES: tuple[str, ...] = (
    "There is a {color} {shape} touching the edge of a box.",
    "There are exactly {num} {color} objects.",
    "Some box holds nothing but {color} items.",
    "At least one box contains {num} {shape}s.",
    "Some tower is built from {num} stacked blocks.",
    "Every box has a {color} item in it.",
    "There is a {color} {shape} closely touching a {color2} {shape2}.",
    "No box contains a {color} {shape}.",
    "There are {num} towers with a {color} block at the top.",
    "One of the boxes has exactly {num} items of the same color.",
    "One box holds both a {color} {shape} and a {color2} {shape2}.",
    "All the {shape}s are {color}.",
)
_NLVR_NUMBERS: tuple[str, ...] = ("two", "three", "four", "five")


# --------------------------------------------------------------------------
# NLVR2
# --------------------------------------------------------------------------


_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeiou])")


def _fix_articles(sentence: str) -> str:
    return _A_BEFORE_VOWEL.sub(lambda m: m.group(1) + "n ", sentence)


def _nlvr2_sentence(rng: np.random.Generator, noun: tuple[str, str]) -> str:
    tpl = _NLVR2_TEMPLATES[int(rng.integers(len(_NLVR2_TEMPLATES)))]
    side = _SIDES[int(rng.integers(2))]
    adj, adj2 = rng.choice(len(_ADJECTIVES), size=2, replace=False)
    return _fix_articles(
        tpl.format(
            n=noun[0],
            ns=noun[1],
            num=_NUMBERS[int(rng.integers(len(_NUMBERS)))],
            adj=_ADJECTIVES[int(adj)],
            adj2=_ADJECTIVES[int(adj2)],
            place=_PLACES[int(rng.integers(len(_PLACES)))],
            pose=_POSES[int(rng.integers(len(_POSES)))],
            side=side,
            other="right" if side == "left" else "left",
        )
    )


def _unique_nlvr2_sentence(rng: np.random.Generator, noun: tuple[str, str], seen: set[str]) -> str:
    for _ in range(50):
        s = _nlvr2_sentence(rng, noun)
        if s not in seen:
            seen.add(s)
            return s
    # Template space exhausted for this noun (only with very large files):
    # join two sentences into one, which multiplies the space.
    while True:
        a, b = _nlvr2_sentence(rng, noun), _nlvr2_sentence(rng, noun)
        s = f"{a[:-1]}; also, {b[0].lower()}{b[1:]}"
        if s not in seen:
            seen.add(s)
            return s


def _ranks_of(score: np.ndarray) -> np.ndarray:
    """Each entry's rank within its row, highest score first (0-based)."""
    ranks: np.ndarray = np.argsort(np.argsort(-score, axis=1), axis=1)
    return ranks


def _group_labels(rng: np.random.Generator, n_sets: int) -> np.ndarray:
    """Labels of shape (n_sets, 2 sentences, 4 pairs)."""
    k = rng.choice(_GROUP_TRUE_COUNTS, p=_GROUP_TRUE_PROBS, size=(n_sets, SENTENCES_PER_SET))
    labels = np.zeros((n_sets, SENTENCES_PER_SET, PAIRS_PER_SET), dtype=bool)
    # Sentence 0: k0 random pairs are True.
    labels[:, 0] = _ranks_of(rng.random((n_sets, PAIRS_PER_SET))) < k[:, [0]]
    # Sentence 1: independent arrangement, or (some sets) aligned with sentence 0.
    aligned = rng.random(n_sets) < _P_ALIGNED_LABELS
    score = rng.random((n_sets, PAIRS_PER_SET)) + 2.0 * (labels[:, 0] & aligned[:, None])
    labels[:, 1] = _ranks_of(score) < k[:, [1]]
    return labels


def nlvr2_gold(n_examples: int, split: str = "dev", seed: int = 0) -> bytes:
    """A synthetic NLVR2 gold file (JSON lines) with ``n_examples`` examples.

    Sets of 4 image pairs x 2 sentences (8 examples, identifiers
    ``{split}-{set_id}-{pair_id}-{sentence_id}``; ``split`` may contain '-',
    so read identifiers from the right); the last set is truncated to
    hit ``n_examples``. Within a set a pair mostly appears under both sentences,
    a few pairs recur across sets, and some sentence-1 slots get a fresh pair,
    so both the balanced (~1/3) and unbalanced (~1/2) subsets are sizeable.
    """
    n = files.check_count("n_examples", n_examples)
    if not isinstance(split, str) or not split or any(c in split for c in ',"\r\n\t '):
        raise ValueError(f"split must be a non-empty string without separators, got {split!r}")
    if n == 0:
        return b""
    rng = np.random.default_rng(seed)
    n_sets = -(-n // (PAIRS_PER_SET * SENTENCES_PER_SET))
    set_ids = rng.permutation(3 * n_sets + 10)[:n_sets].tolist()
    synset_idx = rng.integers(len(_NOUNS), size=n_sets)
    pair, pair_set = _nlvr2_pairs(rng, n_sets)
    labels = _group_labels(rng, n_sets)
    s_idx, t_idx, p_idx = _nlvr2_row_order(rng, n_sets, n)
    url = _nlvr2_urls(rng, synset_idx, pair_set)
    sentences, queries, writers = _nlvr2_texts(rng, synset_idx)
    syn_list = synset_idx.tolist()
    rows = zip(
        s_idx.tolist(),
        t_idx.tolist(),
        p_idx.tolist(),
        pair[s_idx, t_idx, p_idx].tolist(),
        labels[s_idx, t_idx, p_idx].tolist(),
        strict=True,
    )
    out = [
        files.dumps(
            {
                "identifier": f"{split}-{set_ids[s]}-{p}-{t}",
                "label": "True" if lab else "False",
                "sentence": sentences[s][t],
                "left_url": url(pi, 0),
                "right_url": url(pi, 1),
                "synset": _NOUNS[syn_list[s]][0],
                "query": queries[s],
                "writer": str(writers[s][t]),
            }
        )
        for s, t, p, pi, lab in rows
    ]
    return files.lines(out)


def _nlvr2_pairs(rng: np.random.Generator, n_sets: int) -> tuple[np.ndarray, np.ndarray]:
    """The image pair of every (set, sentence, pair_id) slot (n_sets, 2, 4), and the set whose synset names
    each pair's images (the set that first used it)."""
    base = np.arange(n_sets * PAIRS_PER_SET).reshape(n_sets, PAIRS_PER_SET)
    pair = np.repeat(base[:, None, :], SENTENCES_PER_SET, axis=1)
    # Cross-set reuse: a slot (both sentences) takes the pair of an earlier set's slot.
    if n_sets > 1:
        reuse = rng.random((n_sets, PAIRS_PER_SET)) < _P_CROSS_SET_REUSE
        reuse[0] = False
        rs, rp = np.nonzero(reuse)
        src = rng.integers(0, rs * PAIRS_PER_SET)  # any slot of an earlier set
        pair[rs, :, rp] = base.ravel()[src][:, None]
    # Fresh pair under sentence 1 for some pair_ids.
    fresh = rng.random((n_sets, PAIRS_PER_SET)) < _P_FRESH_PAIR
    n_fresh = int(fresh.sum())
    pair[:, 1][fresh] = n_sets * PAIRS_PER_SET + np.arange(n_fresh)
    pair_set = np.concatenate([np.repeat(np.arange(n_sets), PAIRS_PER_SET), np.nonzero(fresh)[0]])
    return pair, pair_set


def _nlvr2_row_order(rng: np.random.Generator, n_sets: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(set, sentence, pair_id) of the first n rows: sets in order; inside a set one sentence's block then the
    other's (random which first), pairs shuffled within a block."""
    s_idx, t_idx, p_idx = np.meshgrid(
        np.arange(n_sets), np.arange(SENTENCES_PER_SET), np.arange(PAIRS_PER_SET), indexing="ij"
    )
    s_idx, t_idx, p_idx = s_idx.ravel(), t_idx.ravel(), p_idx.ravel()
    flip = rng.integers(0, 2, size=n_sets)
    order = np.lexsort((rng.random(s_idx.size), t_idx ^ flip[s_idx], s_idx))[:n]
    return s_idx[order], t_idx[order], p_idx[order]


def _nlvr2_urls(rng: np.random.Generator, synset_idx: np.ndarray, pair_set: np.ndarray) -> Callable[[int, int], str]:
    """The URL of a pair's left (0) or right (1) image: one random token per image, so left and right differ."""
    n_pairs = pair_set.size
    hosts = ("images.example.org", "cdn.example.com", "photos.example.net", "img.example.edu")
    tokens = rng.integers(0, 2**62, size=(n_pairs, 2)).tolist()
    host_idx = rng.integers(len(hosts), size=(n_pairs, 2)).tolist()
    pair_slug = [_NOUNS[i][1].replace(" ", "-") for i in synset_idx[pair_set].tolist()]

    def url(pi: int, side: int) -> str:
        return f"https://{hosts[host_idx[pi][side]]}/{pair_slug[pi]}/{tokens[pi][side]:016x}.jpg"

    return url


def _nlvr2_texts(
    rng: np.random.Generator, synset_idx: np.ndarray
) -> tuple[list[list[str]], list[str], list[list[int]]]:
    """Per set: its two sentences, its image-search query and the writers of its sentences."""
    n_sets = synset_idx.size
    seen: set[str] = set()
    sentences = [
        [_unique_nlvr2_sentence(rng, _NOUNS[int(synset_idx[s])], seen) for _ in range(SENTENCES_PER_SET)]
        for s in range(n_sets)
    ]
    q_adj = rng.integers(len(_ADJECTIVES), size=n_sets).tolist()
    q_num = rng.integers(0, 60, size=n_sets).tolist()
    queries = [f"{_ADJECTIVES[a]} {_NOUNS[i][1]}{q}" for a, i, q in zip(q_adj, synset_idx.tolist(), q_num, strict=True)]
    # A few prolific writers, a long tail of occasional ones (Zipf-like).
    writer_ids = rng.permutation(200)[:70]
    w = 1.0 / np.arange(1, 71)
    writers = writer_ids[rng.choice(70, p=w / w.sum(), size=(n_sets, SENTENCES_PER_SET))].tolist()
    return sentences, queries, writers


# --------------------------------------------------------------------------
# NLVR
# --------------------------------------------------------------------------


def _nlvr_sentence(rng: np.random.Generator) -> str:
    tpl = _NLVR_TEMPLATES[int(rng.integers(len(_NLVR_TEMPLATES)))]
    c1, c2 = rng.choice(len(_NLVR_COLORS), size=2, replace=False)
    return tpl.format(
        color=_NLVR_COLOR_WORDS[_NLVR_COLORS[int(c1)]],
        color2=_NLVR_COLOR_WORDS[_NLVR_COLORS[int(c2)]],
        shape=_NLVR_TYPES[int(rng.integers(3))],
        shape2=_NLVR_TYPES[int(rng.integers(3))],
        num=_NLVR_NUMBERS[int(rng.integers(len(_NLVR_NUMBERS)))],
    )


def _nlvr_boxes(rng: np.random.Generator, n: int) -> list[list[list[dict[str, object]]]]:
    """The structured representation of n examples: 3 boxes each, 1-4 objects a box."""
    counts = rng.integers(1, 5, size=(n, 3))
    n_obj = int(counts.sum())
    x = rng.integers(0, 91, size=n_obj).tolist()
    y = rng.integers(0, 91, size=n_obj).tolist()
    typ = rng.choice(3, p=[0.72, 0.15, 0.13], size=n_obj).tolist()
    col = rng.integers(0, 3, size=n_obj).tolist()
    size = rng.choice(3, p=[0.15, 0.72, 0.13], size=n_obj).tolist()
    examples = []
    j = 0
    for example_counts in counts.tolist():
        boxes = []
        for c in example_counts:
            box = []
            for _ in range(c):
                box.append(
                    {
                        "x_loc": x[j],
                        "y_loc": y[j],
                        "type": _NLVR_TYPES[typ[j]],
                        "color": _NLVR_COLORS[col[j]],
                        "size": _NLVR_SIZES[size[j]],
                    }
                )
                j += 1
            boxes.append(box)
        examples.append(boxes)
    return examples


def nlvr_gold(n_examples: int, seed: int = 0) -> bytes:
    """A synthetic NLVR gold file (structured format, JSON lines).

    Identifiers ``{n}-{m}``, m = 0..3 (4 examples per sentence ``n``; the last
    sentence is truncated to hit ``n_examples``); labels ``true``/``false``
    (~55% true); a small ``structured_rep`` of 3 boxes. Every example stands
    for 6 images (box permutations k = 0..5), implicit in the file.
    """
    n = files.check_count("n_examples", n_examples)
    if n == 0:
        return b""
    rng = np.random.default_rng(seed)
    n_sent = -(-n // EXAMPLES_PER_NLVR_SENTENCE)
    sent_ids = rng.permutation(4 * n_sent + 10)[:n_sent].tolist()
    sentences = [_nlvr_sentence(rng) for _ in range(n_sent)]
    directory = rng.integers(0, 6, size=n_sent).tolist()
    labels = (rng.random(n) < 0.553).tolist()
    # Rows: sentences in order, examples m = 0..3 in a shuffled order.
    ms = np.argsort(rng.random((n_sent, EXAMPLES_PER_NLVR_SENTENCE)), axis=1).ravel()[:n].tolist()
    boxes = _nlvr_boxes(rng, n)
    out = []
    for i in range(n):
        s = i // EXAMPLES_PER_NLVR_SENTENCE
        out.append(
            files.dumps(
                {
                    "identifier": f"{sent_ids[s]}-{ms[i]}",
                    "label": "true" if labels[i] else "false",
                    "sentence": sentences[s],
                    "directory": str(directory[s]),
                    "structured_rep": boxes[i],
                }
            )
        )
    return files.lines(out)


# --------------------------------------------------------------------------
# NLVR2 category annotations
# --------------------------------------------------------------------------


def _categories_for(sentence: str, rng: np.random.Generator) -> list[str]:
    low = sentence.lower()
    cats = [name for name, rx in _CATEGORY_RULES if rx.search(low)]
    if not cats:
        cats = [NLVR2_CATEGORIES[int(rng.integers(len(NLVR2_CATEGORIES)))]]
    k = int(rng.integers(1, 4))
    if len(cats) > k:
        keep = np.sort(rng.choice(len(cats), size=k, replace=False))
        cats = [cats[i] for i in keep.tolist()]
    return cats


def nlvr2_annotations(gold: bytes, n_sentences: int = 100, seed: int = 0, *, crlf: bool = False) -> bytes:
    """A category annotation file in the ``annotated_dev_examples.txt`` format.

    Blocks separated by one blank line: the sentence (verbatim from ``gold``),
    then 1-3 lines ``* <category>``. ``n_sentences`` distinct sentences are
    drawn from the gold's distinct sentences (all of them if there are fewer).
    ``crlf=True`` uses ``\\r\\n`` line endings like the official file.
    """
    k = files.check_count("n_sentences", n_sentences)
    distinct = list(dict.fromkeys(row["sentence"] for row in files.json_lines(gold)))
    if k == 0 or not distinct:
        return b""
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(distinct), size=min(k, len(distinct)), replace=False).tolist()
    lines: list[str] = []
    for b, i in enumerate(pick):
        if b:
            lines.append("")
        s = distinct[i]
        lines.append(s)
        lines.extend(f"* {c}" for c in _categories_for(s, rng))
    return files.lines(lines, crlf=crlf)


# --------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------


def nlvr2_group(identifier: str) -> str:
    """An NLVR2 identifier's consistency group: split-set-sentence (the pair id dropped)."""
    parts = identifier.split("-")
    return "-".join(parts[:-2] + parts[-1:])


def nlvr_group(identifier: str) -> str:
    """An NLVR identifier's consistency group: the sentence n of n-m."""
    return identifier.split("-")[0]


@functools.lru_cache(maxsize=2)
def _binary_gold(gold: bytes, group_of: Callable[[str], str]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Identifiers, boolean labels and integer group codes of a binary gold file (read-only). Kept for the last
    two files: the demo draws some ten prediction files per gold file, and parsing it was most of the demo's
    time."""
    ids: list[str] = []
    labels: list[bool] = []
    for row in files.json_lines(gold):
        ids.append(str(row["identifier"]))
        labels.append(str(row["label"]).strip().lower() == "true")
    keys = [group_of(ident) for ident in ids]
    _, groups = np.unique(np.array(keys, dtype=object), return_inverse=True) if keys else (None, np.zeros(0, int))
    label_array, group_array = np.array(labels, dtype=bool), np.array(groups, dtype=np.int64)
    label_array.flags.writeable = group_array.flags.writeable = False
    return tuple(ids), label_array, group_array


def _image_keys(ids: Sequence[str], examples: np.ndarray, images: np.ndarray, split: str) -> list[str]:
    """Image names {split}-n-m-k.png of the given (example, image) positions."""
    prefix = f"{split}-" if split else ""
    return [f"{prefix}{ids[e]}-{k}.png" for e, k in zip(examples.tolist(), images.tolist(), strict=True)]


def predictions(
    gold: bytes,
    accuracy: float,
    rng: np.random.Generator,
    *,
    group_of: Callable[[str], str],
    n_images: int,
    words: tuple[str, str],
    header: bool,
    shuffle: bool,
    split: str,
    group_correlation: float,
) -> bytes:
    """A true/false prediction file for ``gold``: each prediction (each image when ``n_images`` > 1) right
    with probability ``accuracy``, a consistency group (``group_of`` an identifier) sharing one draw with
    probability ``group_correlation``; ``words`` write true and false."""
    ids, labels, groups = _binary_gold(gold, group_of)
    if n_images > 1:
        n = len(ids)
        k = np.tile(np.arange(n_images), n)
        ex = np.repeat(np.arange(n), n_images)
        correct = files.correct_mask(rng, accuracy, groups[ex], group_correlation)
        pred = np.where(correct, labels[ex], ~labels[ex])
        keys: Sequence[str] = _image_keys(ids, ex, k, split)
    else:
        correct = files.correct_mask(rng, accuracy, groups, group_correlation)
        pred = np.where(correct, labels, ~labels)
        keys = ids
    order = rng.permutation(len(keys)) if shuffle else np.arange(len(keys))
    pred_l = pred.tolist()
    rows = ["identifier,prediction"] if header else []
    rows.extend(f"{keys[i]},{words[0] if pred_l[i] else words[1]}" for i in order.tolist())
    return files.lines(rows)


def constant(
    gold: bytes,
    *,
    group_of: Callable[[str], str],
    n_images: int,
    word: str,
    header: bool,
    shuffle: bool,
    split: str,
    seed: int,
) -> bytes:
    """One prediction, ``word``, for every example (every image when ``n_images`` > 1) of ``gold``."""
    ids, _, _ = _binary_gold(gold, group_of)
    if n_images > 1:
        n = len(ids)
        keys: Sequence[str] = _image_keys(
            ids, np.repeat(np.arange(n), n_images), np.tile(np.arange(n_images), n), split
        )
    else:
        keys = ids
    if shuffle:
        keys = [keys[i] for i in np.random.default_rng(seed).permutation(len(keys)).tolist()]
    rows = ["identifier,prediction"] if header else []
    rows.extend(f"{k},{word}" for k in keys)
    return files.lines(rows)
