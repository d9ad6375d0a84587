"""Deterministic gold and prediction files in each benchmark's official release format, full of the cases the
official scorers treat specially (see FINDINGS.md), for differential tests of the app's scorers.

- make_case(family, seed, size) -> (gold, [predictions, ...]): every prediction file is complete and well formed
  (one prediction per gold id, no extra ids, no duplicates, finite scores): the app must accept and score it.
- make_bad_files(family, gold) -> [(name, bytes)]: files the app must refuse (missing id, duplicate, id not in
  gold, NaN, wrong types, ...). Never feed these to the official code.
- official_behaviour_files(family, gold) -> [(name, bytes)]: incomplete or odd files the OFFICIAL code does
  score without crashing (e.g. A-OKVQA missing ids count 0, NLVR2 empty predictions are False). They document
  official behaviour (FINDINGS.md); the app may refuse them.
- vqa_questions(annotations) -> bytes: the VQA questions file the official loader needs beside the annotations.
- gqa_choices(gold, seed, shape) -> bytes: a GQA choices file ({tier}_choices.json) for a generated gold file, in
  one of GQA_CHOICES_SHAPES; make_bad_gqa_choices(gold) -> [(name, bytes)]: choices files the app must refuse.
"""

from __future__ import annotations

import json
import random
import string

FAMILIES = ("vqa-v2", "gqa", "a-okvqa", "winoground", "nlvr2-contrast")


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def make_case(family: str, seed: int, size: int = 300) -> tuple[bytes, list[bytes]]:
    """A gold file and at least 4 prediction files for `family`, all determined by (seed, size)."""
    makers = {
        "vqa-v2": _vqa_case,
        "gqa": _gqa_case,
        "a-okvqa": _aokvqa_case,
        "winoground": _winoground_case,
        "nlvr2-contrast": _nlvr2_case,
    }
    if family not in makers:
        raise ValueError(f"unknown family {family!r}")
    if size < 1:
        raise ValueError("size must be at least 1")
    return makers[family](random.Random(f"{family}:{seed}:{size}"), size)


# --- VQA v2 -------------------------------------------------------------------------------------------------

# Strings that hit every branch of the official normalisation (processPunctuation, processDigitArticle).
VQA_POOL = [
    "yes",
    "no",
    "Yes",
    "YES",
    "yes.",
    "yes!",
    "(yes)",
    "no.",
    "No",
    "yes,",
    "yes ,",
    "yes;",
    "2",
    "two",
    "Two",
    "TWO",
    "2.",
    "two.",
    "none",
    "None",
    "zero",
    "0",
    "10",
    "ten",
    "one",
    "1",
    "three",
    "3",
    "1,000",
    "1000",
    "1 000",
    "1,2",
    "1, 2",
    "3.5",
    "3 .5",
    "3. 5",
    "3.",
    ".5",
    "0.5",
    "5.0",
    "3,5",
    "a dog",
    "the dog",
    "dog",
    "dogs",
    "A dog",
    "an apple",
    "apple",
    "the",
    "a",
    "an",
    "a the",
    "the a dog",
    "it's",
    "its",
    "dont",
    "don't",
    "cant",
    "can't",
    "Im",
    "i'm",
    "im",
    "Ive",
    "ive",
    "somebody'd",
    "somebodyd",
    "hes",
    "he's",
    "whats",
    "what's",
    "twas",
    "'twas",
    "yall'll",
    "y'all'll",
    "ow's'at",
    "'ow's'at",
    "red/white",
    "red-white",
    "red white",
    "red\nwhite",
    "red\twhite",
    "black and white",
    "black & white",
    "u.s.a.",
    "usa",
    "U.S.A.",
    "u.s.a",
    "10:30",
    "10.30",
    "50%",
    "$5",
    "#1",
    "e.g.",
    "mr. smith",
    "mr smith",
    "café",
    "cafe",
    "...",
    " .",
    "a.b.c",
    "1.2.3",
    "left",
    "right",
    "on the left",
    "left side",
    "n/a",
    "a/b",
    "semi;colon",
    "tv's",
    "x" + "." * 40,
    "." * 35 + "y",
    "a." * 33,
    "well.well",
    "[1]",
    "{a}",
    "a=b",
    "a+b",
    "back\\slash",
    "under_score",
    "hy-phen",
    "<tag>",
    "@home",
    "`tick`",
    '"quoted"',
    "why?",
    "wow!",
    "  yes  ",
    "yes\n",
    "\tno",
    "\n2\n",
    "two ",
    " a dog",
]
VQA_QUESTION_TYPES = [
    "is the",
    "what color is the",
    "how many",
    "what is the",
    "are there",
    "what",
    "none of the above",
    "is this a",
    "what number is",
    "how many people are",
    "what is the man",
    "does the",
]
VQA_ANSWER_TYPES = ["yes/no", "number", "other"]

# Pairs (gold, prediction) whose handling differs between unanimous and disagreeing humans.
VQA_TWINS = [
    ("2", "two"),
    ("two", "2"),
    ("yes", "Yes"),
    ("yes", "yes."),
    ("dog", "a dog"),
    ("a dog", "dog"),
    ("don't", "dont"),
    ("dont", "don't"),
    ("1000", "1,000"),
    ("1,000", "1000"),
    ("3.5", "3 .5"),
    ("red white", "red/white"),
    ("red white", "red-white"),
    ("none", "0"),
    ("0", "none"),
    ("ten", "10"),
    ("i'm", "Im"),
    ("somebodyd", "somebody'd"),
    ("yes", " yes "),
    ("yes", "yes\n"),
    ("usa", "u.s.a."),
    ("x", "x" + "." * 40),
    ("black and white", "Black And White"),
    ("what's", "whats"),
]


def _vqa_case(rng: random.Random, size: int) -> tuple[bytes, list[bytes]]:
    annotations = []
    scenario_of = []
    used_qids: set[int] = set()
    for index in range(size):
        qid = rng.randrange(1, 10**9)
        while qid in used_qids:
            qid = rng.randrange(1, 10**9)
        used_qids.add(qid)
        scenario = index % 8
        if scenario == 0:  # unanimous (no normalisation at all), often a "twin" answer
            answer = rng.choice([twin[0] for twin in VQA_TWINS] + VQA_POOL)
            answers = [answer] * 10
        elif scenario == 1:  # unanimous only after \n/\t replacement and strip
            answer = rng.choice(["yes", "2", "dog", "red white", "a dog"])
            answers = [
                rng.choice([answer, " " + answer, answer + "\n", "\t" + answer, answer + "  "]) for _ in range(10)
            ]
            if answer == "red white":
                answers[rng.randrange(10)] = "red\nwhite"
        elif scenario == 2:  # exactly k humans give answer A (k = 0..10), the rest disagree
            k = (index // 8) % 11
            answer = rng.choice(VQA_POOL)
            others = [other for other in VQA_POOL if other.strip() != answer.strip()]
            answers = [answer] * k + [rng.choice(others) for _ in range(10 - k)]
        elif scenario == 3:  # twins mixed: equal only after normalisation
            gold, pred = rng.choice(VQA_TWINS)
            k = rng.randrange(0, 11)
            answers = [gold] * k + [pred] * rng.randrange(0, 11 - k)
            answers += [rng.choice(VQA_POOL) for _ in range(10 - len(answers))]
        elif scenario == 4:  # numbers and articles
            answers = [
                rng.choice(["2", "two", "Two", "2.", "a 2", "the two", "1,000", "1000", "3.5", "none", "0"])
                for _ in range(10)
            ]
        elif scenario == 5:  # punctuation: comma between digits anywhere disables the space replacement
            answers = [
                rng.choice(
                    [
                        "red/white",
                        "red-white",
                        "red white",
                        "1,2 red/white",
                        "red, white",
                        "red,white",
                        "yes.",
                        "yes!",
                        "(yes)",
                        "yes",
                        "no",
                    ]
                )
                for _ in range(10)
            ]
        elif scenario == 6:  # many periods (only the first 32 are stripped)
            answers = [
                rng.choice(
                    ["x" + "." * 40, "x", "x" + "." * 31, "x" + "." * 32, "x" + "." * 33, "a." * 33, "." * 35 + "y"]
                )
                for _ in range(10)
            ]
        else:  # contractions, case, anything
            answers = [rng.choice(VQA_POOL) for _ in range(10)]
        rng.shuffle(answers)
        counts: dict[str, int] = {}
        for answer in answers:
            counts[answer] = counts.get(answer, 0) + 1
        annotations.append(
            {
                "question_type": rng.choice(VQA_QUESTION_TYPES),
                "multiple_choice_answer": max(counts, key=lambda a: (counts[a], a)),
                "answers": [
                    {
                        "answer": answer,
                        "answer_confidence": rng.choice(["yes", "yes", "maybe", "no"]),
                        "answer_id": i + 1,
                    }
                    for i, answer in enumerate(answers)
                ],
                "image_id": rng.randrange(1, 600000),
                "answer_type": rng.choice(VQA_ANSWER_TYPES),
                "question_id": qid,
            }
        )
        scenario_of.append(scenario)
    gold = {
        "info": {"description": "synthetic VQA v2 annotations for differential tests", "version": "2.0"},
        "license": {"name": "synthetic"},
        "data_subtype": "val2014",
        "data_type": "mscoco",
        "annotations": annotations,
    }

    def pred_file(choose) -> bytes:
        rows = [{"question_id": ann["question_id"], "answer": choose(ann)} for ann in annotations]
        return _dumps(rows)

    def variant(ann: dict) -> str:
        base = rng.choice(ann["answers"])["answer"]
        twins = [pred for gold_answer, pred in VQA_TWINS if gold_answer == base.strip()]
        transform = rng.randrange(9)
        if transform == 0 and twins:
            return rng.choice(twins)
        if transform == 1:
            return base.upper()
        if transform == 2:
            return base + "."
        if transform == 3:
            return "the " + base
        if transform == 4:
            return " " + base + "\n"
        if transform == 5:
            return base.replace(" ", "-")
        if transform == 6:
            return base + "!"
        return base

    files = [
        pred_file(lambda ann: ann["multiple_choice_answer"]),
        pred_file(variant),
        pred_file(lambda ann: rng.choice(VQA_POOL + [""])),
        pred_file(
            lambda ann: rng.choice(
                [t[1] for t in VQA_TWINS if t[0] == ann["multiple_choice_answer"].strip()]
                or [ann["multiple_choice_answer"].upper()]
            )
        ),
    ]
    shuffled = [{"question_id": ann["question_id"], "answer": variant(ann)} for ann in annotations]
    rng.shuffle(shuffled)
    files.append(_dumps(shuffled))
    return _dumps(gold), files


def vqa_questions(annotations: bytes) -> bytes:
    """The official questions file for a VQA annotations file (what VQA() and loadRes() read from it)."""
    data = json.loads(annotations)
    return _dumps(
        {
            "info": data.get("info", {}),
            "task_type": "Open-Ended",
            "data_type": data.get("data_type", "mscoco"),
            "data_subtype": data.get("data_subtype", "val2014"),
            "license": data.get("license", {}),
            "questions": [
                {
                    "image_id": ann["image_id"],
                    "question": f"{ann['question_type']} ...?",
                    "question_id": ann["question_id"],
                }
                for ann in data["annotations"]
            ],
        }
    )


# --- GQA ----------------------------------------------------------------------------------------------------

GQA_OPEN = [
    "red",
    "blue",
    "white",
    "black",
    "wood",
    "metal",
    "man",
    "woman",
    "table",
    "chair",
    "left",
    "right",
    "large",
    "small",
    "street",
    "kitchen",
    "dog",
    "cat",
    "t-shirt",
    "tennis racket",
]
GQA_KINDS = [  # (structural, semantic, detailed, answers)
    ("verify", "attr", "verifyAttr", ["yes", "no"]),
    ("verify", "rel", "verifyRel", ["yes", "no"]),
    ("verify", "obj", "exist", ["yes", "no"]),
    ("logical", "obj", "existAnd", ["yes", "no"]),
    ("logical", "attr", "existAttrOr", ["yes", "no"]),
    ("query", "attr", "queryAttr", GQA_OPEN[:6]),
    ("query", "cat", "categoryRelS", GQA_OPEN[6:10]),
    ("query", "rel", "relS", GQA_OPEN[6:]),
    ("query", "global", "placeVerify", ["street", "kitchen"]),
    ("choose", "attr", "chooseAttr", ["red", "blue", "large", "small"]),
    ("choose", "rel", "chooseRel", ["left", "right"]),
    ("choose", "global", "chooseGlobal", ["street", "kitchen"]),
    ("choose", "cat", "categoryThatChoose", ["dog", "cat"]),
    ("compare", "attr", "compare", ["yes", "no", "dog", "cat"]),
    ("compare", "obj", "sameMaterialRelate", ["yes", "no"]),
    # The official belongs() replaces a "Common" question's valid and plausible lists by these three answers.
    ("compare", "attr", "twoCommon", ["color", "material", "shape"]),
]


def _gqa_case(rng: random.Random, size: int) -> tuple[bytes, list[bytes]]:
    qids: list[str] = []
    while len(qids) < size:
        qid = f"{rng.randrange(0, 10**8):08d}"  # leading zeros: ids are strings
        if qid not in qids:
            qids.append(qid)
    questions: dict[str, dict] = {}
    for index, qid in enumerate(qids):
        structural, semantic, detailed, answers = GQA_KINDS[index % len(GQA_KINDS)]
        answer = rng.choice(answers)
        balanced = index < 4 or rng.random() < 0.7
        global_group = (
            None
            if (answers == ["yes", "no"] or rng.random() < 0.15)
            else rng.choice(["color", "material", "place", "animal", "position", "size", "furniture"])
        )
        entailed = rng.sample(qids, rng.choice([0, 0, 1, 2, 3, 4]))
        if rng.random() < 0.2:
            entailed.append(qid)  # the official code skips a question's own id
        words = rng.choice(["Is the", "What color is the", "Which side is the", "Who is wearing the", "Are there"])
        steps = rng.randrange(1, 5)
        program = [
            {
                "operation": rng.choice(
                    ["select", "relate", "filter color", "verify color", "exist", "query", "choose name", "and", "or"]
                ),
                "argument": rng.choice(["table (12)", "color", "name", "_", "left,s (3)"]),
                "dependencies": list(range(i))[-1:],
            }
            for i in range(steps)
        ]
        questions[qid] = {
            "semantic": program,
            "entailed": entailed,
            "equivalent": [qid],
            "question": f"{words} {rng.choice(GQA_OPEN)} {'  '.join(['x'] * rng.randrange(0, 4))}?",
            "imageId": f"n{rng.randrange(10**5, 10**6)}",
            "isBalanced": balanced,
            "groups": {"global": global_group, "local": f"{rng.randrange(1, 15)}-{detailed}"},
            "answer": answer,
            "semanticStr": "select: table->query: color",
            "annotations": {"answer": {}, "question": {}, "fullAnswer": {}},
            "types": {"detailed": detailed, "semantic": semantic, "structural": structural},
            "fullAnswer": f"The answer is {answer}.",
        }
    gold = _dumps(questions)

    def pred_file(choose, shuffle=False) -> bytes:
        rows = [{"questionId": qid, "prediction": choose(qid, q)} for qid, q in questions.items()]
        if shuffle:
            rng.shuffle(rows)
        return _dumps(rows)

    def mostly_right(qid: str, q: dict) -> str:
        if rng.random() < 0.75:
            return q["answer"]
        return rng.choice([a for a in GQA_KINDS[qids.index(qid) % len(GQA_KINDS)][3] if a != q["answer"]] or GQA_OPEN)

    def case_variant(qid: str, q: dict) -> str:
        answer = q["answer"]
        return rng.choice(
            [
                answer,
                answer,
                answer.capitalize(),
                answer.upper(),
                answer + " ",
                " " + answer,
                answer + ".",
                "the " + answer,
            ]
        )

    files = [
        pred_file(lambda qid, q: q["answer"]),
        pred_file(mostly_right),
        pred_file(case_variant, shuffle=True),
        pred_file(lambda qid, q: rng.choice(GQA_OPEN + ["yes", "no", "Yes", ""])),
        pred_file(lambda qid, q: "yes"),
    ]
    return gold, files


# --- A-OKVQA ------------------------------------------------------------------------------------------------

AOK_WORDS = [
    "bus",
    "Bus",
    "bus ",
    "buses",
    "a bus",
    "red",
    "Red",
    "two",
    "2",
    "surfing",
    "surf",
    "summer",
    "winter",
    "pizza",
    "Pizza",
    "frisbee",
    "skateboarding",
    "skate boarding",
    "yes",
    "no",
    "tennis",
    "umbrella",
    "rain",
    "sunny",
    "dog",
    "dogs",
    "the dog",
    "1,000",
    "1000",
    "café",
    "cafe",
    "n/a",
]


def _aokvqa_id(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(22))


def _aokvqa_case(rng: random.Random, size: int) -> tuple[bytes, list[bytes]]:
    rows = []
    seen: set[str] = set()
    for index in range(size):
        qid = _aokvqa_id(rng)
        while qid in seen:
            qid = _aokvqa_id(rng)
        seen.add(qid)
        choices = rng.sample(AOK_WORDS, 4)
        correct = rng.randrange(4)
        k = index % 11  # 0..10 direct answers equal to the correct choice
        others = [w for w in AOK_WORDS if w != choices[correct]]
        direct = [choices[correct]] * k + [rng.choice(others) for _ in range(10 - k)]
        rng.shuffle(direct)
        rows.append(
            {
                "split": "val",
                "image_id": rng.randrange(1, 600000),
                "question_id": qid,
                "question": f"What is the {rng.choice(['man', 'dog', 'bus'])} doing?",
                "choices": choices,
                "correct_choice_idx": correct,
                "direct_answers": direct,
                # at least one question in scope of the direct-answer metric (the official divides by their count)
                "difficult_direct_answer": index > 0 and rng.random() < 0.2,
                "rationales": [f"Because of the {rng.choice(AOK_WORDS)}." for _ in range(3)],
            }
        )

    def pred_file(mc, da, shuffle=False) -> bytes:
        items = [(row["question_id"], {"multiple_choice": mc(row), "direct_answer": da(row)}) for row in rows]
        if shuffle:
            rng.shuffle(items)
        return _dumps(dict(items))

    def most_common(row: dict) -> str:
        answers = row["direct_answers"]
        return max(answers, key=lambda a: (answers.count(a), a))

    files = [
        pred_file(lambda r: r["choices"][r["correct_choice_idx"]], most_common),
        pred_file(lambda r: rng.choice(r["choices"]), lambda r: rng.choice(r["direct_answers"])),
        # MC answers outside the choices (case/space variants), DA case/space variants
        pred_file(
            lambda r: rng.choice(
                [r["choices"][r["correct_choice_idx"]].upper(), r["choices"][0] + " ", rng.choice(AOK_WORDS)]
            ),
            lambda r: rng.choice([most_common(r).upper(), most_common(r) + " ", most_common(r)]),
            shuffle=True,
        ),
        pred_file(lambda r: "bus", lambda r: "bus"),
        pred_file(lambda r: r["choices"][(r["correct_choice_idx"] + 1) % 4], lambda r: rng.choice(AOK_WORDS + [""])),
    ]
    return _dumps(rows), files


# --- Winoground ---------------------------------------------------------------------------------------------

WINO_SECONDARY = [
    "",
    "",
    "",
    "Symbolic",
    "Pragmatics",
    "Series",
    "Morpheme-Level",
    "Symbolic, Series",
    "Symbolic, Pragmatics",
    "Pragmatics, Series",
]
WINO_TAGS = {
    "Object": ["Noun", "Pronoun", "Determiner-Numeral"],
    "Relation": ["Verb", "Adjective-Color", "Preposition", "Adverb-Animate"],
    "Both": ["Relative Clause, Scope", "Noun, Verb"],
}
WINO_KEYS = ("c0_i0", "c0_i1", "c1_i0", "c1_i1")


def _winoground_case(rng: random.Random, size: int) -> tuple[bytes, list[bytes]]:
    examples = []
    # the first examples cover every subset the official statistics report (an empty subset makes it crash)
    forced = [("Object", "Symbolic", 1), ("Relation", "Pragmatics", 2), ("Both", "Series", 1)]
    for index in range(size):
        collapsed, secondary, main_preds = (
            forced[index]
            if index < len(forced)
            else (
                rng.choice(["Object", "Relation", "Relation", "Both"]),
                rng.choice(WINO_SECONDARY),
                rng.choice([1, 1, 2]),
            )
        )
        examples.append(
            {
                "id": index,
                "caption_0": f"a {rng.choice(['dog', 'cat'])} on a {rng.choice(['mat', 'box'])}",
                "caption_1": f"a {rng.choice(['mat', 'box'])} on a {rng.choice(['dog', 'cat'])}",
                "image_0": f"ex_{index}_img_0",
                "image_1": f"ex_{index}_img_1",
                "tag": rng.choice(WINO_TAGS[collapsed]),
                "secondary_tag": secondary,
                "num_main_preds": main_preds,
                "collapsed_tag": collapsed,
            }
        )

    def pred_file(score, shuffle=False) -> bytes:
        lines = [{"label": f"{ex['id']}_{key}", "score": score(ex, key)} for ex in examples for key in WINO_KEYS]
        if shuffle:
            rng.shuffle(lines)
        return _jsonl(lines)

    def tie_heavy(ex: dict, key: str) -> float:
        return rng.choice([0, 1, 1.0, 2, -0.0, 0.0])

    def extremes(ex: dict, key: str) -> float:
        return rng.choice([1e308, -1e308, 5e-324, -5e-324, 0.0, 1.7976931348623157e308, 1e-300, -3, 123456789012345])

    files = [
        pred_file(lambda ex, key: 1.0 if key in ("c0_i0", "c1_i1") else 0.0),
        pred_file(lambda ex, key: rng.uniform(-1, 1)),
        pred_file(tie_heavy),
        pred_file(extremes, shuffle=True),
        pred_file(
            lambda ex, key: (
                round(rng.gauss(25, 5), rng.choice([0, 1, 3])) if rng.random() < 0.5 else rng.randrange(-3, 4)
            ),
            shuffle=True,
        ),
    ]
    return _jsonl(examples), files


# --- NLVR2 contrast set -------------------------------------------------------------------------------------


def _nlvr2_case(rng: random.Random, size: int) -> tuple[bytes, list[bytes]]:
    rows: list[dict] = []
    used: set[str] = set()
    while len(rows) < size:
        prefix = f"test1-{rng.randrange(0, 2000)}-{rng.randrange(0, 4)}-{rng.randrange(0, 3)}"
        if prefix in used:
            continue
        used.add(prefix)
        group_size = min(size - len(rows), rng.choice([1, 2, 2, 2, 2, 3, 4, 5, 7]))
        # the last character is the member's digit: the official groups by identifier[:-2]
        for member in rng.sample(range(10), group_size):
            rows.append(
                {
                    "sentence": f"There are {rng.choice(['two', 'three'])} dogs.",
                    "left_url": f"https://example.org/{prefix}-{member}-left.jpg",
                    "right_url": f"https://example.org/{prefix}-{member}-right.jpg",
                    "identifier": f"{prefix}-{member}",
                    "writer": rng.randrange(0, 20),
                    "label": rng.random() < 0.45,
                }
            )

    def pred_file(text, shuffle=False, newline="\n", trailing=True) -> bytes:
        lines = [f"{row['identifier']},{text(row)}" for row in rows]
        if shuffle:
            rng.shuffle(lines)
        body = newline.join(lines) + (newline if trailing else "")
        return body.encode("utf-8")

    files = [
        pred_file(lambda r: "True" if r["label"] else "False"),
        pred_file(lambda r: "1" if r["label"] else "0"),
        pred_file(lambda r: rng.choice(["true", "false"]), shuffle=True),
        pred_file(lambda r: rng.choice(["TRUE", "False", "0", "1", " 1", "0 ", "True "]), newline="\r\n"),
        pred_file(lambda r: "0" if r["label"] else "1", shuffle=True, trailing=False),
    ]
    return _jsonl(rows), files


# --- files to refuse, and odd files the official code accepts ------------------------------------------------


def make_bad_files(family: str, gold: bytes) -> list[tuple[str, bytes]]:
    """Prediction files the app must refuse. Never fed to the official code (it crashes or silently scores them)."""
    if family == "vqa-v2":
        anns = json.loads(gold)["annotations"]
        good = [{"question_id": a["question_id"], "answer": a["multiple_choice_answer"]} for a in anns]
        return [
            ("missing id", _dumps(good[1:])),
            ("duplicate id", _dumps(good + [good[0]])),
            ("id not in gold", _dumps(good + [{"question_id": -1, "answer": "yes"}])),
            ("answer not a string", _dumps([{**good[0], "answer": 2}] + good[1:])),
            ("answer missing", _dumps([{"question_id": good[0]["question_id"]}] + good[1:])),
            ("id as string", _dumps([{**good[0], "question_id": str(good[0]["question_id"])}] + good[1:])),
            ("object instead of list", _dumps({str(g["question_id"]): g["answer"] for g in good})),
            ("not json", b'[{"question_id": 1, '),
        ]
    if family == "gqa":
        questions = json.loads(gold)
        good = [{"questionId": qid, "prediction": q["answer"]} for qid, q in questions.items()]
        return [
            ("missing id", _dumps(good[1:])),
            ("duplicate id", _dumps(good + [{**good[0], "prediction": "other"}])),
            ("id not in gold", _dumps(good + [{"questionId": "x-not-in-gold", "prediction": "yes"}])),
            ("prediction null", _dumps([{**good[0], "prediction": None}] + good[1:])),
            ("prediction not a string", _dumps([{**good[0], "prediction": 1}] + good[1:])),
            ("object instead of list", _dumps({g["questionId"]: g["prediction"] for g in good})),
        ]
    if family == "a-okvqa":
        rows = json.loads(gold)
        good = {
            r["question_id"]: {"multiple_choice": r["choices"][0], "direct_answer": r["direct_answers"][0]}
            for r in rows
        }
        first = rows[0]["question_id"]
        text = _dumps(good).decode("utf-8")
        duplicate = text[:-1] + ", " + json.dumps(first) + ": " + json.dumps(good[first]) + "}"
        return [
            ("missing id", _dumps({k: v for k, v in good.items() if k != first})),
            ("duplicate id", duplicate.encode("utf-8")),
            ("id not in gold", _dumps({**good, "not-in-gold": {"multiple_choice": "a", "direct_answer": "a"}})),
            ("value not an object", _dumps({**good, first: "bus"})),
            ("answer not a string", _dumps({**good, first: {"multiple_choice": 1, "direct_answer": "a"}})),
            ("list instead of object", _dumps(list(good.values()))),
        ]
    if family == "winoground":
        examples = [json.loads(line) for line in gold.decode("utf-8").splitlines() if line.strip()]
        good = [{"label": f"{ex['id']}_{key}", "score": 0.5} for ex in examples for key in WINO_KEYS]
        return [
            ("missing label", _jsonl(good[1:])),
            ("duplicate label", _jsonl(good + [{**good[0], "score": 9.0}])),
            ("id not in gold", _jsonl(good + [{"label": f"{10**6}_{key}", "score": 0.1} for key in WINO_KEYS])),
            (
                "NaN score",
                b"".join([b'{"label": "%s", "score": NaN}\n' % good[0]["label"].encode()]) + _jsonl(good[1:]),
            ),
            ("Infinity score", b'{"label": "%s", "score": Infinity}\n' % good[0]["label"].encode() + _jsonl(good[1:])),
            ("score as string", _jsonl([{**good[0], "score": "0.5"}] + good[1:])),
            ("malformed label", _jsonl([{**good[0], "label": good[0]["label"].replace("_i", "-i")}] + good[1:])),
            ("unknown key c2_i0", _jsonl(good + [{"label": f"{examples[0]['id']}_c2_i0", "score": 1.0}])),
            ("blank line", _jsonl(good[:1]) + b"\n" + _jsonl(good[1:])),
        ]
    if family == "nlvr2-contrast":
        rows = [json.loads(line) for line in gold.decode("utf-8").splitlines() if line.strip()]
        good = [f"{r['identifier']},{'True' if r['label'] else 'False'}" for r in rows]
        return [
            ("missing id", ("\n".join(good[1:]) + "\n").encode()),
            ("duplicate id", ("\n".join(good + [good[0].rsplit(",", 1)[0] + ",False"]) + "\n").encode()),
            ("id not in gold", ("\n".join(good + ["test1-99999-0-0-1,True"]) + "\n").encode()),
            ("extra field", ("\n".join([good[0] + ",extra"] + good[1:]) + "\n").encode()),
            ("blank line", ("\n".join(good[:1] + [""] + good[1:]) + "\n").encode()),
            (
                "prediction not a boolean",
                ("\n".join([good[0].rsplit(",", 1)[0] + ",maybe"] + good[1:]) + "\n").encode(),
            ),
            ("empty prediction", ("\n".join([good[0].rsplit(",", 1)[0] + ","] + good[1:]) + "\n").encode()),
        ]
    raise ValueError(f"unknown family {family!r}")


def official_behaviour_files(family: str, gold: bytes) -> list[tuple[str, bytes]]:
    """Incomplete or odd files that the official code scores without crashing (FINDINGS.md quotes the results).

    The app may refuse them (several are also in make_bad_files); they exist to measure the official code.
    """
    if family == "vqa-v2":
        anns = json.loads(gold)["annotations"]
        good = [{"question_id": a["question_id"], "answer": a["multiple_choice_answer"]} for a in anns]
        return [("duplicate id, last wins", _dumps(good + [{**good[0], "answer": "zzz-wrong"}]))]
    if family == "gqa":
        questions = json.loads(gold)
        good = [{"questionId": qid, "prediction": q["answer"]} for qid, q in questions.items()]
        return [
            ("duplicate id, last wins", _dumps(good + [{**good[0], "prediction": "zzz-wrong"}])),
            ("extra id", _dumps(good + [{"questionId": "x-not-in-gold", "prediction": "yes"}])),
        ]
    if family == "a-okvqa":
        rows = json.loads(gold)
        good = {
            r["question_id"]: {
                "multiple_choice": r["choices"][r["correct_choice_idx"]],
                "direct_answer": r["direct_answers"][0],
            }
            for r in rows
        }
        ids = list(good)
        return [
            ("first id missing", _dumps({k: v for k, v in good.items() if k != ids[0]})),
            ("direct_answer key missing in first", _dumps({**good, ids[0]: {"multiple_choice": "x"}})),
            (
                "no direct_answer at all",
                _dumps({k: {"multiple_choice": v["multiple_choice"]} for k, v in good.items()}),
            ),
            ("extra id", _dumps({**good, "not-in-gold": {"multiple_choice": "a", "direct_answer": "a"}})),
        ]
    if family == "winoground":
        examples = [json.loads(line) for line in gold.decode("utf-8").splitlines() if line.strip()]
        good = [
            {"label": f"{ex['id']}_{key}", "score": 1.0 if key in ("c0_i0", "c1_i1") else 0.0}
            for ex in examples
            for key in WINO_KEYS
        ]
        extra = [{"label": f"{10**6}_{key}", "score": 0.0} for key in WINO_KEYS]
        return [
            ("extra id counted in 'all'", _jsonl(good + extra)),
            (
                "NaN scores",
                _jsonl(good[4:]) + b"".join(b'{"label": "%s", "score": NaN}\n' % g["label"].encode() for g in good[:4]),
            ),
        ]
    if family == "nlvr2-contrast":
        rows = [json.loads(line) for line in gold.decode("utf-8").splitlines() if line.strip()]
        return [
            (
                "empty prediction for False labels",
                "".join(f"{r['identifier']},{'1' if r['label'] else ''}\n" for r in rows).encode(),
            ),
            ("first id missing", "".join(f"{r['identifier']},True\n" for r in rows[1:]).encode()),
            ("extra id", ("".join(f"{r['identifier']},True\n" for r in rows) + "test1-99999-0-0-1,True\n").encode()),
            (
                "duplicate id, last wins",
                ("".join(f"{r['identifier']},True\n" for r in rows) + f"{rows[0]['identifier']},\n").encode(),
            ),
        ]
    raise ValueError(f"unknown family {family!r}")


# --- GQA choices files ----------------------------------------------------------------------------------------

# "usual": every question, the answer mostly among its lists; "hostile": lists empty, repeated, holding case and
# space variants of answers and the answer left out; "balanced only": no entry for an unbalanced question (the
# official script reads the balanced ones alone), extra entries for questions not in the gold file.
GQA_CHOICES_SHAPES = ("usual", "hostile", "balanced only")


def _variants(answer: str) -> list[str]:
    return [answer.capitalize(), answer.upper(), answer + " ", " " + answer, answer + "."]


def gqa_choices(gold: bytes, seed: int, shape: str = "usual") -> bytes:
    """A choices file for the questions of `gold` (see GQA_CHOICES_SHAPES), determined by (gold, seed, shape)."""
    if shape not in GQA_CHOICES_SHAPES:
        raise ValueError(f"unknown shape {shape!r}")
    rng = random.Random(f"gqa-choices:{seed}:{shape}:{len(gold)}")
    pool = GQA_OPEN + ["yes", "no", "color", "material", "shape", ""]
    choices: dict[str, dict[str, list[str]]] = {}
    for qid, question in json.loads(gold).items():
        if shape == "balanced only" and not question["isBalanced"]:
            continue
        answer = question["answer"]
        lists = []
        for size in (rng.randrange(0, 8), rng.randrange(0, 4)):
            answers = rng.sample(pool, min(size, len(pool)))
            if rng.random() < 0.7:
                answers.append(answer)
            if shape == "hostile":
                roll = rng.random()
                if roll < 0.2:
                    answers = []
                elif roll < 0.5:
                    answers = [rng.choice(_variants(answer))] + answers[:-1]  # a variant instead of the answer
                elif roll < 0.7:
                    answers = answers + answers  # repeats
            rng.shuffle(answers)
            lists.append(answers)
        choices[qid] = {"valid": lists[0], "plausible": lists[1]}
    if shape == "balanced only":
        for number in range(5):
            choices[f"x-extra-{number}"] = {"valid": ["yes"], "plausible": "not even a list"}
    return json.dumps(choices, ensure_ascii=False, indent=1 if shape == "hostile" else None).encode("utf-8")


def gqa_choice_predictions(gold: bytes, choices: bytes, seed: int) -> list[bytes]:
    """Prediction files that exercise validity and plausibility: answers drawn from each question's own lists,
    their case and space variants, answers from other questions' lists, and "Common" answers."""
    rng = random.Random(f"gqa-choice-predictions:{seed}:{len(gold)}")
    questions = json.loads(gold)
    lists = json.loads(choices)
    everything = sorted({a for entry in lists.values() for key in ("valid", "plausible") for a in entry[key]})
    everything = everything or ["yes"]

    def own(qid: str) -> list[str]:
        entry = lists.get(qid, {"valid": [], "plausible": []})
        return [a for key in ("valid", "plausible") for a in entry[key] if isinstance(a, str)]

    def pick(qid: str, variant: float) -> str:
        candidates = own(qid) or [questions[qid]["answer"]]
        answer = rng.choice(candidates) if rng.random() < 0.7 else rng.choice(everything)
        if rng.random() < variant:
            answer = rng.choice(_variants(answer))
        if rng.random() < 0.05:
            answer = rng.choice(["color", "material", "shape", "Color"])
        return answer

    files = []
    for variant in (0.0, 0.3):
        rows = [{"questionId": qid, "prediction": pick(qid, variant)} for qid in questions]
        rng.shuffle(rows)
        files.append(_dumps(rows))
    return files


def make_bad_gqa_choices(gold: bytes) -> list[tuple[str, bytes, str]]:
    """Choices files the app must refuse, each with a part of the message that says why: the official script
    crashes on them (a balanced question without an entry or a list) or reads them otherwise than as lists
    (a string is searched for a substring)."""
    questions = json.loads(gold)
    balanced = [qid for qid, q in questions.items() if q["isBalanced"]]
    good = {qid: {"valid": [q["answer"]], "plausible": [q["answer"]]} for qid, q in questions.items()}
    first = balanced[0]

    def without(qid: str) -> dict:
        return {key: value for key, value in good.items() if key != qid}

    text = json.dumps(good, indent=1)
    return [
        ("balanced question missing", _dumps(without(first)), f"no entry for balanced question {first!r}"),
        ("valid missing", _dumps({**good, first: {"plausible": []}}), "missing 'valid'"),
        ("plausible a string", _dumps({**good, first: {"valid": [], "plausible": "yes"}}), "'plausible' must be"),
        ("a number in a list", _dumps({**good, first: {"valid": ["yes", 1], "plausible": []}}), "strings only"),
        ("entry not an object", _dumps({**good, first: ["yes"]}), "expected an object"),
        ("a lone surrogate", json.dumps({**good, first: {"valid": ["\ud800"], "plausible": []}}).encode(), "UTF-8"),
        ("an array, not an object", _dumps(list(good.values())), "one JSON object keyed by question id"),
        (
            "repeated question",
            text[:-2].encode() + f',\n "{first}": {{"valid": [], "plausible": []}}\n}}'.encode(),
            "repeated",
        ),
        ("truncated", text[: len(text) // 2].encode(), "line"),
    ]
