"""Synthetic benchmark data: gold files, category annotations and prediction files.

Everything here is made up. The generators mimic the *shapes* of the official
NLVR, NLVR2 and VCR files (keys, identifier schemes, group sizes, label balance,
image-pair reuse) so the demo and the scale tests never need the real data.

Pure module: standard library and numpy only. Every function is deterministic
for a given ``seed`` and returns UTF-8 ``bytes`` with ``\\n`` line endings and a
final newline (an empty file is ``b""``).

Public interface
----------------
``nlvr2_gold(n_examples, split="dev", seed=0)``
``nlvr_gold(n_examples, seed=0)``
``vcr_gold(n_questions, seed=0, regions=(...))``
``nlvr2_annotations(gold, n_sentences=100, seed=0)``
``predictions(task, gold, accuracy, seed=0, *, header=False, shuffle=True, ...)``
``all_true(task, gold, **kw)``
``TASK_NAMES``
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np

__all__ = [
    "TASK_NAMES",
    "VCR_HEADER",
    "NLVR2_CATEGORIES",
    "nlvr2_gold",
    "nlvr_gold",
    "vcr_gold",
    "nlvr2_annotations",
    "predictions",
    "all_true",
]

TASK_NAMES: tuple[str, ...] = ("nlvr2", "nlvr-structured", "nlvr-images", "vcr")
BINARY_TASKS: tuple[str, ...] = ("nlvr2", "nlvr-structured", "nlvr-images")

VCR_HEADER: tuple[str, ...] = (
    ("annot_id",)
    + tuple(f"answer_{i}" for i in range(4))
    + tuple(f"rationale_conditioned_on_a{a}_{r}" for a in range(4) for r in range(4))
)

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


def _check_count(name: str, n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return int(n)


def _lines(lines: Sequence[str], crlf: bool = False) -> bytes:
    if not lines:
        return b""
    nl = "\r\n" if crlf else "\n"
    return (nl.join(lines) + nl).encode("utf-8")


def _dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


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

# VCR vocabulary.
_VCR_OBJECT_POOL: tuple[str, ...] = (
    "person",
    "person",
    "person",
    "car",
    "chair",
    "cup",
    "dog",
    "bottle",
    "handbag",
    "tie",
)
_VCR_QUESTIONS: tuple[tuple[object, ...], ...] = (
    ("What", "is", [0], "busy", "with", "?"),
    ("Why", "is", [0], "smiling", "?"),
    ("What", "are", [0, 1], "talking", "about", "?"),
    ("How", "does", [1], "feel", "about", [0], "?"),
    ("Where", "are", [0, 1], "going", "?"),
    ("What", "does", [0], "plan", "to", "do", "afterwards", "?"),
    ("Why", "does", [1], "glance", "at", [0], "?"),
    ("What", "is", [0], "'", "s", "job", "?"),
    ("Is", [0], "in", "a", "hurry", "?"),
    ("What", "happened", "just", "before", "this", "moment", "?"),
    ("Who", "is", [1], "waiting", "for", "?"),
    ("Why", "are", [0, 1], "standing", "so", "close", "?"),
)
_VCR_SUBJECTS: tuple[object, ...] = ([0], [1], [0, 1], "He", "She", "They", "Someone")
_VCR_PREDICATES: tuple[tuple[str, ...], ...] = (
    ("is", "waiting", "for", "a", "bus", "."),
    ("is", "about", "to", "leave", "the", "room", "."),
    ("is", "telling", "a", "story", "about", "a", "fishing", "trip", "."),
    ("is", "worried", "about", "the", "news", "."),
    ("is", "looking", "for", "a", "lost", "key", "."),
    ("works", "at", "a", "small", "shop", "."),
    ("just", "heard", "a", "loud", "noise", "."),
    ("is", "celebrating", "a", "birthday", "."),
    ("wants", "to", "buy", "something", "to", "eat", "."),
    ("is", "going", "home", "after", "work", "."),
    ("is", "trying", "to", "stay", "calm", "."),
    ("is", "asking", "the", "way", "to", "the", "station", "."),
    ("is", "holding", "a", "cup", "of", "tea", "."),
    ("is", "in", "charge", "of", "the", "meeting", "."),
    ("is", "getting", "ready", "for", "a", "trip", "."),
    ("is", "surprised", "by", "the", "visitor", "."),
)
_VCR_REASONS: tuple[tuple[str, ...], ...] = (
    ("because",),
    ("since",),
    ("as", "shown", "by", "the", "fact", "that"),
)


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


def _group_labels(rng: np.random.Generator, n_sets: int) -> np.ndarray:
    """Labels of shape (n_sets, 2 sentences, 4 pairs)."""
    k = rng.choice(_GROUP_TRUE_COUNTS, p=_GROUP_TRUE_PROBS, size=(n_sets, SENTENCES_PER_SET))
    labels = np.zeros((n_sets, SENTENCES_PER_SET, PAIRS_PER_SET), dtype=bool)
    ranks_of = lambda score: np.argsort(np.argsort(-score, axis=1), axis=1)  # noqa: E731
    # Sentence 0: k0 random pairs are True.
    labels[:, 0] = ranks_of(rng.random((n_sets, PAIRS_PER_SET))) < k[:, [0]]
    # Sentence 1: independent arrangement, or (some sets) aligned with sentence 0.
    aligned = rng.random(n_sets) < _P_ALIGNED_LABELS
    score = rng.random((n_sets, PAIRS_PER_SET)) + 2.0 * (labels[:, 0] & aligned[:, None])
    labels[:, 1] = ranks_of(score) < k[:, [1]]
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
    n = _check_count("n_examples", n_examples)
    # The split prefix may itself contain '-' ("test-u"): identifiers are then
    # read from the right (the last three fields are set, pair and sentence).
    if not isinstance(split, str) or not split or any(c in split for c in ',"\r\n\t '):
        raise ValueError(f"split must be a non-empty string without separators, got {split!r}")
    if n == 0:
        return b""
    rng = np.random.default_rng(seed)
    n_sets = -(-n // (PAIRS_PER_SET * SENTENCES_PER_SET))
    set_ids = rng.permutation(3 * n_sets + 10)[:n_sets]
    synset_idx = rng.integers(len(_NOUNS), size=n_sets)

    # Pair index of every (set, sentence, pair_id) slot.
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
    n_pairs = n_sets * PAIRS_PER_SET + n_fresh
    # The set whose synset names a pair's images (the set that first used it).
    pair_set = np.concatenate([np.repeat(np.arange(n_sets), PAIRS_PER_SET), np.nonzero(fresh)[0]])

    labels = _group_labels(rng, n_sets)

    # Row order: sets in order; inside a set one sentence's block then the
    # other's (random which first), pairs shuffled within a block.
    s_idx, t_idx, p_idx = np.meshgrid(
        np.arange(n_sets), np.arange(SENTENCES_PER_SET), np.arange(PAIRS_PER_SET), indexing="ij"
    )
    s_idx, t_idx, p_idx = s_idx.ravel(), t_idx.ravel(), p_idx.ravel()
    flip = rng.integers(0, 2, size=n_sets)
    order = np.lexsort((rng.random(s_idx.size), t_idx ^ flip[s_idx], s_idx))[:n]
    s_idx, t_idx, p_idx = s_idx[order], t_idx[order], p_idx[order]

    # URLs: one random token per image; left and right images differ.
    hosts = ("images.example.org", "cdn.example.com", "photos.example.net", "img.example.edu")
    tokens = rng.integers(0, 2**62, size=(n_pairs, 2)).tolist()
    host_idx = rng.integers(len(hosts), size=(n_pairs, 2)).tolist()
    pair_slug = [_NOUNS[i][1].replace(" ", "-") for i in synset_idx[pair_set].tolist()]

    def url(pi: int, side: int) -> str:
        return f"https://{hosts[host_idx[pi][side]]}/{pair_slug[pi]}/{tokens[pi][side]:016x}.jpg"

    # Sentences, queries, writers per (set, sentence) group.
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

    pair_rows = pair[s_idx, t_idx, p_idx].tolist()
    label_rows = labels[s_idx, t_idx, p_idx].tolist()
    set_id_list = set_ids.tolist()
    syn_list = synset_idx.tolist()
    out = []
    for s, t, p, pi, lab in zip(s_idx.tolist(), t_idx.tolist(), p_idx.tolist(), pair_rows, label_rows, strict=True):
        out.append(
            _dumps(
                {
                    "identifier": f"{split}-{set_id_list[s]}-{p}-{t}",
                    "label": "True" if lab else "False",
                    "sentence": sentences[s][t],
                    "left_url": url(pi, 0),
                    "right_url": url(pi, 1),
                    "synset": _NOUNS[syn_list[s]][0],
                    "query": queries[s],
                    "writer": str(writers[s][t]),
                }
            )
        )
    return _lines(out)


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


def nlvr_gold(n_examples: int, seed: int = 0) -> bytes:
    """A synthetic NLVR gold file (structured format, JSON lines).

    Identifiers ``{n}-{m}``, m = 0..3 (4 examples per sentence ``n``; the last
    sentence is truncated to hit ``n_examples``); labels ``true``/``false``
    (~55% true); a small ``structured_rep`` of 3 boxes. Every example stands
    for 6 images (box permutations k = 0..5), implicit in the file.
    """
    n = _check_count("n_examples", n_examples)
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
    # Objects: 3 boxes per example, 1-4 objects per box.
    counts = rng.integers(1, 5, size=(n, 3))
    n_obj = int(counts.sum())
    x = rng.integers(0, 91, size=n_obj).tolist()
    y = rng.integers(0, 91, size=n_obj).tolist()
    typ = rng.choice(3, p=[0.72, 0.15, 0.13], size=n_obj).tolist()
    col = rng.integers(0, 3, size=n_obj).tolist()
    size = rng.choice(3, p=[0.15, 0.72, 0.13], size=n_obj).tolist()
    counts_l = counts.tolist()
    out = []
    j = 0
    for i in range(n):
        s = i // EXAMPLES_PER_NLVR_SENTENCE
        boxes = []
        for c in counts_l[i]:
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
        out.append(
            _dumps(
                {
                    "identifier": f"{sent_ids[s]}-{ms[i]}",
                    "label": "true" if labels[i] else "false",
                    "sentence": sentences[s],
                    "directory": str(directory[s]),
                    "structured_rep": boxes,
                }
            )
        )
    return _lines(out)


# --------------------------------------------------------------------------
# VCR
# --------------------------------------------------------------------------


def _vcr_choice_pool(rng: np.random.Generator, size: int) -> list[str]:
    """Pre-serialised token lists usable as answers or rationales."""
    pool = []
    for _ in range(size):
        subj = _VCR_SUBJECTS[int(rng.integers(len(_VCR_SUBJECTS)))]
        pred = list(_VCR_PREDICATES[int(rng.integers(len(_VCR_PREDICATES)))])
        if subj in ("They",) or subj == [0, 1]:
            pred[0] = {"is": "are", "works": "work", "wants": "want"}.get(pred[0], pred[0])
        tokens: list[object] = [subj, *pred]
        if rng.random() < 0.4:
            reason = list(_VCR_REASONS[int(rng.integers(len(_VCR_REASONS)))])
            other = list(_VCR_PREDICATES[int(rng.integers(len(_VCR_PREDICATES)))])
            tokens = [*tokens[:-1], *reason, [1], *other]
        pool.append(_dumps(tokens))
    return pool


def vcr_gold(
    n_questions: int,
    seed: int = 0,
    regions: tuple[str, ...] = ("east-asia", "south-asia", "africa", "west"),
) -> bytes:
    """A synthetic VCR annotation file (JSON lines), ``annot_id`` = ``val-{i}``.

    ``answer_label``/``rationale_label`` uniform in 0..3 and independent;
    ``region`` drawn from ``regions`` (empty tuple: no region field);
    ``question`` and the 4 + 4 choices are token lists in which object
    references are lists of indices into ``objects``.
    """
    n = _check_count("n_questions", n_questions)
    regions = tuple(regions)
    if n == 0:
        return b""
    rng = np.random.default_rng(seed)
    answer = rng.integers(0, 4, size=n).tolist()
    rationale = rng.integers(0, 4, size=n).tolist()
    region = rng.integers(0, len(regions), size=n).tolist() if regions else None
    questions = [_dumps(list(q)) for q in _VCR_QUESTIONS]
    q_idx = rng.integers(len(questions), size=n).tolist()
    pool = _vcr_choice_pool(rng, 400)
    choices = rng.integers(len(pool), size=(n, 8)).tolist()
    # Several questions per image, like the real files.
    img = np.cumsum(rng.random(n) < 0.35).tolist()
    obj_lists = []
    for _ in range(64):
        k = int(rng.integers(2, 6))
        objs = ["person", "person"] + [
            _VCR_OBJECT_POOL[i] for i in rng.integers(len(_VCR_OBJECT_POOL), size=k - 2).tolist()
        ]
        obj_lists.append(_dumps(objs))
    obj_idx = rng.integers(len(obj_lists), size=img[-1] + 1).tolist()
    region_json = [_dumps(r) for r in regions]
    out = []
    for i in range(n):
        ch = choices[i]
        parts = [
            f'"annot_id": "val-{i}"',
            f'"img_fn": "synthetic_vcr/{img[i]}.jpg"',
            f'"img_id": "val-{img[i]}"',
            f'"objects": {obj_lists[obj_idx[img[i]]]}',
            f'"question": {questions[q_idx[i]]}',
            f'"answer_choices": [{pool[ch[0]]}, {pool[ch[1]]}, {pool[ch[2]]}, {pool[ch[3]]}]',
            f'"rationale_choices": [{pool[ch[4]]}, {pool[ch[5]]}, {pool[ch[6]]}, {pool[ch[7]]}]',
            f'"answer_label": {answer[i]}',
            f'"rationale_label": {rationale[i]}',
        ]
        if region is not None:
            parts.append(f'"region": {region_json[region[i]]}')
        out.append("{" + ", ".join(parts) + "}")
    return _lines(out)


# --------------------------------------------------------------------------
# NLVR2 category annotations
# --------------------------------------------------------------------------


def _iter_json_lines(gold: bytes | str):
    text = gold.decode("utf-8-sig") if isinstance(gold, (bytes, bytearray)) else gold
    for line in text.splitlines():
        line = line.strip()
        if line:
            yield json.loads(line)


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
    k = _check_count("n_sentences", n_sentences)
    distinct = list(dict.fromkeys(row["sentence"] for row in _iter_json_lines(gold)))
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
    return _lines(lines, crlf=crlf)


# --------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------


def _binary_gold(task: str, gold: bytes) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Identifiers, boolean labels and integer group codes of a binary gold file."""
    ids: list[str] = []
    labels: list[bool] = []
    for row in _iter_json_lines(gold):
        ids.append(str(row["identifier"]))
        labels.append(str(row["label"]).strip().lower() == "true")
    if task == "nlvr2":
        keys = []
        for ident in ids:
            parts = ident.split("-")
            keys.append("-".join(parts[:-2] + parts[-1:]))
    else:
        keys = [ident.split("-")[0] for ident in ids]
    _, groups = np.unique(np.array(keys, dtype=object), return_inverse=True) if keys else (None, np.zeros(0, int))
    return ids, np.array(labels, dtype=bool), np.asarray(groups, dtype=np.int64)


def _correct_mask(
    rng: np.random.Generator, accuracy: float, groups: np.ndarray, group_correlation: float
) -> np.ndarray:
    """Bernoulli(accuracy) per item; with probability ``group_correlation`` a
    group shares one draw (correlated errors; same expected accuracy)."""
    own = rng.random(groups.size) < accuracy
    if group_correlation <= 0 or groups.size == 0:
        return own
    n_groups = int(groups.max()) + 1
    shared = rng.random(n_groups) < accuracy
    use_shared = rng.random(n_groups) < group_correlation
    return np.where(use_shared[groups], shared[groups], own)


def _check_accuracy(name: str, value: float) -> float:
    v = float(value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {value!r}")
    return v


def predictions(
    task: str,
    gold: bytes,
    accuracy: float,
    seed: int = 0,
    *,
    header: bool = False,
    shuffle: bool = True,
    split: str = "dev",
    group_correlation: float = 0.0,
    rationale_accuracy: float | None = None,
) -> bytes:
    """A valid prediction file for ``gold`` whose expected accuracy is ``accuracy``.

    Binary tasks: each prediction is correct with probability ``accuracy``
    (``nlvr-images``: each image). ``group_correlation`` in [0, 1] makes a
    consistency group (NLVR2 sentence, NLVR sentence) share one draw with that
    probability, keeping the expected accuracy. Output: ``nlvr2`` lines
    ``identifier,True|False``; ``nlvr-structured`` ``n-m,true|false``;
    ``nlvr-images`` ``{split}-n-m-k.png,true|false`` for k = 0..5.
    ``header=True`` prepends ``identifier,prediction``.

    ``vcr``: header plus 21 columns; 4 answer probabilities and 16 rationale
    probabilities (4 per conditioning answer), softmax-like, 4 decimals. The
    answer argmax is right with probability ``accuracy``, the argmax of the
    rationale block conditioned on the gold answer is right with probability
    ``rationale_accuracy`` (default ``accuracy``), independently.
    """
    if task not in TASK_NAMES:
        raise ValueError(f"unknown task {task!r}; expected one of {TASK_NAMES}")
    accuracy = _check_accuracy("accuracy", accuracy)
    group_correlation = _check_accuracy("group_correlation", group_correlation)
    rng = np.random.default_rng(seed)
    if task == "vcr":
        r_acc = accuracy if rationale_accuracy is None else _check_accuracy("rationale_accuracy", rationale_accuracy)
        return _vcr_predictions(rng, gold, accuracy, r_acc, shuffle)

    ids, labels, groups = _binary_gold(task, gold)
    if task == "nlvr-images":
        n = len(ids)
        k = np.tile(np.arange(IMAGES_PER_NLVR_EXAMPLE), n)
        ex = np.repeat(np.arange(n), IMAGES_PER_NLVR_EXAMPLE)
        correct = _correct_mask(rng, accuracy, groups[ex], group_correlation)
        pred = np.where(correct, labels[ex], ~labels[ex])
        prefix = f"{split}-" if split else ""
        keys = [f"{prefix}{ids[e]}-{kk}.png" for e, kk in zip(ex.tolist(), k.tolist(), strict=True)]
    else:
        correct = _correct_mask(rng, accuracy, groups, group_correlation)
        pred = np.where(correct, labels, ~labels)
        keys = ids
    words = ("True", "False") if task == "nlvr2" else ("true", "false")
    order = rng.permutation(len(keys)) if shuffle else np.arange(len(keys))
    pred_l = pred.tolist()
    lines = ["identifier,prediction"] if header else []
    lines.extend(f"{keys[i]},{words[0] if pred_l[i] else words[1]}" for i in order.tolist())
    return _lines(lines)


def _softmax_rows(rng: np.random.Generator, n: int, target: np.ndarray) -> np.ndarray:
    """(n, 4) probabilities rounded to 4 decimals whose unique argmax is ``target``."""
    logits = rng.normal(0.0, 1.0, size=(n, 4))
    top = logits.max(axis=1) + 0.5 + rng.exponential(1.0, size=n)
    logits[np.arange(n), target] = top
    e = np.exp(logits - top[:, None])
    # The margin >= 0.5 keeps the target at least ~0.09 above the runner-up,
    # so rounding to 4 decimals cannot create a tie.
    return np.round(e / e.sum(axis=1, keepdims=True), 4)


def _vcr_predictions(rng: np.random.Generator, gold: bytes, accuracy: float, r_accuracy: float, shuffle: bool) -> bytes:
    ids: list[str] = []
    ans: list[int] = []
    rat: list[int] = []
    for row in _iter_json_lines(gold):
        ids.append(str(row["annot_id"]))
        ans.append(int(row["answer_label"]))
        rat.append(int(row["rationale_label"]))
    n = len(ids)
    a = np.asarray(ans, dtype=np.int64)
    r = np.asarray(rat, dtype=np.int64)
    rows = np.arange(n)

    def argmax_targets(gold_idx: np.ndarray, acc: float) -> np.ndarray:
        right = rng.random(n) < acc
        wrong = (gold_idx + rng.integers(1, 4, size=n)) % 4  # uniform among the other 3
        return np.where(right, gold_idx, wrong)

    a_target = argmax_targets(a, accuracy)
    r_target_gold = argmax_targets(r, r_accuracy)
    # Rationale blocks conditioned on the non-gold answers: random argmax.
    r_targets = rng.integers(0, 4, size=(n, 4))
    r_targets[rows, a] = r_target_gold
    scores = np.empty((n, 20))
    scores[:, :4] = _softmax_rows(rng, n, a_target)
    for j in range(4):
        scores[:, 4 + 4 * j : 8 + 4 * j] = _softmax_rows(rng, n, r_targets[:, j])
    order = rng.permutation(n) if shuffle else rows
    fmt = "%s" + ",%.4f" * 20
    score_rows = scores.tolist()
    lines = [",".join(VCR_HEADER)]
    lines.extend(fmt % (ids[i], *score_rows[i]) for i in order.tolist())
    return _lines(lines)


def all_true(task: str, gold: bytes, **kw) -> bytes:
    """Predict true for every example (binary tasks only).

    Accepts ``header``, ``shuffle`` (default False here) and ``split`` like
    :func:`predictions`.
    """
    if task not in BINARY_TASKS:
        raise ValueError(f"all_true is for binary tasks {BINARY_TASKS}, not {task!r}")
    header = kw.pop("header", False)
    shuffle = kw.pop("shuffle", False)
    split = kw.pop("split", "dev")
    seed = kw.pop("seed", 0)
    if kw:
        raise TypeError(f"unexpected keyword arguments: {sorted(kw)}")
    ids, _, _ = _binary_gold(task, gold)
    if task == "nlvr-images":
        prefix = f"{split}-" if split else ""
        keys = [f"{prefix}{i}-{k}.png" for i in ids for k in range(IMAGES_PER_NLVR_EXAMPLE)]
    else:
        keys = ids
    if shuffle:
        keys = [keys[i] for i in np.random.default_rng(seed).permutation(len(keys)).tolist()]
    word = "True" if task == "nlvr2" else "true"
    lines = ["identifier,prediction"] if header else []
    lines.extend(f"{k},{word}" for k in keys)
    return _lines(lines)
