"""Synthetic files of VCR: annotation files and score files of 21 columns.

Everything here is made up, in the shape of the official files. Pure: standard library and numpy only;
deterministic for a given ``seed``.
"""

from __future__ import annotations

import numpy as np

from app.evaluation.tasks import synthetic_files as files

from .formats import VCR_COLUMNS

VCR_HEADER: tuple[str, ...] = VCR_COLUMNS  # a score file's header: the columns the reader asks for, in its order

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
        pool.append(files.dumps(tokens))
    return pool


def _vcr_objects(rng: np.random.Generator, n_images: int) -> tuple[list[str], list[int]]:
    """64 serialised object lists (two people first, 2-5 objects in all) and which one each image has."""
    obj_lists = []
    for _ in range(64):
        k = int(rng.integers(2, 6))
        objs = ["person", "person"] + [
            _VCR_OBJECT_POOL[i] for i in rng.integers(len(_VCR_OBJECT_POOL), size=k - 2).tolist()
        ]
        obj_lists.append(files.dumps(objs))
    return obj_lists, rng.integers(len(obj_lists), size=n_images).tolist()


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
    n = files.check_count("n_questions", n_questions)
    regions = tuple(regions)
    if n == 0:
        return b""
    rng = np.random.default_rng(seed)
    answer = rng.integers(0, 4, size=n).tolist()
    rationale = rng.integers(0, 4, size=n).tolist()
    region = rng.integers(0, len(regions), size=n).tolist() if regions else None
    questions = [files.dumps(list(q)) for q in _VCR_QUESTIONS]
    q_idx = rng.integers(len(questions), size=n).tolist()
    pool = _vcr_choice_pool(rng, 400)
    choices = rng.integers(len(pool), size=(n, 8)).tolist()
    # Several questions per image, like the real files.
    img = np.cumsum(rng.random(n) < 0.35).tolist()
    obj_lists, obj_idx = _vcr_objects(rng, img[-1] + 1)
    region_json = [files.dumps(r) for r in regions]
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
    return files.lines(out)


def _softmax_rows(rng: np.random.Generator, n: int, target: np.ndarray) -> np.ndarray:
    """(n, 4) probabilities rounded to 4 decimals whose unique argmax is ``target``."""
    logits = rng.normal(0.0, 1.0, size=(n, 4))
    top = logits.max(axis=1) + 0.5 + rng.exponential(1.0, size=n)
    logits[np.arange(n), target] = top
    e = np.exp(logits - top[:, None])
    # The margin >= 0.5 keeps the target at least ~0.09 above the runner-up,
    # so rounding to 4 decimals cannot create a tie.
    rounded: np.ndarray = np.round(e / e.sum(axis=1, keepdims=True), 4)
    return rounded


def predictions(rng: np.random.Generator, gold: bytes, accuracy: float, r_accuracy: float, shuffle: bool) -> bytes:
    """A score file for ``gold``: the answer argmax right with probability ``accuracy``, the argmax of the
    rationales given the gold answer with probability ``r_accuracy``, independently."""
    ids: list[str] = []
    ans: list[int] = []
    rat: list[int] = []
    for row in files.json_lines(gold):
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
    return files.lines(lines)
