"""Tests of the synthetic data generator (app/synthetic.py).

Files are checked with plain json/csv parsing, independently of app.evaluation.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import synthetic as S

pytestmark = pytest.mark.synthetic_uncached  # these tests check the generators themselves

# ---------------------------------------------------------------- helpers


def rows_of(data: bytes) -> list[dict]:
    assert data.endswith(b"\n")
    assert b"\r" not in data
    return [json.loads(line) for line in data.decode("utf-8").split("\n")[:-1]]


def csv_rows(data: bytes) -> list[list[str]]:
    assert data.endswith(b"\n")
    return list(csv.reader(io.StringIO(data.decode("utf-8"))))


def nlvr2_parts(identifier: str) -> tuple[str, int, int, int]:
    split, set_id, pair_id, sentence_id = identifier.rsplit("-", 3)
    return split, int(set_id), int(pair_id), int(sentence_id)


def bias_subsets(rows: list[dict]) -> tuple[set[str], set[str]]:
    """Balanced / unbalanced identifiers, grouping by image pair."""
    by_pair: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        by_pair[(r["left_url"], r["right_url"])].append(r)
    balanced, unbalanced = set(), set()
    for examples in by_pair.values():
        if len(examples) < 2:
            continue
        target = balanced if len({e["label"] for e in examples}) == 2 else unbalanced
        target.update(e["identifier"] for e in examples)
    return balanced, unbalanced


def binary_gold_labels(rows: list[dict]) -> dict[str, bool]:
    return {r["identifier"]: str(r["label"]).lower() == "true" for r in rows}


def binary_preds(data: bytes, header: bool = False) -> dict[str, bool]:
    lines = csv_rows(data)
    if header:
        assert lines[0] == ["identifier", "prediction"]
        lines = lines[1:]
    out = {}
    for key, value in lines:
        assert key not in out
        assert value.lower() in ("true", "false")
        out[key] = value.lower() == "true"
    return out


# ------------------------------------------------------------------ NLVR2


@pytest.fixture(scope="module")
def nlvr2_dev() -> bytes:
    return S.nlvr2_gold(6982, split="dev", seed=3)


def test_task_names():
    assert S.TASK_NAMES == (
        "nlvr2",
        "nlvr-structured",
        "nlvr-images",
        "vcr",
        "vqa-v2",
        "gqa",
        "a-okvqa",
        "winoground",
        "nlvr2-contrast",
    )


@pytest.mark.parametrize("n", [1, 7, 8, 9, 100, 6982])
def test_nlvr2_exact_count_and_unique_ids(n):
    rows = rows_of(S.nlvr2_gold(n, seed=1))
    assert len(rows) == n
    assert len({r["identifier"] for r in rows}) == n


def test_nlvr2_zero_examples_is_empty():
    assert S.nlvr2_gold(0) == b""


def test_nlvr2_keys_and_values(nlvr2_dev):
    rows = rows_of(nlvr2_dev)
    for r in rows:
        assert {"identifier", "label", "left_url", "right_url", "sentence", "synset", "query", "writer"} <= set(r)
        split, _, pair_id, sentence_id = nlvr2_parts(r["identifier"])
        assert split == "dev"
        assert pair_id in range(4) and sentence_id in range(2)
        assert r["label"] in ("True", "False")
        for key in ("left_url", "right_url"):
            assert r[key].startswith("https://") and r[key].endswith(".jpg")
        assert r["left_url"] != r["right_url"]
        assert r["sentence"][0].isupper() and r["sentence"].endswith(".")
        assert isinstance(r["writer"], str) and r["writer"].isdigit()


def test_nlvr2_split_prefix():
    rows = rows_of(S.nlvr2_gold(50, split="test1", seed=0))
    assert all(r["identifier"].startswith("test1-") for r in rows)
    dashed = rows_of(S.nlvr2_gold(50, split="test-u", seed=0))
    assert [nlvr2_parts(r["identifier"])[0] for r in dashed] == ["test-u"] * 50
    assert [nlvr2_parts(r["identifier"])[1:] for r in dashed] == [nlvr2_parts(r["identifier"])[1:] for r in rows]
    # predictions group by the identifier without pair_id, read from the right
    preds = binary_preds(S.predictions("nlvr2", S.nlvr2_gold(50, split="test-u"), 1.0))
    assert preds.keys() == {r["identifier"] for r in dashed}
    for bad in ("", "a,b", "a b"):
        with pytest.raises(ValueError):
            S.nlvr2_gold(10, split=bad)


def test_nlvr2_sets_of_eight_and_groups_of_four():
    n = 8 * 50 + 5
    rows = rows_of(S.nlvr2_gold(n, seed=2))
    sets: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        _, set_id, pair_id, sentence_id = nlvr2_parts(r["identifier"])
        sets[set_id].append((pair_id, sentence_id))
    sizes = Counter(len(v) for v in sets.values())
    assert sizes == Counter({8: 50, 5: 1})  # only the last set is truncated
    # sets are contiguous in the file and the truncated one is last
    order = list(dict.fromkeys(nlvr2_parts(r["identifier"])[1] for r in rows))
    assert len(sets[order[-1]]) == 5
    for set_id in order[:-1]:
        assert sorted(sets[set_id]) == [(p, s) for p in range(4) for s in range(2)]
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        split, set_id, _, sentence_id = nlvr2_parts(r["identifier"])
        groups[f"{split}-{set_id}-{sentence_id}"].append(r)
    assert Counter(len(g) for g in groups.values())[4] >= 100
    # one sentence per group, distinct between groups
    group_sentences = []
    for g in groups.values():
        assert len({r["sentence"] for r in g}) == 1
        group_sentences.append(g[0]["sentence"])
    assert len(set(group_sentences)) == len(group_sentences)


def test_nlvr2_sentences_distinct_at_scale():
    rows = rows_of(S.nlvr2_gold(40_000, seed=5))
    per_group = {}
    for r in rows:
        split, set_id, _, sentence_id = nlvr2_parts(r["identifier"])
        per_group.setdefault((set_id, sentence_id), r["sentence"])
    assert len(set(per_group.values())) == len(per_group) == 10_000


def test_nlvr2_label_balance(nlvr2_dev):
    rows = rows_of(nlvr2_dev)
    share_true = sum(r["label"] == "True" for r in rows) / len(rows)
    assert 0.49 < share_true < 0.54


def test_nlvr2_pairs_recur_within_and_across_sets(nlvr2_dev):
    rows = rows_of(nlvr2_dev)
    by_slot = {}
    sets_of_pair: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in rows:
        _, set_id, pair_id, sentence_id = nlvr2_parts(r["identifier"])
        by_slot[(set_id, pair_id, sentence_id)] = (r["left_url"], r["right_url"])
        sets_of_pair[(r["left_url"], r["right_url"])].add(set_id)
    both = [(s, p) for (s, p, t) in by_slot if t == 0 and (s, p, 1) in by_slot]
    same = sum(by_slot[(s, p, 0)] == by_slot[(s, p, 1)] for s, p in both)
    assert 0.7 < same / len(both) < 0.95  # mostly the same pair under both sentences
    assert sum(len(v) > 1 for v in sets_of_pair.values()) >= 20  # reused across sets


def test_nlvr2_bias_subsets_both_sizeable(nlvr2_dev):
    rows = rows_of(nlvr2_dev)
    balanced, unbalanced = bias_subsets(rows)
    assert balanced and unbalanced and not balanced & unbalanced
    n = len(rows)
    assert 0.25 < len(balanced) / n < 0.42  # real dev: 2,300 / 6,982 = 0.33
    assert 0.40 < len(unbalanced) / n < 0.62  # real dev: 3,562 / 6,982 = 0.51


def test_nlvr2_all_true_consistency_small_but_nonzero(nlvr2_dev):
    rows = rows_of(nlvr2_dev)
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        split, set_id, _, sentence_id = nlvr2_parts(r["identifier"])
        groups[f"{set_id}-{sentence_id}"].append(r["label"] == "True")
    consistency = sum(all(g) for g in groups.values()) / len(groups)
    assert 0.01 < consistency < 0.10  # real dev: 3.9%


def test_nlvr2_deterministic(nlvr2_dev):
    assert S.nlvr2_gold(6982, split="dev", seed=3) == nlvr2_dev
    assert S.nlvr2_gold(6982, split="dev", seed=4) != nlvr2_dev


@settings(max_examples=30, deadline=None)
@given(n=st.integers(min_value=0, max_value=200), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_nlvr2_count_property(n, seed):
    data = S.nlvr2_gold(n, seed=seed)
    assert data.count(b"\n") == n


# ------------------------------------------------------------------- NLVR


def test_nlvr_shape():
    rows = rows_of(S.nlvr_gold(4 * 30 + 2, seed=1))
    assert len(rows) == 122
    by_sentence: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        n, m = r["identifier"].split("-")
        assert n.isdigit() and m in {"0", "1", "2", "3"}
        assert r["label"] in ("true", "false")
        assert isinstance(r["sentence"], str) and r["sentence"]
        assert isinstance(r["directory"], str)
        boxes = r["structured_rep"]
        assert len(boxes) == 3
        for box in boxes:
            assert len(box) >= 1
            for obj in box:
                assert set(obj) == {"x_loc", "y_loc", "type", "color", "size"}
        by_sentence[n].append(r)
    assert Counter(len(v) for v in by_sentence.values()) == Counter({4: 30, 2: 1})
    for examples in by_sentence.values():
        assert len({e["sentence"] for e in examples}) == 1
        assert len({e["identifier"] for e in examples}) == len(examples)


def test_nlvr_labels_and_determinism():
    data = S.nlvr_gold(4000, seed=9)
    rows = rows_of(data)
    share_true = sum(r["label"] == "true" for r in rows) / len(rows)
    assert 0.52 < share_true < 0.59  # real: ~55%
    assert S.nlvr_gold(4000, seed=9) == data
    assert S.nlvr_gold(4000, seed=10) != data
    assert S.nlvr_gold(0) == b""


# -------------------------------------------------------------------- VCR


def test_vcr_gold_shape():
    rows = rows_of(S.vcr_gold(500, seed=2))
    assert [r["annot_id"] for r in rows] == [f"val-{i}" for i in range(500)]
    for r in rows:
        assert r["answer_label"] in range(4) and r["rationale_label"] in range(4)
        assert r["region"] in ("east-asia", "south-asia", "africa", "west")
        assert isinstance(r["question"], list) and r["question"]
        assert len(r["answer_choices"]) == 4 and len(r["rationale_choices"]) == 4
        for choice in r["answer_choices"] + r["rationale_choices"]:
            assert isinstance(choice, list) and choice
        assert isinstance(r["img_fn"], str) and isinstance(r["objects"], list)
        # object references point into objects
        for tok in r["question"]:
            if isinstance(tok, list):
                assert all(0 <= i < len(r["objects"]) for i in tok)
    assert Counter(r["answer_label"] for r in rows).keys() == {0, 1, 2, 3}
    assert len({r["region"] for r in rows}) == 4


def test_vcr_gold_custom_regions_and_determinism():
    data = S.vcr_gold(200, seed=4, regions=("north", "south"))
    assert {r["region"] for r in rows_of(data)} == {"north", "south"}
    assert S.vcr_gold(200, seed=4, regions=("north", "south")) == data
    assert S.vcr_gold(200, seed=5, regions=("north", "south")) != data


# ------------------------------------------------------------ annotations


def parse_annotations(data: bytes) -> dict[str, list[str]]:
    text = data.decode("utf-8").replace("\r\n", "\n")
    out = {}
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        assert lines[0] and not lines[0].startswith("* ")
        cats = lines[1:]
        assert 1 <= len(cats) <= 3
        assert all(c.startswith("* ") for c in cats)
        assert lines[0] not in out
        out[lines[0]] = [c[2:] for c in cats]
    return out


def test_annotations(nlvr2_dev):
    data = S.nlvr2_annotations(nlvr2_dev, n_sentences=300, seed=1)
    assert data.endswith(b"\n") and b"\r" not in data
    ann = parse_annotations(data)
    assert len(ann) == 300
    gold_sentences = {r["sentence"] for r in rows_of(nlvr2_dev)}
    assert set(ann) <= gold_sentences
    used = Counter(c for cats in ann.values() for c in cats)
    assert set(used) <= set(S.NLVR2_CATEGORIES)
    assert len(used) >= 6
    assert S.nlvr2_annotations(nlvr2_dev, n_sentences=300, seed=1) == data


def test_annotations_caps_at_distinct_sentences_and_crlf():
    gold = S.nlvr2_gold(16, seed=0)  # 2 sets -> 4 sentences
    ann = parse_annotations(S.nlvr2_annotations(gold, n_sentences=100))
    assert len(ann) == 4
    crlf = S.nlvr2_annotations(gold, n_sentences=2, crlf=True)
    assert crlf.count(b"\r\n") == crlf.count(b"\n")
    assert set(parse_annotations(crlf)) <= set(ann)


# ------------------------------------------------------------ predictions


@pytest.fixture(scope="module")
def nlvr2_5000() -> bytes:
    return S.nlvr2_gold(5000, seed=11)


@pytest.mark.parametrize("accuracy", [0.0, 0.25, 0.5, 0.73, 0.9, 1.0])
def test_nlvr2_prediction_accuracy(nlvr2_5000, accuracy):
    gold = binary_gold_labels(rows_of(nlvr2_5000))
    data = S.predictions("nlvr2", nlvr2_5000, accuracy, seed=2)
    preds = binary_preds(data)
    assert preds.keys() == gold.keys()
    assert {line.split(",")[1] for line in data.decode().split("\n")[:-1]} <= {"True", "False"}
    measured = sum(preds[k] == gold[k] for k in gold) / len(gold)
    assert abs(measured - accuracy) < 0.03
    if accuracy in (0.0, 1.0):
        assert measured == accuracy


def test_binary_header_shuffle_and_determinism(nlvr2_5000):
    ids = [r["identifier"] for r in rows_of(nlvr2_5000)]
    plain = S.predictions("nlvr2", nlvr2_5000, 0.6, seed=1, shuffle=False)
    assert [row[0] for row in csv_rows(plain)] == ids
    shuffled = S.predictions("nlvr2", nlvr2_5000, 0.6, seed=1)
    assert [row[0] for row in csv_rows(shuffled)] != ids
    assert sorted(row[0] for row in csv_rows(shuffled)) == sorted(ids)
    assert shuffled == S.predictions("nlvr2", nlvr2_5000, 0.6, seed=1)
    assert shuffled != S.predictions("nlvr2", nlvr2_5000, 0.6, seed=2)
    with_header = S.predictions("nlvr2", nlvr2_5000, 0.6, seed=1, header=True)
    assert with_header.startswith(b"identifier,prediction\n")
    assert len(binary_preds(with_header, header=True)) == len(ids)


def test_group_correlation_keeps_accuracy_and_raises_consistency(nlvr2_5000):
    rows = rows_of(nlvr2_5000)
    gold = binary_gold_labels(rows)

    def scores(data):
        preds = binary_preds(data)
        groups = defaultdict(list)
        for k, v in gold.items():
            split, set_id, _, sentence_id = nlvr2_parts(k)
            groups[(set_id, sentence_id)].append(preds[k] == v)
        acc = sum(preds[k] == v for k, v in gold.items()) / len(gold)
        return acc, sum(all(g) for g in groups.values()) / len(groups)

    acc0, cons0 = scores(S.predictions("nlvr2", nlvr2_5000, 0.7, seed=3))
    acc1, cons1 = scores(S.predictions("nlvr2", nlvr2_5000, 0.7, seed=3, group_correlation=0.8))
    assert abs(acc0 - 0.7) < 0.03 and abs(acc1 - 0.7) < 0.04
    assert cons1 > cons0 + 0.2


@pytest.fixture(scope="module")
def nlvr_5000() -> bytes:
    return S.nlvr_gold(5000, seed=12)


@pytest.mark.parametrize("accuracy", [0.3, 0.8])
def test_nlvr_structured_predictions(nlvr_5000, accuracy):
    gold = binary_gold_labels(rows_of(nlvr_5000))
    data = S.predictions("nlvr-structured", nlvr_5000, accuracy, seed=4, header=True)
    preds = binary_preds(data, header=True)
    assert preds.keys() == gold.keys()
    values = {line.split(",")[1] for line in data.decode().split("\n")[1:-1]}
    assert values <= {"true", "false"}
    measured = sum(preds[k] == gold[k] for k in gold) / len(gold)
    assert abs(measured - accuracy) < 0.03


@pytest.mark.parametrize("split", ["dev", "test"])
def test_nlvr_images_predictions(nlvr_5000, split):
    gold = binary_gold_labels(rows_of(nlvr_5000))
    data = S.predictions("nlvr-images", nlvr_5000, 0.65, seed=5, split=split)
    preds = binary_preds(data)
    assert len(preds) == 6 * len(gold)
    per_example = Counter()
    correct = 0
    for key, value in preds.items():
        assert key.startswith(f"{split}-") and key.endswith(".png")
        n, m, k = key[len(split) + 1 : -4].split("-")
        assert k in {"0", "1", "2", "3", "4", "5"}
        per_example[f"{n}-{m}"] += 1
        correct += value == gold[f"{n}-{m}"]
    assert set(per_example) == set(gold) and set(per_example.values()) == {6}
    assert abs(correct / len(preds) - 0.65) < 0.02


def test_all_true(nlvr2_5000, nlvr_5000):
    preds = binary_preds(S.all_true("nlvr2", nlvr2_5000))
    assert len(preds) == 5000 and all(preds.values())
    data = S.all_true("nlvr-structured", nlvr_5000, header=True)
    assert data.startswith(b"identifier,prediction\n") and data.count(b",true\n") == 5000
    images = S.all_true("nlvr-images", nlvr_5000)
    assert images.count(b"\n") == 6 * 5000 and images.count(b".png,true\n") == 6 * 5000
    gold = binary_gold_labels(rows_of(nlvr2_5000))
    assert sum(gold.values()) / len(gold) == pytest.approx(sum(gold[k] for k in preds if preds[k]) / len(gold))
    with pytest.raises(ValueError):
        S.all_true("vcr", S.vcr_gold(5))


@pytest.fixture(scope="module")
def vcr_5000() -> bytes:
    return S.vcr_gold(5000, seed=13)


def parse_vcr_preds(data: bytes) -> tuple[list[str], dict[str, list[float]]]:
    lines = csv_rows(data)
    header, body = lines[0], lines[1:]
    out = {}
    for row in body:
        assert len(row) == 21
        assert row[0] not in out
        for cell in row[1:]:
            assert len(cell.split(".")[1]) == 4  # 4 decimals
        out[row[0]] = [float(x) for x in row[1:]]
    return header, out


def argmax(values: list[float]) -> int:
    best = max(values)
    assert values.count(best) == 1  # no ties
    return values.index(best)


@pytest.mark.parametrize("accuracy", [0.25, 0.6, 0.95])
def test_vcr_predictions(vcr_5000, accuracy):
    gold = {r["annot_id"]: (r["answer_label"], r["rationale_label"]) for r in rows_of(vcr_5000)}
    header, preds = parse_vcr_preds(S.predictions("vcr", vcr_5000, accuracy, seed=6))
    assert header == ["annot_id", "answer_0", "answer_1", "answer_2", "answer_3"] + [
        f"rationale_conditioned_on_a{a}_{r}" for a in range(4) for r in range(4)
    ]
    assert preds.keys() == gold.keys()
    qa = qar = both = 0
    for key, (a, r) in gold.items():
        scores = preds[key]
        for block in range(5):
            chunk = scores[4 * block : 4 * block + 4]
            assert all(0 <= x <= 1 for x in chunk)
            assert abs(sum(chunk) - 1) < 0.002
        ok_a = argmax(scores[:4]) == a
        ok_r = argmax(scores[4 + 4 * a : 8 + 4 * a]) == r
        qa += ok_a
        qar += ok_r
        both += ok_a and ok_r
    n = len(gold)
    assert abs(qa / n - accuracy) < 0.03
    assert abs(qar / n - accuracy) < 0.03
    assert abs(both / n - accuracy**2) < 0.03


def test_vcr_predictions_options(vcr_5000):
    ids = [r["annot_id"] for r in rows_of(vcr_5000)]
    ordered = S.predictions("vcr", vcr_5000, 0.5, seed=1, shuffle=False)
    assert [row[0] for row in csv_rows(ordered)[1:]] == ids
    assert ordered == S.predictions("vcr", vcr_5000, 0.5, seed=1, shuffle=False)
    _, preds = parse_vcr_preds(S.predictions("vcr", vcr_5000, 0.9, seed=1, rationale_accuracy=0.1))
    gold = {r["annot_id"]: (r["answer_label"], r["rationale_label"]) for r in rows_of(vcr_5000)}
    qar = sum(argmax(preds[k][4 + 4 * a : 8 + 4 * a]) == r for k, (a, r) in gold.items()) / len(gold)
    assert abs(qar - 0.1) < 0.03


# ------------------------------------------------------------- errors, speed, purity


def test_invalid_arguments(nlvr2_5000):
    with pytest.raises(ValueError):
        S.predictions("nlvr3", nlvr2_5000, 0.5)
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            S.predictions("nlvr2", nlvr2_5000, bad)
    with pytest.raises(ValueError):
        S.nlvr2_gold(-1)
    with pytest.raises(TypeError):
        S.all_true("nlvr2", nlvr2_5000, bogus=1)


def _import_roots(path: Path) -> set[str]:
    """Roots of a module's absolute imports (relative ones are its own package's)."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add(node.module if node.module.startswith("app.") else node.module.split(".")[0])
    return roots


def test_module_is_pure():
    """The generators: standard library and numpy, and of the app only the (pure) scoring domain, where the
    task families make their own synthetic files."""
    allowed = set(sys.stdlib_module_names) | {"numpy", "__future__"}
    roots = _import_roots(Path(S.__file__))
    assert {root for root in roots if not root.startswith("app.evaluation")} <= allowed, roots - allowed
    families = Path(S.__file__).parent / "evaluation" / "tasks"
    generators = [families / "synthetic_files.py", *families.glob("*/synthetic.py")]
    assert len(generators) >= 8, generators  # the shared helpers and a generator in every family's folder
    for path in generators:
        outside = {root for root in _import_roots(path) if not root.startswith("app.evaluation")}
        assert outside <= allowed, (path, outside - allowed)
