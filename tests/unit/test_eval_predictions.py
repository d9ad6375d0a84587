"""Parsing prediction files: what is tolerated, and every rejection naming its line and identifier."""

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task
from app.evaluation.errors import MAX_PROBLEMS
from app.evaluation.tasks.vcr.formats import VCR_COLUMNS, VCR_SCORE_COLUMNS
from tests.support.files import jsonl

NLVR2 = get_task("nlvr2")
STRUCTURED = get_task("nlvr-structured")
IMAGES = get_task("nlvr-images")
VCR = get_task("vcr")

NLVR2_IDS = [f"dev-{s}-{p}-{k}" for s in (850, 851) for p in range(2) for k in range(2)]
NLVR2_LABELS = [True, False, False, True, True, True, False, False]
NLVR_IDS = ["1572-0", "1572-1", "3-0", "3-1"]


@pytest.fixture(scope="module")
def nlvr2_gold():
    return NLVR2.read_gold(
        jsonl(
            [
                {"identifier": i, "label": str(lab), "left_url": "L", "right_url": "R", "sentence": "S"}
                for i, lab in zip(NLVR2_IDS, NLVR2_LABELS, strict=True)
            ]
        )
    )


@pytest.fixture(scope="module")
def nlvr_records():
    return jsonl([{"identifier": i, "label": "true" if j % 2 else "false"} for j, i in enumerate(NLVR_IDS)])


@pytest.fixture(scope="module")
def structured_gold(nlvr_records):
    return STRUCTURED.read_gold(nlvr_records)


@pytest.fixture(scope="module")
def images_gold(nlvr_records):
    return IMAGES.read_gold(nlvr_records)


@pytest.fixture(scope="module")
def vcr_gold():
    return VCR.read_gold(
        jsonl([{"annot_id": f"val-{i}", "answer_label": i % 4, "rationale_label": (i + 1) % 4} for i in range(5)])
    )


def csv_lines(lines, newline="\n", end="\n"):
    return (newline.join(lines) + end).encode()


def nlvr2_file(words=None, ids=NLVR2_IDS):
    words = words or ["true" if lab else "false" for lab in NLVR2_LABELS]
    return [f"{i},{w}" for i, w in zip(ids, words, strict=True)]


def rejected(task, data, gold, **kw):
    with pytest.raises(ValidationError) as info:
        task.parse(data, gold, **kw)
    return info.value.problems


# --- tolerance ---------------------------------------------------------------------------------------


def test_plain_file_parses_in_gold_order(nlvr2_gold):
    lines = nlvr2_file()
    parsed = NLVR2.parse(csv_lines(lines[::-1]), nlvr2_gold)
    assert parsed.dtype == bool and parsed.tolist() == NLVR2_LABELS


@pytest.mark.parametrize("header", ["identifier,prediction", "id,label", "Identifier , Prediction"])
def test_optional_header_is_accepted(nlvr2_gold, header):
    assert NLVR2.parse(csv_lines([header] + nlvr2_file()), nlvr2_gold).tolist() == NLVR2_LABELS


def test_case_spaces_crlf_bom_quotes_and_trailing_blank_lines(nlvr2_gold):
    words = [" TRUE", "false ", "False", "True", "tRuE", '"true"', " false\t", "FALSE"]
    data = b"\xef\xbb\xbf" + csv_lines([f" {line} " for line in nlvr2_file(words)], newline="\r\n", end="\r\n\r\n \n")
    assert NLVR2.parse(data, nlvr2_gold).tolist() == NLVR2_LABELS


def test_no_trailing_newline_and_blank_lines_in_between(nlvr2_gold):
    lines = nlvr2_file()
    data = csv_lines(lines[:3] + ["", "   "] + lines[3:], end="")
    assert NLVR2.parse(data, nlvr2_gold).tolist() == NLVR2_LABELS


def test_structured_accepts_a_split_prefix(structured_gold):
    data = csv_lines(["dev-1572-0,false", "1572-1,true", "test-3-0,true", "hidden-3-1,false"])
    assert STRUCTURED.parse(data, structured_gold).tolist() == [False, True, True, False]


@pytest.mark.parametrize(
    "pattern", ["dev-{id}-{k}.png", "{id}-{k}.png", "dev-{id}-{k}", "{id}-{k}", "test-{id}-{k}.PNG"]
)
def test_image_name_variants(images_gold, pattern):
    lines = [
        f"{pattern.format(id=i, k=k)},{'true' if (j + k) % 2 else 'false'}"
        for j, i in enumerate(NLVR_IDS)
        for k in range(6)
    ]
    parsed = IMAGES.parse(csv_lines(["image,prediction"] + lines[::-1]), images_gold)
    assert parsed.shape == (4, 6) and parsed.dtype == bool
    assert parsed.tolist() == [[(j + k) % 2 == 1 for k in range(6)] for j in range(4)]


def vcr_rows(gold_ids, answers, rationales, columns=VCR_COLUMNS):
    """Rows putting the maximum on ``answers[i]`` and on ``rationales[i]`` in every rationale block."""
    lines = [",".join(columns)]
    for i, a, r in zip(gold_ids, answers, rationales, strict=True):
        values = {"annot_id": i}
        for name in VCR_SCORE_COLUMNS:
            choice = int(name[-1])
            wanted = a if name.startswith("answer") else r
            values[name] = f"{0.7 if choice == wanted else 0.1:.2f}"
        lines.append(",".join(values[c] for c in columns))
    return lines


def test_vcr_argmax_any_column_order_and_join_on_annot_id(vcr_gold):
    columns = VCR_COLUMNS[::-1]  # annot_id last
    ids = vcr_gold.ids.tolist()
    lines = vcr_rows(ids[::-1], [3, 2, 1, 0, 3], [0, 1, 2, 3, 0], columns)  # rows in reverse gold order
    parsed = VCR.parse(csv_lines(lines), vcr_gold)
    assert parsed.dtype == np.int8 and parsed.shape == (5, 5)
    assert parsed[:, 0].tolist() == [3, 0, 1, 2, 3]
    assert parsed[:, 1:].tolist() == [[r] * 4 for r in [0, 3, 2, 1, 0]]


def test_vcr_ties_take_the_first_choice_and_accept_scientific_notation(vcr_gold):
    lines = [",".join(VCR_COLUMNS)] + [f"{i}," + ",".join(["1e-3"] * 20) for i in vcr_gold.ids]
    parsed = VCR.parse(csv_lines(lines, newline="\r\n"), vcr_gold)
    assert (parsed == 0).all()


# --- rejections --------------------------------------------------------------------------------------


def test_unknown_identifier(nlvr2_gold):
    problems = rejected(NLVR2, csv_lines(nlvr2_file() + ["dev-9-0-1,true"]), nlvr2_gold)
    assert [p.message for p in problems] == ["line 9: unknown identifier 'dev-9-0-1'"]
    assert problems[0].line == 9


def test_duplicate_identifier_names_both_lines(nlvr2_gold):
    problems = rejected(NLVR2, csv_lines(nlvr2_file() + [f"{NLVR2_IDS[2]},false"]), nlvr2_gold)
    assert problems[0].message == f"line 9: duplicate identifier '{NLVR2_IDS[2]}' (first on line 3)"


def test_missing_identifiers_one_problem_with_count_and_first_ten_in_gold_order():
    ids = [f"dev-{s}-{p}-0" for s in range(3) for p in range(4)]  # 12 examples
    gold = NLVR2.read_gold(
        jsonl([{"identifier": i, "label": "True", "left_url": "L", "right_url": "R", "sentence": "S"} for i in ids])
    )
    problems = rejected(NLVR2, csv_lines([f"{ids[5]},true"]), gold)
    assert len(problems) == 1 and problems[0].line is None
    message = problems[0].message
    assert "11" in message
    missing = [i for i in ids if i != ids[5]]
    shown = [i for i in missing if f"'{i}'" in message]
    assert shown == missing[:10]
    assert message.index(f"'{missing[0]}'") < message.index(f"'{missing[9]}'")


def test_invalid_label_names_line_value_and_identifier(nlvr2_gold):
    words = ["true", "false", "false", "true", "yes", "true", "false", "false"]
    problems = rejected(NLVR2, csv_lines(nlvr2_file(words)), nlvr2_gold)
    assert [p.message for p in problems] == [
        f"line 5: invalid prediction 'yes' for '{NLVR2_IDS[4]}'; expected true or false"
    ]


def test_wrong_column_count_gives_expected_and_found(nlvr2_gold):
    lines = nlvr2_file()
    lines[1] = lines[1] + ",0.9"
    lines[6] = NLVR2_IDS[6]
    problems = rejected(NLVR2, csv_lines(["identifier,prediction", ""] + lines), nlvr2_gold)
    messages = [p.message for p in problems]
    # physical lines: header on 1, a blank line 2, so lines[1] is on line 4 and lines[6] on line 9
    assert f"line 4: expected 2 columns, found 3: '{NLVR2_IDS[1]},false,0.9'" in messages
    assert f"line 9: expected 2 columns, found 1: '{NLVR2_IDS[6]}'" in messages


@pytest.mark.parametrize("data", [b"", b"\n", b" \r\n\t\n", b"\xef\xbb\xbf"])
def test_empty_file(nlvr2_gold, data):
    problems = rejected(NLVR2, data, nlvr2_gold)
    assert problems[0].message == "file is empty"


def test_header_only_file(nlvr2_gold):
    problems = rejected(NLVR2, b"identifier,prediction\n", nlvr2_gold)
    assert problems[0].message == "file contains no predictions"


def test_non_utf8_names_the_line_of_the_first_bad_byte(nlvr2_gold):
    data = csv_lines(nlvr2_file()[:2]) + "dev-850-1-0,tr\u00fce\n".encode("latin-1") + csv_lines(nlvr2_file()[3:])
    problems = rejected(NLVR2, data, nlvr2_gold)
    assert problems[0].line == 3 and "UTF-8" in problems[0].message and problems[0].message.startswith("line 3:")


def test_binary_content_is_rejected(nlvr2_gold):
    data = csv_lines(nlvr2_file()[:4]) + b"PK\x03\x04\x00\x00binary"
    problems = rejected(NLVR2, data, nlvr2_gold)
    assert problems[0].line == 5 and "binary" in problems[0].message


def test_file_over_the_size_limit_gives_both_sizes_in_mb(nlvr2_gold):
    data = csv_lines(nlvr2_file()) + b" " * (3 * 2**20)
    problems = rejected(NLVR2, data, nlvr2_gold, max_bytes=2 * 2**20)
    assert "3.00 MB" in problems[0].message and "2.00 MB" in problems[0].message


def test_many_problems_are_capped_with_a_count(nlvr2_gold):
    lines = nlvr2_file() + [f"dev-9-{i}-0,true" for i in range(120)]
    problems = rejected(NLVR2, csv_lines(lines), nlvr2_gold)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].message == f"... and {120 - MAX_PROBLEMS} more problems"
    assert problems[0].message == "line 9: unknown identifier 'dev-9-0-0'"


def test_all_problems_are_reported_in_line_order(nlvr2_gold):
    lines = nlvr2_file()
    lines[0] = "dev-9-9-9,true"
    lines[3] = f"{NLVR2_IDS[3]},maybe"
    lines[5] = lines[5] + ",extra"
    problems = rejected(NLVR2, csv_lines(lines), nlvr2_gold)
    assert [p.line for p in problems] == [1, 4, 6, None]
    assert problems[-1].message.startswith("missing predictions for 2 identifiers")


def test_structured_unknown_identifier_is_named_as_written(structured_gold):
    data = csv_lines(["dev-1572-0,true", "1572-1,true", "3-0,true", "3-1,true", "12-3-1,true", "dev-99-0,false"])
    messages = [p.message for p in rejected(STRUCTURED, data, structured_gold)]
    assert messages == ["line 5: unknown identifier '12-3-1'", "line 6: unknown identifier 'dev-99-0'"]


def test_images_require_all_six_images(images_gold):
    lines = [f"dev-{i}-{k}.png,true" for i in NLVR_IDS for k in range(6) if (i, k) != ("3-0", 4)]
    problems = rejected(IMAGES, csv_lines(lines), images_gold)
    assert [p.message for p in problems] == ["missing predictions for 1 image of 24: '3-0-4'"]


def test_images_unknown_and_duplicate_names(images_gold):
    lines = [f"dev-{i}-{k}.png,true" for i in NLVR_IDS for k in range(6)]
    lines += ["dev-1572-0-6.png,true", "dev-1572-0-2.png,false", "dev-77-0-1.png,true"]
    messages = [p.message for p in rejected(IMAGES, csv_lines(lines), images_gold)]
    assert messages[0].startswith("line 25: unknown image 'dev-1572-0-6.png'") and "0-5" in messages[0]
    assert messages[1] == "line 26: duplicate image 'dev-1572-0-2.png' (first on line 3)"
    assert messages[2] == "line 27: unknown image 'dev-77-0-1.png'"


def test_vcr_missing_and_extra_columns_are_named(vcr_gold):
    columns = [c for c in VCR_COLUMNS if c != "rationale_conditioned_on_a2_3"] + ["confidence"]
    lines = [",".join(columns)] + [f"{i}," + ",".join(["0.5"] * 21) for i in vcr_gold.ids]
    messages = [p.message for p in rejected(VCR, csv_lines(lines), vcr_gold)]
    assert any(m.startswith("line 1: missing columns") and "rationale_conditioned_on_a2_3" in m for m in messages)
    assert any(m.startswith("line 1: unexpected columns") and "'confidence'" in m for m in messages)


@pytest.mark.parametrize("bad", ["abc", "nan", "NaN", "inf", "-inf", "", "1e999"])
def test_vcr_bad_scores_name_line_column_and_annot_id(vcr_gold, bad):
    lines = vcr_rows(vcr_gold.ids.tolist(), [0] * 5, [0] * 5)
    cells = lines[3].split(",")
    cells[VCR_COLUMNS.index("rationale_conditioned_on_a1_2")] = bad
    lines[3] = ",".join(cells)
    problems = rejected(VCR, csv_lines(lines), vcr_gold)
    assert len(problems) == 1
    message = problems[0].message
    assert message.startswith("line 4: invalid score") and "rationale_conditioned_on_a1_2" in message
    assert "'val-2'" in message


def test_vcr_unknown_duplicate_missing_and_column_count(vcr_gold):
    lines = vcr_rows(["val-0", "val-1", "val-1", "val-7"], [0] * 4, [0] * 4)
    lines.append("val-3,0.1,0.2")
    messages = [p.message for p in rejected(VCR, csv_lines(lines), vcr_gold)]
    assert messages == [
        "line 4: duplicate identifier 'val-1' (first on line 3)",
        "line 5: unknown identifier 'val-7'",
        "line 6: expected 21 columns, found 3: 'val-3,0.1,0.2'",
        "missing predictions for 3 identifiers of 5: 'val-2', 'val-3', 'val-4'",
    ]


def test_vcr_file_without_header_is_rejected(vcr_gold):
    lines = vcr_rows(vcr_gold.ids.tolist(), [0] * 5, [0] * 5)[1:]
    problems = rejected(VCR, csv_lines(lines), vcr_gold)
    assert problems[0].line == 1 and "header" in problems[0].message and "annot_id" in problems[0].message


def test_messages_never_contain_gold_labels(nlvr2_gold):
    """Gold labels must not leak through problems: no message mentions 'expected True/False' etc."""
    lines = nlvr2_file(["maybe"] * 8)
    for problem in rejected(NLVR2, csv_lines(lines), nlvr2_gold):
        assert "expected true or false" in problem.message
        assert "True" not in problem.message and "False" not in problem.message


def test_many_blank_lines_keep_physical_line_numbers(nlvr2_gold):
    lines = nlvr2_file()
    padded = []
    for line in lines:
        padded += [line] + [" ", "", "\t\r"] * 30  # 90 blank lines after each row
    padded[-1] = "dev-9-9-9,true"
    data = csv_lines(padded, newline="\r\n")
    problems = rejected(NLVR2, data, nlvr2_gold)
    assert [p.message for p in problems] == [f"line {len(padded)}: unknown identifier 'dev-9-9-9'"]
    padded[-1] = ""
    assert NLVR2.parse(csv_lines(padded), nlvr2_gold).tolist() == NLVR2_LABELS


def test_header_is_only_recognised_on_the_first_line(nlvr2_gold):
    problems = rejected(NLVR2, csv_lines(nlvr2_file()[:4] + ["identifier,prediction"] + nlvr2_file()[4:]), nlvr2_gold)
    assert problems[0].message == "line 5: invalid prediction 'prediction' for 'identifier'; expected true or false"
    assert problems[1].message == "line 5: unknown identifier 'identifier'"
