"""Subsets: balanced/unbalanced pairs, field values, annotated categories, identifier files."""

import json

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task
from app.evaluation.subsets import (
    category_subsets,
    field_subsets,
    ids_subset,
    parse_category_annotations,
)
from app.evaluation.tasks.nlvr.visual_bias import balanced_unbalanced

NLVR2 = get_task("nlvr2")


def nlvr2_gold(rows):
    """rows: (identifier, label, left_url, right_url, sentence)."""
    return NLVR2.read_gold(
        "\n".join(
            json.dumps({"identifier": i, "label": lab, "left_url": left, "right_url": right, "sentence": s})
            for i, lab, left, right, s in rows
        ).encode()
    )


@pytest.fixture
def gold():
    return nlvr2_gold(
        [
            ("dev-1-0-0", "True", "a", "b", "Two dogs."),  # 0  pair (a,b): True, False -> balanced
            ("dev-1-0-1", "False", "a", "b", " One cat. "),  # 1
            ("dev-1-1-0", "True", "c", "d", "Two dogs."),  # 2  pair (c,d): True, True -> unbalanced
            ("dev-1-1-1", "True", "c", "d", "One cat."),  # 3
            ("dev-1-2-0", "False", "a", "d", "Two dogs."),  # 4  pair (a,d): once -> neither
            ("dev-1-3-0", "False", "b", "a", "Two dogs."),  # 5  pair (b,a) (order matters): F, F -> unbalanced
            ("dev-1-3-1", "False", "b", "a", "No birds."),  # 6
        ]
    )


def test_balanced_unbalanced_by_image_pair(gold):
    subsets = balanced_unbalanced(gold)
    assert subsets["balanced"].tolist() == [0, 1]
    assert subsets["unbalanced"].tolist() == [2, 3, 5, 6]
    assert subsets["balanced"].dtype == np.int32
    assert NLVR2.derive_subsets(gold).keys() == {"balanced", "unbalanced"}


def test_field_subsets_partition_by_value(gold):
    subsets = field_subsets(gold, "left_url")
    assert {k: v.tolist() for k, v in subsets.items()} == {
        "left_url:a": [0, 1, 4],
        "left_url:b": [5, 6],
        "left_url:c": [2, 3],
    }


def test_unknown_field_is_named(gold):
    with pytest.raises(ValueError, match="'region'"):
        field_subsets(gold, "region")
    with pytest.raises(ValueError, match="'region'"):
        NLVR2.derive_subsets(gold, "region")


ANNOTATIONS = (
    b"Two dogs.\r\n* hard cardinality\r\n* spatial relation\r\n\r\n"
    b"One cat.\n- hard cardinality\n- negation\n\n\n"
    b"Unrelated sentence.\n* coreference\n"
)


def test_parse_category_annotations_accepts_both_bullets_and_crlf():
    assert parse_category_annotations(ANNOTATIONS) == {
        "Two dogs.": ["hard cardinality", "spatial relation"],
        "One cat.": ["hard cardinality", "negation"],
        "Unrelated sentence.": ["coreference"],
    }


def test_parse_category_annotations_names_bad_lines():
    with pytest.raises(ValidationError) as info:
        parse_category_annotations(b"* orphan\n\nA sentence.\n* negation\nAnother sentence right after\n")
    lines = [p.line for p in info.value.problems]
    assert lines == [1, 5]
    assert "'* orphan'" in info.value.problems[0].message


def test_category_subsets_match_stripped_sentences(gold):
    subsets = category_subsets(gold, ANNOTATIONS)
    assert {k: v.tolist() for k, v in subsets.items()} == {
        "category:hard-cardinality": [0, 1, 2, 3, 4, 5],
        "category:negation": [1, 3],
        "category:spatial-relation": [0, 2, 4, 5],
    }


def test_category_subsets_reject_annotations_of_another_split(gold):
    with pytest.raises(ValidationError, match="none of the 1 annotated sentences"):
        category_subsets(gold, b"Something else entirely.\n* negation\n")


def test_ids_subset_plain_and_json_lines(gold):
    assert ids_subset(gold, b"dev-1-3-1\n\ndev-1-0-0\r\ndev-1-0-0\n").tolist() == [0, 6]
    official = b'{"identifier": "dev-1-1-0", "label": "True"}\n{"identifier": "dev-1-2-0"}'
    assert ids_subset(gold, official).tolist() == [2, 4]


def test_ids_subset_unknown_identifiers_name_line_and_id(gold):
    with pytest.raises(ValidationError) as info:
        ids_subset(gold, b'dev-1-0-0\ndev-7-0-0\n{"annot_id": "x"}\n')
    assert [p.message for p in info.value.problems] == [
        "line 2: unknown identifier 'dev-7-0-0'",
        "line 3: unknown identifier 'x'",
    ]
