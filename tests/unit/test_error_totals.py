"""A refused prediction file says how many lines have errors in all, lists the first MAX_PROBLEMS by line, and
names the split's identifier form where identifiers were unknown; counting every bad line stays bounded in
memory and time (nothing past the first MAX_PROBLEMS is formatted or kept)."""

from __future__ import annotations

import numpy as np
import pytest

from app import synthetic
from app.evaluation import ValidationError, get_task
from app.evaluation.errors import MAX_PROBLEMS, Problem, ProblemList
from tests.load.memory import MB, shape
from tests.support.work import problems_made

NLVR2 = get_task("nlvr2")
VCR = get_task("vcr")


@pytest.fixture(scope="module")
def nlvr2():
    gold_file = synthetic.nlvr2_gold(2000, split="dev", seed=11)
    return NLVR2.read_gold(gold_file), synthetic.predictions("nlvr2", gold_file, 0.7, seed=1, shuffle=False)


def _refusal(task, data: bytes, gold) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        task.parse(data, gold, max_bytes=50 * MB)
    return info.value


def test_thousands_of_unknown_identifiers_give_the_true_total_and_the_identifier_form(nlvr2):
    gold, valid = nlvr2
    lines = valid.decode().splitlines()
    # Every line from the 101st on names an identifier the split does not have: 1,900 bad lines.
    lines[100:] = [f"dev-99{i}-9-9,true" for i in range(len(lines) - 100)]
    refusal = _refusal(NLVR2, ("\n".join(lines) + "\n").encode(), gold)
    assert refusal.lines == 1900 and refusal.total == 1901  # and one problem of the whole file: the missing ids
    summary = refusal.summary()
    assert summary.startswith(
        f"1,900 lines have errors and 1 problem concerns the whole file (identifiers look like {gold.ids[0]}); "
        f"the first {MAX_PROBLEMS}: line 101: unknown identifier 'dev-990-9-9'"
    )
    shown = refusal.problems[:-1]
    assert len(shown) == MAX_PROBLEMS
    assert [p.line for p in shown[: MAX_PROBLEMS - 1]] == list(range(101, 101 + MAX_PROBLEMS - 1))
    assert shown[-1].line is None and shown[-1].message.startswith("missing predictions for 1,900")
    assert refusal.problems[-1].message == f"... and {1901 - MAX_PROBLEMS:,} more problems"


def test_a_line_with_two_problems_counts_once_as_a_line(nlvr2):
    gold, valid = nlvr2
    lines = valid.decode().splitlines()
    lines[:300] = [f"nope-{i},maybe" for i in range(300)]  # unknown identifier and invalid prediction
    refusal = _refusal(NLVR2, ("\n".join(lines) + "\n").encode(), gold)
    assert refusal.lines == 300 and refusal.total == 601
    assert refusal.summary().startswith("300 lines have errors (600 problems) and 1 problem concerns the whole file")


def test_the_first_problems_by_line_are_listed_whichever_check_found_them(nlvr2):
    gold, valid = nlvr2
    lines = valid.decode().splitlines()
    for i in range(500, 700):
        lines[i] += ",extra"  # the column count: the first check
    for i in range(10, 20):
        lines[i] = lines[i].replace(",", ",perhaps-")  # invalid predictions: found later, on earlier lines
    refusal = _refusal(NLVR2, ("\n".join(lines) + "\n").encode(), gold)
    listed = [p.line for p in refusal.problems if p.line is not None]
    assert listed == list(range(11, 21)) + list(range(501, 501 + MAX_PROBLEMS - 10 - 1))
    assert refusal.lines == 210


def test_a_few_problems_are_all_listed_and_one_is_said_as_it_is(nlvr2):
    gold, valid = nlvr2
    lines = valid.decode().splitlines()
    lines[4] = lines[4].replace("True", "yes").replace("False", "yes")
    one = _refusal(NLVR2, ("\n".join(lines) + "\n").encode(), gold)
    assert one.total == 1 and one.summary() == one.problems[0].message and one.summary().startswith("line 5:")
    lines[6] = lines[6].replace("True", "yes").replace("False", "yes")
    two = _refusal(NLVR2, ("\n".join(lines) + "\n").encode(), gold)
    assert two.summary().startswith("2 lines have errors: line 5: invalid prediction 'yes'")
    assert len(two.problems) == 2  # no count of the rest: there is none


def test_vcr_counts_bad_cells_to_the_end_of_the_file():
    """The VCR path reads scores as text a chunk of rows at a time: it goes on to the last chunk (it used to
    stop once the first held more problems than are shown), so the total is true."""
    gold_file = synthetic.vcr_gold(9000, seed=5)
    gold = VCR.read_gold(gold_file)
    lines = synthetic.predictions("vcr", gold_file, 0.5, seed=1).decode().splitlines()
    bad = list(range(1, 81)) + [len(lines) - 1]  # 80 lines at the top, and the very last
    for i in bad:
        cells = lines[i].split(",")
        cells[3] = "n/a"
        lines[i] = ",".join(cells)
    refusal = _refusal(VCR, ("\n".join(lines) + "\n").encode(), gold)
    assert refusal.lines == len(bad) == refusal.total
    assert refusal.summary().startswith(f"81 lines have errors; the first {MAX_PROBLEMS}: line 2: invalid score 'n/a'")
    assert not any("checking stopped" in p.message for p in refusal.problems)


def test_a_large_vcr_file_of_junk_is_counted_in_bounded_work(monkeypatch):
    """Every cell of a 20 MB VCR file is junk: hundreds of thousands of problems, counted, not kept. Counted, not
    timed: it puts as many problems in words as a 5 MB file does (each problem put in words before: 150,000)."""
    made = problems_made(monkeypatch)
    gold_file = synthetic.vcr_gold(4000, seed=5)
    gold = VCR.read_gold(gold_file)
    valid = synthetic.predictions("vcr", gold_file, 0.5)
    worded = []
    for size in (5 * MB, 20 * MB):
        data = shape("CRLF, junk cells", "vcr", valid, size)
        made.clear()
        refusal = _refusal(VCR, data, gold)
        worded.append(len(made))
    rows = data.count(b"\n") - 1  # the header's line is not a row
    assert refusal.lines == rows and refusal.total > 20 * rows
    assert len(refusal.problems) == MAX_PROBLEMS + 1
    assert refusal.summary().startswith(f"{rows:,} lines have errors (")
    assert worded[0] == worded[1] < refusal.total // 100, (worded, refusal.total)


def test_the_problem_list_formats_and_keeps_only_what_it_shows():
    """A million bad rows: MAX_PROBLEMS messages formatted, the rest counted; a byte a line for the count."""
    problems = ProblemList()
    calls = []
    lines = np.arange(1, 1_000_001)

    def describe(row: int) -> str:
        calls.append(row)
        return "bad"

    problems.add_lines(lines, np.arange(lines.size)[::-1], describe)
    problems.add_lines(lines, np.arange(0, lines.size, 2), describe)  # the same lines again: counted once
    assert len(calls) <= 2 * MAX_PROBLEMS
    assert problems.count == 1_500_000 and problems.lines == 1_000_000
    assert problems._bad_lines.nbytes <= 2 * 1_000_001
    with pytest.raises(ValidationError) as info:
        problems.raise_if_any()
    assert [p.line for p in info.value.problems[:MAX_PROBLEMS]] == sorted([*range(1, 51), *range(1, 50, 2)])[
        :MAX_PROBLEMS
    ]
    assert info.value.lines == 1_000_000 and info.value.total == 1_500_000


def test_a_validation_error_made_by_hand_counts_its_own_lines():
    error = ValidationError([Problem(3, "line 3: x"), Problem(3, "line 3: y"), Problem(None, "z")])
    assert (error.lines, error.whole_file, error.total) == (1, 1, 3)
    assert error.summary() == "1 line has errors (2 problems) and 1 problem concerns the whole file: line 3: x …"
