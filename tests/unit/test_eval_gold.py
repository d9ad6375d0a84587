"""Reading gold files: arrays, groups, fields, and problems that name the line."""

import json

import numpy as np
import pandas as pd
import pytest

from app import synthetic
from app.evaluation import GoldSet, ValidationError, get_task, read_gold
from app.evaluation.text_files import show
from tests.support import files


def jsonl(records, end=b"\n"):
    """Gold files here end with a newline unless a test says otherwise."""
    return files.jsonl(records, end)


def nlvr2_record(identifier, label="True", left="L", right="R", sentence="S."):
    return {
        "identifier": identifier,
        "label": label,
        "left_url": left,
        "right_url": right,
        "sentence": sentence,
        "synset": "dog",
        "validation": {"1": label},
    }


def messages(exc_info):
    return [p.message for p in exc_info.value.problems]


def test_nlvr2_gold_arrays_and_groups():
    data = jsonl(
        [
            nlvr2_record("dev-850-0-0", "True"),
            nlvr2_record("dev-850-1-0", "False"),
            nlvr2_record("dev-850-0-1", "False"),
            nlvr2_record("dev-851-0-0", "True"),
        ],
        end=b"",
    )  # the last line may lack its newline
    gold = read_gold("nlvr2", data)
    assert isinstance(gold, GoldSet) and gold.task == "nlvr2" and gold.n == 4
    assert gold.ids.tolist() == ["dev-850-0-0", "dev-850-1-0", "dev-850-0-1", "dev-851-0-0"]
    assert gold.labels.dtype == bool and gold.labels.tolist() == [True, False, False, True]
    # pair_id is dropped: dev-850-*-0 share a group, dev-850-*-1 and dev-851-*-0 are others
    assert gold.groups.dtype == np.int32 and gold.groups.tolist() == [0, 0, 1, 2]
    assert gold.n_groups == 3
    assert {"sentence", "left_url", "right_url"} <= set(gold.fields)
    assert "label" not in gold.fields and "validation" not in gold.fields  # labels never become fields
    assert gold.index["dev-850-0-1"] == 2
    assert gold.id_index.get_indexer(["dev-851-0-0", "nope"]).tolist() == [3, -1]
    assert gold.n_images == 1


def test_nlvr_gold_groups_by_sentence_and_images_task_has_six_images():
    data = jsonl(
        [
            {"identifier": f"{n}-{m}", "label": ["true", "false"][m % 2], "sentence": f"s{n}"}
            for n in (1572, 3)
            for m in range(4)
        ]
    )
    gold = get_task("nlvr-structured").read_gold(data)
    assert gold.groups.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert gold.labels.tolist() == [True, False] * 4
    images = get_task("nlvr-images").read_gold(data)
    assert images.n_images == 6 and images.n == 8 and images.task == "nlvr-images"


def test_vcr_gold_labels_and_scalar_fields():
    data = jsonl(
        [
            {
                "annot_id": "val-0",
                "answer_label": 3,
                "rationale_label": 1,
                "region": "west",
                "question_number": 0,
                "answer_choices": [["a"], ["b"]],
            },
            {
                "annot_id": "val-1",
                "answer_label": 0,
                "rationale_label": 2,
                "region": "africa",
                "question_number": 1,
                "answer_choices": [["c"]],
            },
        ]
    )
    gold = read_gold("vcr", data)
    assert gold.labels.dtype == np.int8 and gold.labels.tolist() == [[3, 1], [0, 2]]
    assert gold.groups.tolist() == [0, 1]
    assert gold.fields["region"].tolist() == ["west", "africa"]
    assert gold.fields["question_number"].tolist() == ["0", "1"]
    assert "answer_choices" not in gold.fields and "answer_label" not in gold.fields


def test_gold_accepts_crlf_blank_lines_and_a_bom():
    data = (
        b"\xef\xbb\xbf"
        + jsonl([nlvr2_record("dev-1-0-0"), nlvr2_record("dev-1-1-0", "False")]).replace(b"\n", b"\r\n")
        + b"\r\n\r\n"
    )
    gold = read_gold("nlvr2", data)
    assert gold.labels.tolist() == [True, False]


def test_gold_problems_name_line_and_identifier_without_echoing_labels():
    data = jsonl(
        [
            nlvr2_record("dev-1-0-0"),
            nlvr2_record("dev-1-0-0"),  # line 2: duplicate
            nlvr2_record("dev-1-1-0", label="Perhaps"),  # line 3: bad label
            {"label": "True"},  # line 4: no identifier
            nlvr2_record("nonsense"),  # line 5: wrong form
            {"identifier": "dev-1-2-0", "label": "True"},  # line 6: no urls
            [1, 2],  # line 7: not an object
        ]
    )
    with pytest.raises(ValidationError) as info:
        read_gold("nlvr2", data)
    found = messages(info)
    assert [p.line for p in info.value.problems] == [2, 3, 4, 5, 6, 7]
    assert "line 2: duplicate identifier 'dev-1-0-0' (first on line 1)" in found
    assert found[1].startswith("line 3:") and "'dev-1-1-0'" in found[1] and "Perhaps" not in found[1]
    assert "'identifier'" in found[2]
    assert "'nonsense'" in found[3]
    assert "'left_url'" in found[4] and "'dev-1-2-0'" in found[4]
    assert "JSON object" in found[5]


def test_gold_invalid_json_names_the_line():
    data = jsonl([nlvr2_record("dev-1-0-0")]) + b'{"identifier": "dev-1-1-0", "label": \n'
    with pytest.raises(ValidationError) as info:
        read_gold("nlvr2", data)
    assert messages(info)[0].startswith("line 2: invalid JSON")


@pytest.mark.parametrize("bad", [4, -1, "2", True, None])
def test_vcr_gold_rejects_bad_labels(bad):
    data = jsonl(
        [
            {"annot_id": "val-0", "answer_label": 1, "rationale_label": 1},
            {"annot_id": "val-1", "answer_label": bad, "rationale_label": 1},
        ]
    )
    with pytest.raises(ValidationError) as info:
        read_gold("vcr", data)
    assert messages(info)[0].startswith("line 2:") and "'val-1'" in messages(info)[0]


@pytest.mark.parametrize("data", [b"", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_gold_is_rejected(data):
    with pytest.raises(ValidationError, match="empty"):
        read_gold("nlvr2", data)


def test_unknown_task_type_names_the_choices():
    with pytest.raises(ValueError, match="unknown task type 'nlvr3'.*nlvr2"):
        read_gold("nlvr3", b"{}")


def test_gold_repr_does_not_show_labels():
    gold = read_gold("nlvr2", jsonl([nlvr2_record("dev-1-0-0", "True"), nlvr2_record("dev-1-1-0", "False")]))
    text = repr(gold)
    assert "n=2" in text and "True" not in text and "False" not in text and "dev-1-0-0" not in text


# --- the byte-level identifier lookup behind the prediction parser's fast path ---------------------------


def _nlvr2_gold(ids):
    return read_gold("nlvr2", jsonl([nlvr2_record(i) for i in ids]))


def test_positions_of_bytes_in_order_shuffled_unknown_and_repeated():
    ids = [f"dev-{n}-{p}-{s}" for n in range(40) for p in range(2) for s in range(2)]
    gold = _nlvr2_gold(ids)
    in_order = np.array([i.encode() for i in ids])
    assert gold.positions_of_bytes(in_order).tolist() == list(range(len(ids)))
    rng = np.random.default_rng(1)
    shuffled = rng.permutation(len(ids))
    assert gold.positions_of_bytes(in_order[shuffled]).tolist() == shuffled.tolist()
    # Unknown, empty, a prefix and an extension of a real id, a repeat; the array's width does not matter.
    cells = np.array([b"dev-3-1-0", b"dev-999-0-0", b"", b"dev-3-1-", b"dev-3-1-00", b"dev-3-1-0"], dtype="S40")
    assert gold.positions_of_bytes(cells).tolist() == [ids.index("dev-3-1-0"), -1, -1, -1, -1, ids.index("dev-3-1-0")]


def test_positions_of_bytes_checks_the_bytes_not_only_the_hash(monkeypatch):
    gold = _nlvr2_gold(["dev-1-0-0", "dev-2-0-0"])
    from app.evaluation import gold as gold_module

    # Every cell hashes alike: only the exact comparison can tell the ids apart.
    monkeypatch.setattr(gold_module, "byte_hashes", lambda cells: np.zeros(cells.size, dtype=np.uint64))
    monkeypatch.setitem(gold.__dict__, "_id_hash_index", pd.Index(np.array([0, 1], dtype=np.uint64)))
    # (Not both ids in gold order: that file is recognised before any hashing.)
    assert gold.positions_of_bytes(np.array([b"dev-2-0-0", b"dev-1-0-0"])).tolist() == [-1, 0]


def test_byte_hashes_ignore_padding_and_tell_bytes_apart():
    from app.evaluation.gold import byte_hashes

    narrow = byte_hashes(np.array([b"abc", b"abd", b"x" * 17], dtype="S17"))
    wide = byte_hashes(np.array([b"abc", b"abd", b"x" * 17], dtype="S64"))
    assert narrow.tolist() == wide.tolist() and len(set(narrow.tolist())) == 3
    with pytest.raises(ValueError):
        byte_hashes(np.array([b"y" * 65]))


def test_parser_fast_path_and_general_path_agree_on_every_spelling():
    """Cells the byte-level path settles and cells it leaves to the general path parse alike."""
    ids = [f"dev-{n}-{p}-0" for n in range(30) for p in range(2)]
    gold = _nlvr2_gold(ids)
    task = get_task("nlvr2")
    rng = np.random.default_rng(7)
    truth = rng.random(len(ids)) < 0.5
    spellings = [("{i},{w}", str), ('"{i}","{w}"', str), (" {i} , {w} ", str.upper), ("{i},{w}\r", str.lower)]
    for pattern, case in spellings:
        lines = [pattern.format(i=i, w=case(str(bool(t)))) for i, t in zip(ids, truth, strict=True)]
        order = rng.permutation(len(lines))
        mixed = [lines[j] if j % 2 else f"{ids[j]},{bool(truth[j])}" for j in order]  # half plain, half not
        parsed = task.parse(("\n".join(mixed) + "\n").encode(), gold)
        assert parsed.tolist() == truth.tolist(), pattern
    long_id_gold = _nlvr2_gold(["dev-" + "7" * 80 + "-0-0", "dev-1-0-0"])  # over the fast path's width
    parsed = task.parse(("dev-" + "7" * 80 + "-0-0,true\ndev-1-0-0,false\n").encode(), long_id_gold)
    assert parsed.tolist() == [True, False]


@pytest.mark.parametrize(
    "task_name, gold_of",
    [
        ("nlvr2", lambda: synthetic.nlvr2_gold(16)),
        ("nlvr-structured", lambda: synthetic.nlvr_gold(8)),
        ("nlvr-images", lambda: synthetic.nlvr_gold(8)),
        ("vcr", lambda: synthetic.vcr_gold(8)),
    ],
)
def test_a_duplicate_identifier_is_refused_on_both_paths(task_name, gold_of):
    """Alone in an otherwise well-formed file (the column-wise fast path) and beside another defect (the
    per-record path), a repeated identifier is named with its line and its first line."""
    lines = gold_of().splitlines()
    duplicate = lines + [lines[0]]
    with pytest.raises(ValidationError) as only:
        get_task(task_name).read_gold(b"\n".join(duplicate) + b"\n")
    assert [p.message for p in only.value.problems] == [
        f"line {len(duplicate)}: duplicate identifier {show(json.loads(lines[0])[KEYS[task_name]])} (first on line 1)"
    ]
    record = json.loads(lines[1])
    record["answer_label" if task_name == "vcr" else "label"] = "maybe"  # a second defect: the slow path
    duplicate[1] = json.dumps(record).encode()
    with pytest.raises(ValidationError) as mixed:
        get_task(task_name).read_gold(b"\n".join(duplicate) + b"\n")
    assert {p.line for p in mixed.value.problems} == {2, len(duplicate)}
    assert f"line {len(duplicate)}: duplicate identifier" in str(mixed.value)


KEYS = {"nlvr2": "identifier", "nlvr-structured": "identifier", "nlvr-images": "identifier", "vcr": "annot_id"}
