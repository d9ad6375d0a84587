"""Hostile prediction files: every shape on every task type is refused naming a line, and what refusing
costs grows linearly with the file's size with a small constant (memory, measured; never a time)."""

import tracemalloc

import pytest

from app import synthetic
from app.evaluation import ValidationError, get_task
from tests.hostile import shapes

MB = 2**20
GOLDS = {
    "nlvr2": lambda: synthetic.nlvr2_gold(2000, "test"),
    "nlvr-structured": lambda: synthetic.nlvr_gold(800),
    "nlvr-images": lambda: synthetic.nlvr_gold(800),
    "vcr": lambda: synthetic.vcr_gold(800),
}


@pytest.fixture(scope="module", params=sorted(GOLDS))
def split(request):
    task = get_task(request.param)
    gold_bytes = GOLDS[request.param]()
    valid = (
        synthetic.predictions("vcr", gold_bytes, 0.5)
        if request.param == "vcr"
        else synthetic.all_true(request.param, gold_bytes)
    )
    return task, task.read_gold(gold_bytes), valid


def refusal_peak(task, gold, data: bytes) -> tuple[ValidationError, int]:
    """The error and the peak of memory allocated while parsing (numpy and Python objects alike)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValidationError) as caught:
            task.parse(data, gold, max_bytes=60 * MB)
        return caught.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_every_hostile_shape_is_refused_naming_a_line(split):
    task, gold, valid = split
    for name, data in shapes(task.name, valid, 3 * MB).items():
        error, _ = refusal_peak(task, gold, data)
        first = error.problems[0]
        assert first.line is not None, (name, first.message)
        assert first.message.startswith(f"line {first.line}: "), (name, first.message)
        assert len(error.problems) <= 51, name


def test_refusing_costs_linear_memory_with_a_small_constant(split):
    task, gold, valid = split
    small, large = shapes(task.name, valid, 2 * MB), shapes(task.name, valid, 4 * MB)
    for name in small:
        _, peak_small = refusal_peak(task, gold, small[name])
        _, peak_large = refusal_peak(task, gold, large[name])
        # Twice the file may cost at most about twice the memory (plus what any file costs) ...
        assert peak_large <= 2.2 * peak_small + 2 * MB, (name, peak_small, peak_large)
        # ... and never more than a few times the file's own size.
        assert peak_large <= 3 * 4 * MB, (name, peak_large)


def test_a_file_too_long_for_the_split_is_refused_at_the_first_line_past_the_bound(split):
    task, gold, valid = split
    rows = gold.n * gold.n_images
    data = valid + b"\n".join([valid.splitlines()[-1]] * (3 * rows + 1000)) + b"\n"
    error, _ = refusal_peak(task, gold, data)
    assert len(error.problems) == 1
    assert error.problems[0].line == 2 * rows + 1001
    assert "too many lines" in error.problems[0].message


def test_an_over_long_line_is_named_with_its_length(split):
    task, gold, valid = split
    lines = valid.splitlines()
    lines[3] = lines[3] + b" " * 5000
    error, _ = refusal_peak(task, gold, b"\n".join(lines) + b"\n")
    assert error.problems[0].line == 4
    assert "bytes" in error.problems[0].message
