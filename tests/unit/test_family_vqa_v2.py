"""VQA v2 (issue 25): the official scorer's quirks on hand-made questions, the points a question scores, the
results file's refusals and bounds, storage, and the statistics of soft scores (intervals of points, ranks by
the paired permutation test with the same rank rule as every board)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.evaluation import ValidationError, get_task, statistics
from app.evaluation.tasks.vqa_v2 import formats as vqa_v2
from tests.unit.test_rank_procedure import _check_shown

TASK = get_task("vqa-v2")


def _gold(*questions: list[str], types: tuple[str, ...] = ()) -> bytes:
    annotations = [
        {
            "question_id": 100 + i,
            "image_id": 7,
            "question_type": "how many",
            "answer_type": types[i] if i < len(types) else "other",
            "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": j + 1} for j, a in enumerate(humans)],
        }
        for i, humans in enumerate(questions)
    ]
    return json.dumps({"annotations": annotations}).encode()


def _accuracy(humans: list[str], answer: str) -> float:
    gold = TASK.read_gold(_gold(humans))
    results = json.dumps([{"question_id": 100, "answer": answer}]).encode()
    return TASK.score(gold, TASK.parse(results, gold))["all"]["accuracy"]


@pytest.mark.parametrize(
    ("humans", "answer", "expected"),
    [
        (["2"] * 10, "two", 0.0),  # unanimous humans: no normalisation at all
        (["yes"] * 10, "Yes", 0.0),
        (["yes"] * 10, " yes\n", 100.0),  # but stripped, newlines and tabs turned to spaces
        (["2"] * 5 + ["two"] * 4 + ["3"], "two", 100.0),  # disagreeing: number words folded
        (["yes"] * 9 + ["no"], "Yes", 100.0),  # and case
        (["dog"] * 3 + ["a dog"] * 3 + ["cat"] * 4, "the dog", 100.0),  # articles
        (["red white"] * 4 + ["red"] * 6, "red/white", 100.0),  # a mark without spaces: a space
        (["1000"] * 4 + ["1"] * 6, "1,000", 100.0),  # digit,digit: every mark deleted
        (["x" + "." * 40] * 4 + ["y"] * 6, "x", 0.0),  # only the first 32 periods go
        (["3.5"] * 4 + ["3"] * 6, "3 .5", 0.0),
        (["dont"] * 4 + ["no"] * 6, "don't", 100.0),  # contractions
    ],
)
def test_the_official_normalisation_quirks(humans, answer, expected):
    assert _accuracy(humans, answer) == pytest.approx(expected)


def test_matching_humans_score_by_the_leave_one_out_average():
    for matching, expected in enumerate([0, 30, 60, 90, 100, 100, 100, 100, 100, 100, 100]):
        humans = ["yes"] * matching + [f"other{i}" for i in range(10 - matching)]
        assert _accuracy(humans, "yes") == pytest.approx(expected), matching


def test_refusals_name_the_entry_and_the_line():
    gold = TASK.read_gold(_gold(["a"] * 10, ["b"] * 10))
    pretty = json.dumps(
        [{"question_id": 100, "answer": "a"}, {"question_id": 100, "answer": "b"}, {"question_id": 5, "answer": 3}],
        indent=1,
    ).encode()
    with pytest.raises(ValidationError) as refused:
        TASK.parse(pretty, gold)
    text = str(refused.value)
    assert "line 6: entry 2: duplicate question_id '100' (first at entry 1, line 2)" in text
    assert "entry 3: question 5: answer must be a string" in text
    assert "missing predictions for 1 question_id of 2: '101'" in text
    for bad in (b"{}", b"[1, 2]", b'[{"question_id": true, "answer": "a"}]', b"[" * 100_000, b"\xff"):
        with pytest.raises(ValidationError):
            TASK.parse(bad, gold)


def test_a_file_of_empty_objects_is_refused_before_it_is_parsed():
    gold = TASK.read_gold(_gold(["a"] * 10, ["b"] * 10))
    with pytest.raises(ValidationError, match="more JSON values than a valid one"):
        TASK.parse(b"[" + b"{}," * 1_000_000 + b"{}]", gold)


def test_gold_files_the_official_leave_one_out_cannot_score_are_refused():
    same_entry = {"annotations": [{"question_id": 1, "answers": [{"answer": "a", "answer_id": 1}] * 10}]}
    with pytest.raises(ValidationError, match="same entry"):
        TASK.read_gold(json.dumps(same_entry).encode())
    with pytest.raises(ValidationError, match="same number"):
        TASK.read_gold(_gold(["a"] * 10, ["b"] * 9))


def test_storage_round_trip_and_batched_scoring():
    gold = TASK.read_gold(TASK.synthetic_gold(200, seed=3))
    files = [TASK.synthetic_predictions(TASK.synthetic_gold(200, seed=3), a, seed=s) for s, a in enumerate((0.3, 0.8))]
    parsed = [TASK.parse(f, gold) for f in files]
    blobs = [TASK.encode(p) for p in parsed]
    stacked = TASK.decode_many(blobs, gold.n)
    assert (stacked == np.stack(parsed)).all() and (TASK.decode(blobs[0], gold.n) == parsed[0]).all()
    subsets = TASK.derive_subsets(gold)
    assert {"answer_type:yes/no", "answer_type:number", "answer_type:other"} <= set(subsets)
    batch = TASK.score_batch(gold, stacked, subsets)
    assert batch == [TASK.score(gold, p, subsets) for p in parsed]
    assert batch[0]["all"]["accuracy"] < batch[1]["all"]["accuracy"]


def test_intervals_count_points_and_count_intervals_count_questions():
    gold = TASK.read_gold(TASK.synthetic_gold(400, seed=4))
    stacked = np.stack(
        [TASK.parse(TASK.synthetic_predictions(TASK.synthetic_gold(400, seed=4), 0.6, seed=s), gold) for s in range(3)]
    )
    wanted = {"all": (None, ("accuracy",))}
    found = statistics.intervals(TASK, gold, stacked, wanted, resamples=200)[("all", "accuracy")]
    scores = TASK.score_batch(gold, stacked)
    assert np.allclose(found.values, [s["all"]["accuracy"] for s in scores])
    assert ((found.low <= found.values) & (found.values <= found.high)).all()
    counted = statistics.intervals(TASK, gold, stacked, wanted, counts_only=True)[("all", "accuracy")]
    # Wilson over 400 questions (not 12,000 points): about +-4.8 points at 60%.
    assert 8.0 < float((counted.high - counted.low)[0]) < 11.0
    assert TASK.counted_units(gold, "accuracy") == 400 and TASK.unit_points(gold) == 30


@st.composite
def soft_boards(draw):
    k = draw(st.integers(1, 20))
    units = draw(st.integers(1, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    levels = np.array([0, 9, 18, 27, 30], dtype=np.uint8)
    skill = rng.uniform(0, 1, size=k)
    points = np.stack([levels[np.minimum((rng.random(units) * 5 * s).astype(int), 4)] for s in skill])
    for i in range(1, k):
        if draw(st.booleans()):
            points[i] = points[draw(st.integers(0, i - 1))]  # copies: ties
    primary = points.mean(axis=1) / 30 * 100
    order = np.argsort(-primary, kind="stable")
    view = np.flatnonzero(rng.random(k) < 0.6)
    return points[order], primary[order], view


def _plain_paired_ranks(points: np.ndarray, primary: np.ndarray, alpha: float = 0.05) -> tuple:
    """The README's paragraph, one pair at a time: each pair's two-sided p (twice the one-sided p that the entry
    above is better), Holm over all k(k - 1)/2 pairs."""
    from scipy.special import ndtr

    k = points.shape[0]
    tests = []
    for i in range(k):
        for j in range(i + 1, k):
            d = points[i].astype(float) - points[j]
            v = float((d * d).sum())
            p = 1.0 if v == 0 or primary[i] == primary[j] else float(ndtr(-d.sum() / np.sqrt(v)))
            if p <= alpha and np.count_nonzero(d) <= 64:  # few units apart: the exact sign-flip p
                p = _brute_sign_flip_p(d)
            tests.append((min(1.0, 2 * p), i, j))
    tests.sort(key=lambda t: t[0])
    better, worse = np.zeros(k, int), np.zeros(k, int)
    for step, (p, above, below) in enumerate(tests):
        if p > alpha / (len(tests) - step):
            break
        better[below] += 1
        worse[above] += 1
    return better, worse


def _brute_sign_flip_p(d: np.ndarray) -> float:
    """Every sign flip of the nonzero differences counted (at most 2^16 here; the DP beyond)."""
    sizes = np.abs(d[d != 0])
    if sizes.size > 16:
        return statistics._exact_sign_flip_p(d.astype(np.int64))
    signs = 1 - 2 * ((np.arange(2**sizes.size)[:, None] >> np.arange(sizes.size)) & 1)
    return float(((signs * sizes).sum(axis=1) >= d.sum()).mean())


def test_few_questions_apart_get_the_exact_permutation_p():
    """Three questions with full credit against none, equal elsewhere: the exact one-sided p is 1/8 (the normal
    approximation's 0.042 would rank the two apart); McNemar's exact test on the same 0/1 judgements agrees."""
    points = np.full((2, 300), 30, dtype=np.uint8)
    points[1, :3] = 0
    primary = points.sum(axis=1) / 9000 * 100
    (found,) = statistics.paired_view_ranks(points, primary, [None])
    correct = points == 30
    (mcnemar,) = statistics.view_ranks(correct, correct.mean(axis=1) * 100, [None])
    assert found.highs.tolist() == mcnemar.highs.tolist() == [2, 2]
    rng = np.random.default_rng(5)
    for _ in range(100):
        d = rng.integers(-30, 31, size=int(rng.integers(1, 12))) * (rng.random(12)[:1] < 2)
        assert statistics._exact_sign_flip_p(d) == pytest.approx(_brute_sign_flip_p(d), abs=1e-12)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soft_boards())
def test_soft_ranks_lie_inside_their_intervals_and_equal_the_plain_procedure(board):
    points, primary, view = board
    whole, sub = statistics.paired_view_ranks(points, primary, [None, view], pairs=True)
    _check_shown(whole, primary)
    _check_shown(sub, primary[view])
    better, worse = _plain_paired_ranks(points, primary)
    assert (whole.better == better).all() and (whole.worse == worse).all()
    sub_better, sub_worse = _plain_paired_ranks(points[view], primary[view])
    assert (sub.better == sub_better).all() and (sub.worse == sub_worse).all()


def test_a_clearly_better_entry_is_separated_and_copies_are_not():
    rng = np.random.default_rng(0)
    strong = np.where(rng.random(2000) < 0.8, 30, 0).astype(np.uint8)
    weak = np.where(rng.random(2000) < 0.5, 30, 9).astype(np.uint8)
    points = np.stack([strong, strong, weak])
    primary = points.mean(axis=1) / 30 * 100
    (found,) = statistics.paired_view_ranks(points, primary, [None])
    assert found.ranks.tolist() == [1, 1, 3] and found.highs.tolist() == [2, 2, 3]


def test_the_ladder_loses_what_a_question_did_not_score():
    gold = TASK.read_gold(_gold(["yes"] * 10, ["yes"] * 2 + ["no"] * 8))
    results = json.dumps([{"question_id": 100, "answer": "yes"}, {"question_id": 101, "answer": "yes"}]).encode()
    losses = TASK.zero_one_losses(gold, TASK.parse(results, gold))
    assert losses == pytest.approx([0.0, 0.4])


def test_normalisation_helpers_follow_the_official_order():
    assert vqa_v2.normalised("The Two dogs!") == "2 dogs"
    assert vqa_v2.normalised("red, white") == "red white"
    assert vqa_v2.stripped("\tyes\n") == "yes"


def test_a_gold_file_is_read_one_annotation_at_a_time_with_the_same_result():
    """The annotations stream (json_files.stream_array) where the file is plain; anything else goes through the
    whole-document read, whose refusals name the problem. Both give the same gold set."""
    from app.evaluation import json_files

    gold = json.loads(TASK.synthetic_gold(120, seed=8))
    padded = json.dumps({"info": {"nested": [1, {"a": "]}"}]}, **gold, "license": "x"}, indent=2).encode()
    streamed = list(json_files.stream_array(padded, "annotations"))
    assert streamed == gold["annotations"]
    whole = TASK.read_gold(json.dumps(gold).encode())
    read = TASK.read_gold(padded)
    assert (read.ids == whole.ids).all() and (read.labels == whole.labels).all()
    for odd in (b'{"annotations": [], "annotations": [1]}', b'{"annotations": [1 2]}', b"[]", b'{"a": 1}'):
        with pytest.raises(json_files.NotStreamable):
            list(json_files.stream_array(odd, "annotations"))
        with pytest.raises(ValidationError):
            TASK.read_gold(odd)


def test_a_gold_file_of_more_distinct_answers_than_two_bytes_number_reads_the_same():
    """Answer codes widen past 65,506 distinct answers (vqa_v2._FEW_ANSWERS) without a code wrapping round: every
    question's first human alone matches its own answer, so each scores 30% whatever its place."""
    questions = [[f"a{i}-{j}" for j in range(10)] for i in range(6600)]
    gold = TASK.read_gold(_gold(*questions))
    first = json.dumps([{"question_id": 100 + i, "answer": f"a{i}-0"} for i in range(6600)]).encode()
    points = TASK.unit_scores(gold, TASK.parse(first, gold)[None])[0]
    assert points.tolist() == [9] * 6600  # 30%: nine of the ten leave-one-out sets hold the matching human
    assert gold.ids.tolist()[-1] == "6699" and gold.int_ids is not None
