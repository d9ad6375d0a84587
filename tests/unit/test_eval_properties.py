"""Property tests: the parsers accept any line order, and reject anything else only with ValidationError."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.evaluation import ValidationError, get_task
from app.evaluation.tasks.vcr.formats import VCR_COLUMNS
from tests.support.files import jsonl

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TASKS = ["nlvr2", "nlvr-structured", "nlvr-images", "vcr"]


def _golds():
    rng = np.random.default_rng(11)
    nlvr = jsonl(
        [{"identifier": f"{n}-{m}", "label": bool(rng.random() < 0.5)} for n in (5, 17, 230) for m in range(4)]
    )
    return {
        "nlvr2": get_task("nlvr2").read_gold(
            jsonl(
                [
                    {
                        "identifier": f"dev-{s}-{p}-{k}",
                        "label": "True" if rng.random() < 0.5 else "False",
                        "left_url": f"L{p}",
                        "right_url": f"R{p}",
                        "sentence": f"s{s}{k}",
                    }
                    for s in (3, 40)
                    for p in range(4)
                    for k in range(2)
                ]
            )
        ),
        "nlvr-structured": get_task("nlvr-structured").read_gold(nlvr),
        "nlvr-images": get_task("nlvr-images").read_gold(nlvr),
        "vcr": get_task("vcr").read_gold(
            jsonl(
                [
                    {
                        "annot_id": f"val-{i}",
                        "answer_label": int(rng.integers(4)),
                        "rationale_label": int(rng.integers(4)),
                    }
                    for i in range(6)
                ]
            )
        ),
    }


GOLDS = _golds()


def _valid_lines(name, rng):
    """(header or None, data lines) of a valid prediction file for GOLDS[name]."""
    gold = GOLDS[name]
    if name == "vcr":
        rows = [f"{i}," + ",".join(f"{x:.3f}" for x in rng.random(20)) for i in gold.ids]
        return ",".join(VCR_COLUMNS), rows
    words = lambda k: ["true", "False", "TRUE", " false "][int(rng.integers(4))]  # noqa: E731
    if name == "nlvr-images":
        return None, [f"dev-{i}-{k}.png,{words(k)}" for i in gold.ids for k in range(6)]
    return "identifier,prediction", [f"{i},{words(0)}" for i in gold.ids]


def valid_file(name, seed=0):
    header, rows = _valid_lines(name, np.random.default_rng(seed))
    return ("\n".join(([header] if header else []) + rows) + "\n").encode()


def parse_or_reject(name, data):
    """Parse; any exception other than ValidationError fails the test. Returns the array or None."""
    try:
        result = get_task(name).parse(data, GOLDS[name], max_bytes=10_000)
    except ValidationError as exc:
        assert exc.problems and all(p.message for p in exc.problems)
        assert all(p.line is None or (isinstance(p.line, int) and p.line >= 1) for p in exc.problems)
        return None
    assert result.shape == get_task(name).prediction_shape(GOLDS[name].n)
    return result


@pytest.mark.parametrize("name", TASKS)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), crlf=st.booleans(), data=st.data())
def test_shuffling_lines_changes_nothing(name, seed, crlf, data):
    header, rows = _valid_lines(name, np.random.default_rng(seed))
    newline = "\r\n" if crlf else "\n"
    original = (newline.join(([header] if header else []) + rows)).encode()
    shuffled_rows = data.draw(st.permutations(rows))
    shuffled = (newline.join(([header] if header else []) + shuffled_rows) + newline).encode()
    task = get_task(name)
    expected = task.parse(original, GOLDS[name])
    np.testing.assert_array_equal(task.parse(shuffled, GOLDS[name]), expected)
    assert task.score(GOLDS[name], task.parse(shuffled, GOLDS[name])) == task.score(GOLDS[name], expected)


@pytest.mark.parametrize("name", TASKS)
@SETTINGS
@given(blob=st.binary(max_size=2000))
def test_arbitrary_bytes_raise_only_validation_error(name, blob):
    parse_or_reject(name, blob)


# Characters that make up prediction files, and a few that should never confuse the parser.
CSV_ALPHABET = st.sampled_from(
    list("dev-0123456789,.pngtruefalsTRUEFALS \t\r\n\"'#;\\x") + ["\x00", "\ufeff", "\u2028", "\x85", "\x1a"]
)


@pytest.mark.parametrize("name", TASKS)
@SETTINGS
@given(text=st.text(alphabet=CSV_ALPHABET, max_size=400))
def test_csv_like_text_raises_only_validation_error(name, text):
    parse_or_reject(name, text.encode("utf-8"))


MUTATIONS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "delete", "replace", "duplicate_line", "drop_line", "swap_lines"]),
        st.integers(0, 10**6),
        st.sampled_from(
            [
                b",",
                b"\n",
                b"\r",
                b"\r\n",
                b'"',
                b"\x00",
                b"\xff",
                b"\xc3",
                b" ",
                b"",
                b"nan",
                b"-",
                b"inf",
                b"1e999",
                b"TRUE",
                b"x",
                b",,,",
                b"\xef\xbb\xbf",
                b"\t",
                b"#",
                b"'",
            ]
        ),
    ),
    min_size=1,
    max_size=6,
)


def mutate(data, mutations):
    for kind, position, piece in mutations:
        lines = data.split(b"\n")
        if kind in ("duplicate_line", "drop_line", "swap_lines") and lines:
            i = position % len(lines)
            j = (position // 7) % len(lines)
            if kind == "duplicate_line":
                lines.insert(j, lines[i])
            elif kind == "drop_line":
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
            continue
        at = position % (len(data) + 1)
        if kind == "insert":
            data = data[:at] + piece + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + 1 + position % 5 :]
        else:
            data = data[:at] + piece + data[at + len(piece) :]
    return data


@pytest.mark.parametrize("name", TASKS)
@SETTINGS
@given(seed=st.integers(0, 1000), mutations=MUTATIONS)
def test_mutated_valid_files_raise_only_validation_error(name, seed, mutations):
    parse_or_reject(name, mutate(valid_file(name, seed), mutations))


@pytest.mark.parametrize("name", TASKS)
def test_valid_files_used_above_do_parse(name):
    assert parse_or_reject(name, valid_file(name)) is not None


@SETTINGS
@given(st.lists(st.booleans(), min_size=1, max_size=300))
def test_binary_encoding_round_trips(values):
    task = get_task("nlvr2")
    array = np.array(values, dtype=bool)
    np.testing.assert_array_equal(task.decode(task.encode(array), len(values)), array)


GOLD_FILES = {
    "nlvr2": jsonl(
        [
            {"identifier": f"dev-1-{p}-0", "label": "True", "left_url": "a", "right_url": "b", "sentence": "s"}
            for p in range(2)
        ]
    ),
    "nlvr-structured": jsonl([{"identifier": f"1-{m}", "label": "true", "sentence": "s"} for m in range(2)]),
    "nlvr-images": jsonl([{"identifier": f"1-{m}", "label": "false"} for m in range(2)]),
    "vcr": jsonl(
        [{"annot_id": f"v-{i}", "answer_label": i, "rationale_label": 3 - i, "region": "w"} for i in range(2)]
    ),
}


@pytest.mark.parametrize("name", TASKS)
@SETTINGS
@given(mutations=MUTATIONS, blob=st.binary(max_size=300))
def test_gold_readers_raise_only_validation_error(name, mutations, blob):
    for data in (mutate(GOLD_FILES[name], mutations), blob):
        try:
            gold = get_task(name).read_gold(data)
        except ValidationError:
            continue
        assert len(gold.ids) == len(gold.labels) == len(gold.groups) == len(set(gold.ids.tolist()))


IMAGE_SPELLINGS = [
    "dev-{id}-{k}.png",
    "{id}-{k}.png",
    "dev-{id}-{k}",
    "{id}-{k}",
    "test-{id}-{k}.PNG",
    ' "{id}-{k}.jpg" ',
]
STRUCTURED_SPELLINGS = ["{id}", "dev-{id}", "hidden-{id}", " {id} ", '"test-{id}"']


@SETTINGS
@given(data=st.data())
def test_images_mixed_spellings_parse_like_a_uniform_file(data):
    gold = GOLDS["nlvr-images"]
    keys = [(i, k) for i in gold.ids.tolist() for k in range(6)]
    values = data.draw(st.lists(st.booleans(), min_size=len(keys), max_size=len(keys)))
    spellings = data.draw(st.lists(st.sampled_from(IMAGE_SPELLINGS), min_size=len(keys), max_size=len(keys)))
    order = data.draw(st.permutations(range(len(keys))))
    lines = [f"{spellings[j].format(id=keys[j][0], k=keys[j][1])},{values[j]}" for j in order]
    parsed = get_task("nlvr-images").parse(("\n".join(lines)).encode(), gold)
    np.testing.assert_array_equal(parsed, np.array(values).reshape(gold.n, 6))


@SETTINGS
@given(data=st.data())
def test_structured_mixed_spellings_parse_like_a_uniform_file(data):
    gold = GOLDS["nlvr-structured"]
    ids = gold.ids.tolist()
    values = data.draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    spellings = data.draw(st.lists(st.sampled_from(STRUCTURED_SPELLINGS), min_size=len(ids), max_size=len(ids)))
    lines = [f"{spelling.format(id=i)},{v}" for i, v, spelling in zip(ids, values, spellings, strict=True)]
    parsed = get_task("nlvr-structured").parse(("\n".join(lines)).encode(), gold)
    np.testing.assert_array_equal(parsed, values)
