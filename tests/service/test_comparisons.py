"""Two entries compared (/compare, the API's compare) and one entry's per-example results: the discordant ids are
those of the files sent, the difference's p-value is the board's own test's, and on a blind test nothing per
example reaches anyone, maintainers included (services/boards/comparisons.py)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from app.evaluation import statistics
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import board_snapshots, comparisons
from app.services.errors import NotFound, ServiceError
from app.services.intake import submissions
from tests.support.blind_test_world import build_blind_test_world, gold_rows, submit
from tests.support.browser import login
from tests.support.users import PASSWORD

pytestmark = pytest.mark.postgres(reason="entries and their predictions read back from each dialect's columns")

A_WRONG = set(range(0, 40))  # a: wrong on 40 examples
B_WRONG = set(range(25, 90))  # b: wrong on 65, 15 of them shared with a


@pytest.fixture
def world(ctx):
    return build_blind_test_world()


def _published(world, split: str, wrong) -> int:
    found = submit(world, wrong, split=split).submission
    submissions.publish(world["member"], found.id, description="A model.")
    return found.id


def test_a_public_split_lists_exactly_the_discordant_ids_of_the_files_sent(world, client):
    a, b = _published(world, "dev", A_WRONG), _published(world, "dev", B_WRONG)
    ids = [row["identifier"] for row in gold_rows(world["gold"]["dev"])]
    a_only = {ids[i] for i in B_WRONG - A_WRONG}  # a right, b wrong
    b_only = {ids[i] for i in A_WRONG - B_WRONG}
    found = comparisons.compare(str(a), str(b))
    assert found.per_example and not found.held
    assert {d.identifier for d in found.discordant if d.a_correct and not d.b_correct} == a_only
    assert {d.identifier for d in found.discordant if d.b_correct and not d.a_correct} == b_only
    assert (found.a_only, found.b_only) == (len(a_only), len(b_only)) == (50, 25)

    rows = list(csv.DictReader(io.StringIO(client.get(f"/compare.csv?a={a}&b={b}").get_data(as_text=True))))
    assert {r["id"]: (r["a_correct"], r["b_correct"]) for r in rows} == {
        **dict.fromkeys(a_only, ("1", "0")),
        **dict.fromkeys(b_only, ("0", "1")),
    }
    page = client.get(f"/compare?a={a}&b={b}")
    assert page.status_code == 200 and "Discordant examples" in page.get_data(as_text=True)
    api = client.get(f"/api/v1/compare?a={a}&b={b}").get_json()
    assert {d["id"] for d in api["discordant"]} == a_only | b_only

    # One entry's per-example results: correct exactly where its file is right.
    examples = list(csv.DictReader(io.StringIO(client.get(f"/submissions/{a}/examples.csv").get_data(as_text=True))))
    assert [r["id"] for r in examples] == ids
    assert {r["id"] for r in examples if r["correct"] == "0"} == {ids[i] for i in A_WRONG}
    assert client.get(f"/api/v1/submissions/{a}/examples").get_data(as_text=True) == (
        client.get(f"/submissions/{a}/examples.csv").get_data(as_text=True)
    )


def test_the_difference_and_its_p_are_the_boards_own(world):
    a, b = _published(world, "dev", A_WRONG), _published(world, "dev", B_WRONG)
    found = comparisons.compare(str(a), str(b))
    row = next(r for r in found.rows if (r.subset, r.metric) == ("all", "accuracy"))
    # The whole split's difference: 40 vs 65 wrong of 400 examples.
    assert row.difference == pytest.approx(100 * 25 / 400)
    assert row.low is not None and row.high is not None and row.low < row.difference < row.high
    # McNemar's exact test on 50 against 25 discordant judgements, two-sided, as the statistics module gives it.
    assert row.p == pytest.approx(2 * statistics.one_sided_p(np.array([50.0]), np.array([25.0]))[0])
    # ...and the board decides the pair as Holm on its one pair decides that p (decided iff p <= alpha).
    entries = {e.submission_id: e for e in board_snapshots.leaderboard(catalog.get_split("nlvr2", "dev"))}
    assert row.p <= statistics.ALPHA and entries[a].rank == 1 and entries[b].rank == 2
    # The difference is that of the two figures the board shows.
    assert entries[a].scores["all"]["accuracy"] - entries[b].scores["all"]["accuracy"] == pytest.approx(row.difference)


def test_a_close_pair_is_not_separated_and_says_so(world):
    a, b = _published(world, "dev", set(range(0, 40))), _published(world, "dev", set(range(1, 42)))
    row = next(r for r in comparisons.compare(str(a), str(b)).rows if r.subset == "all" and r.metric == "accuracy")
    assert row.p == pytest.approx(2 * statistics.one_sided_p(np.array([2.0]), np.array([1.0]))[0])  # 2 x 0.5
    entries = {e.submission_id: e for e in board_snapshots.leaderboard(catalog.get_split("nlvr2", "dev"))}
    assert entries[a].rank == entries[b].rank == 1  # undecided, as p > alpha says


@pytest.mark.parametrize("feedback", ["full", "ladder", "none"])
def test_a_hidden_split_compares_nothing_per_example_for_anyone(world, client, feedback):
    catalog.set_policy("nlvr2", "test-u", feedback=feedback)
    a, b = _published(world, "test-u", A_WRONG), _published(world, "test-u", B_WRONG)
    ids = [row["identifier"] for row in gold_rows(world["gold"]["test-u"])]
    found = comparisons.compare(str(a), str(b))
    assert not found.per_example and not found.discordant
    if feedback == "full":  # the board shows the released counts: their differences, no interval
        assert found.counts_only and not found.held  # 90 - 83.75, to the released figures' decimals
        row = next(r for r in found.rows if r.subset == "all" and r.metric == "accuracy")
        assert row.difference == pytest.approx(6.2) and row.low is None and row.high is None
        assert all(r.low is None and r.high is None for r in found.rows)
    else:
        assert found.held and not found.rows
    for url in (
        f"/compare?a={a}&b={b}",
        f"/compare.csv?a={a}&b={b}",
        f"/api/v1/compare?a={a}&b={b}",
        f"/submissions/{a}/examples.csv",
        f"/api/v1/submissions/{a}/examples",
    ):
        body = client.get(url).get_data(as_text=True)
        assert not any(i in body for i in ids), url
    with pytest.raises(NotFound):
        comparisons.example_results(a)
    with pytest.raises(NotFound):
        comparisons.compare_csv(str(a), str(b))
    if feedback != "full":  # after the reveal (of a held split): public, per example too
        catalog.reveal_split("nlvr2", "test-u")
        assert visibility.per_example_public(catalog.get_split("nlvr2", "test-u"))
        assert {d.identifier for d in comparisons.compare(str(a), str(b)).discordant} == {
            ids[i] for i in A_WRONG ^ B_WRONG
        }


def test_bad_parameters_are_named(world, client):
    a = _published(world, "dev", A_WRONG)
    hidden = _published(world, "test-u", B_WRONG)
    unpublished = submit(world, B_WRONG, split="dev").submission.id
    for query, status, named in (
        ("", 400, "a:"),
        (f"a={a}", 400, "b:"),
        (f"a=x&b={a}", 400, "a:"),
        (f"a={a}&b={a}", 400, "b:"),
        (f"a={a}&b={unpublished}", 404, "b:"),
        (f"a={a}&b=99999999999", 404, "b:"),
        (f"a={a}&b={hidden}", 400, "b:"),
    ):
        answer = client.get(f"/api/v1/compare?{query}")
        assert answer.status_code == status, query
        assert answer.get_json()["error"].startswith(named), query
        assert client.get(f"/compare?{query}").status_code == status
    with pytest.raises(ServiceError):
        comparisons.compare(str(a), None)


def test_a_sealed_split_compares_its_queried_part_and_never_gives_an_example(world, client):
    catalog.set_policy("nlvr2", "test-u", feedback="full", sealed_fraction=0.5)
    a, b = _published(world, "test-u", A_WRONG), _published(world, "test-u", B_WRONG)
    before = comparisons.compare(str(a), str(b))
    assert before.counts_only and not before.per_example and not before.discordant
    entries = {e.submission_id: e for e in board_snapshots.leaderboard(catalog.get_split("nlvr2", "test-u"))}
    row = next(r for r in before.rows if (r.subset, r.metric) == ("all", "accuracy"))
    assert (row.a, row.b) == (entries[a].scores["all"]["accuracy"], entries[b].scores["all"]["accuracy"])
    assert not {r.subset for r in before.rows} & {"queried", "sealed"}  # the parts are for maintainers alone
    catalog.reveal_split("nlvr2", "test-u")
    after = comparisons.compare(str(a), str(b))
    assert not after.counts_only and after.rows[0].low is not None  # public now: intervals and p-values...
    assert not after.per_example and not after.discordant  # ...but the sealed part's examples stay unread
    assert client.get(f"/compare.csv?a={a}&b={b}").status_code == 404
    assert client.get(f"/submissions/{a}/examples.csv").status_code == 404


def test_the_submission_page_offers_the_comparison_only_on_a_public_board(world, client):
    a, b = _published(world, "dev", A_WRONG), _published(world, "dev", B_WRONG)
    page = client.get(f"/submissions/{a}").get_data(as_text=True)
    assert 'action="/compare"' in page and f'<option value="{b}"' in page and f'<option value="{a}"' not in page
    assert f"/submissions/{a}/examples.csv" in page
    catalog.set_policy("nlvr2", "test-u", feedback="none")
    held = _published(world, "test-u", A_WRONG)
    login(client, "member@example.org", PASSWORD)
    answer = client.get(f"/submissions/{held}")  # the team's own page of a held entry: no board to compare on
    assert answer.status_code == 200 and "Publication" in answer.get_data(as_text=True)
    assert "/compare" not in answer.get_data(as_text=True) and "examples.csv" not in answer.get_data(as_text=True)
