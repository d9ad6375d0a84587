"""NLVR2 on the real files: published majority-class figures, groups, bias subsets, categories."""

import json

import numpy as np
import pytest

from app.evaluation import get_task
from app.evaluation.subsets import category_subsets, ids_subset, parse_category_annotations
from app.evaluation.tasks.nlvr.visual_bias import balanced_unbalanced

pytestmark = pytest.mark.conformance

NLVR2 = get_task("nlvr2")


@pytest.fixture(scope="module")
def gold_of(read_shared):
    cache = {}

    def gold(split):
        if split not in cache:
            cache[split] = NLVR2.read_gold(read_shared(f"nlvr2/{split}.json"))
        return cache[split]

    return gold


def all_true_file(gold):
    return "".join(f"{identifier},True\n" for identifier in gold.ids).encode()


@pytest.mark.parametrize(
    "split, accuracy, consistency, groups",
    [
        ("dev", 50.9, 3.9, 2018),
        ("test1", 51.1, 4.2, 1995),  # Test-P
        ("test2", 51.4, 4.6, 1996),  # Test-U
    ],
)
def test_all_true_reproduces_published_figures(gold_of, split, accuracy, consistency, groups):
    gold = gold_of(split)
    assert gold.n_groups == groups
    scores = NLVR2.score(gold, NLVR2.parse(all_true_file(gold), gold))
    assert round(scores["all"]["accuracy"], 1) == accuracy
    assert round(scores["all"]["consistency"], 1) == consistency


def official_ids(read_shared, relative):
    return {json.loads(line)["identifier"] for line in read_shared(relative).splitlines() if line.strip()}


@pytest.mark.parametrize("split, balanced, unbalanced", [("dev", 2300, 3562), ("test1", 2316, 3536)])
def test_derived_bias_subsets_equal_the_official_files(gold_of, read_shared, split, balanced, unbalanced):
    gold = gold_of(split)
    derived = balanced_unbalanced(gold)
    for name, size in (("balanced", balanced), ("unbalanced", unbalanced)):
        official = official_ids(read_shared, f"nlvr2/{name}/{name}_{split}.json")
        assert len(official) == size
        assert set(gold.ids[derived[name]].tolist()) == official
        assert derived[name].size == size
        # the official file read as an identifier file gives the same indices
        np.testing.assert_array_equal(ids_subset(gold, read_shared(f"nlvr2/{name}/{name}_{split}.json")), derived[name])


def test_bias_subsets_are_derived_for_test_u_too(gold_of):
    gold = gold_of("test2")
    subsets = NLVR2.derive_subsets(gold)
    assert subsets["balanced"].size > 2000 and subsets["unbalanced"].size > 3000
    assert not set(subsets["balanced"].tolist()) & set(subsets["unbalanced"].tolist())


def test_category_subsets_from_the_annotated_dev_sentences(gold_of, read_shared):
    data = read_shared("nlvr2/annotated_dev_examples.txt")
    annotations = parse_category_annotations(data)
    assert len(annotations) == 800
    gold = gold_of("dev")
    sentences = {s.strip() for s in gold.fields["sentence"].tolist()}
    assert all(sentence in sentences for sentence in annotations)  # all 800 match dev
    subsets = category_subsets(gold, data)
    assert len(subsets) == 13
    assert {"category:hard-cardinality", "category:spatial-relation", "category:pp-ambiguity"} <= set(subsets)
    # every example of an annotated sentence is in the subset of each of its categories
    negation = [s for s, cats in annotations.items() if "negation" in cats]
    expected = [i for i, s in enumerate(gold.fields["sentence"].tolist()) if s.strip() in set(negation)]
    assert subsets["category:negation"].tolist() == expected
    scores = NLVR2.score(gold, NLVR2.parse(all_true_file(gold), gold), subsets)
    assert all(0 <= scores[name]["accuracy"] <= 100 for name in subsets)
