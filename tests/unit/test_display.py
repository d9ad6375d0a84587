"""How a score is written (app/evaluation/display.py): half up once from the stored value, and a released figure
with its own decimals wherever it goes."""

from __future__ import annotations

import copy
import json
import pickle
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from app.evaluation import display, ladder


def _reference(value: float, decimals: int) -> str:
    """The rule spelled out: snapped to 9 decimals, then half up to `decimals`, with Decimal alone."""
    return str(Decimal(f"{value:.9f}").quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def test_one_decimal_half_up_from_the_stored_value():
    assert display.score_text(40.4475) == "40.4"
    assert display.score_text(40.45) == "40.5"
    assert display.score_text(40.45 - 1e-12) == "40.5"  # float noise (a sum's, a product's) is not a digit
    assert display.score_text(None) == "–" and display.score_text(float("nan")) == "–"


def test_a_figure_is_written_with_its_own_decimals():
    assert display.score_text(display.figure(51.0, 0)) == "51"
    assert display.score_text(display.figure(100 * 1 / 8, 0)) == "13"  # 12.5: half up, not to even
    assert display.score_text(display.figure(88.25, 1)) == "88.3"
    assert display.score_text(display.figure(81.2, 2)) == "81.20"
    assert display.score_text(display.figure(81.2, 2), 1) == "81.2"  # an explicit choice wins
    # Released by the Ladder's rule: the count resolution of 6,967 examples is 2 decimals.
    released = ladder.percentage_of_count(3493, 6967)
    assert isinstance(released, display.Figure) and display.score_text(released) == "50.14"


def test_a_figure_stays_a_number_with_its_decimals():
    shown = display.figure(51.0, 0)
    assert shown == 51.0 and shown < 51.5 and sorted([shown, 50.0]) == [50.0, shown]
    assert json.dumps({"value": shown}) == '{"value": 51.0}'  # JSON carries the value
    for twin in (copy.copy(shown), copy.deepcopy(shown), pickle.loads(pickle.dumps(shown))):
        assert isinstance(twin, display.Figure) and twin.decimals == 0 and display.score_text(twin) == "51"
    assert not isinstance(shown + 1, display.Figure)  # arithmetic makes a plain number


def test_an_interval_is_written_as_the_board_writes_it():
    low, high = ladder.widen_to(71.234, 73.021, 2)
    assert display.interval_text(low, high) == "71.23–73.03"
    assert display.interval_text(None, 73.0) is None


@settings(max_examples=1000, deadline=None)
@given(st.integers(1, 50_000), st.data(), st.integers(0, 3), st.sampled_from([0.0, 1e-12, -1e-12]))
def test_the_fast_path_is_the_rule(n, data, decimals, noise):
    """Counts' percentages (where ties are common) and their float noise: the same text as the rule itself."""
    k = data.draw(st.integers(0, n))
    value = 100 * k / n + noise
    assert display.score_text(value, decimals) == _reference(value, decimals)
    assert display.score_text(-value, decimals) == _reference(-value, decimals)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5_000), st.data())
def test_a_released_percentage_is_its_exact_value_rounded_half_up(n, data):
    k = data.draw(st.integers(0, n))
    decimals = ladder.count_decimals(n)
    exact = Fraction(100 * k, n)
    wanted = (Decimal(exact.numerator) / Decimal(exact.denominator)).quantize(
        Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP
    )
    assert display.score_text(ladder.percentage_of_count(k, n)) == str(wanted)
