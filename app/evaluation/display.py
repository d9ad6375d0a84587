"""How a score is written: rounded half up once from the stored value, to the decimals of what it is.

Every page, export, chart and API view that writes a score as text calls score_text, so an entry reads the
same on its board, its own page, the models view, the chart's tooltips and in every export and API answer.
A score is written with one decimal, except a released figure (a blind test before its reveal, written to
its count resolution: app/evaluation/ladder.py, services/blind_test/integrity.py), which is a Figure: the
value rounded once, here, and carrying its decimals to every view, so that 51 whole percents print "51" and
81.25 at two decimals "81.25" wherever they are shown, never "51.0" or "81.3".

Stored values are exact ratios (100 * k / n) computed in floating point; they are first snapped to 9
decimals so that float noise (40.449999999 for 40.45) cannot tip the one real rounding.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

DECIMALS = 1


class Figure(float):
    """A score rounded to the decimals it is shown with (a float, so it sorts, compares and serialises as its
    value; score_text writes it with its own decimals)."""

    __slots__ = ("decimals",)
    decimals: int

    def __new__(cls, value: float, decimals: int) -> Figure:
        figure = super().__new__(cls, value)
        figure.decimals = decimals
        return figure

    def __reduce__(self) -> tuple[type[Figure], tuple[float, int]]:
        return (Figure, (float(self), self.decimals))

    def __repr__(self) -> str:
        return f"Figure({float(self)!r}, {self.decimals})"


def _rounded(value: float, decimals: int) -> str:
    """`value` rounded half up to `decimals`, as text: the one rounding."""
    scaled = value * 10**decimals
    if abs(scaled - math.floor(scaled) - 0.5) > 1e-3:
        # Not near a tie: every rounding gives the nearest figure, and formatting is some ten times faster than
        # Decimal (a 10,000-entry board of released figures writes some 120,000 of them).
        return f"{value:.{decimals}f}"
    exact = Decimal(f"{value:.9f}")
    return str(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def figure(value: float, decimals: int) -> Figure:
    """`value` rounded half up to `decimals` (the one rounding), as a Figure that is written with them. A value
    already on that grid (a release read back from storage) comes back unchanged, marked with its decimals."""
    return Figure(float(_rounded(value, decimals)), decimals)


def decimals_of(value: float) -> int:
    """The decimals a value is written with: a Figure's own, else one."""
    return value.decimals if isinstance(value, Figure) else DECIMALS


def score_text(value: float | None, decimals: int | None = None) -> str:
    """'40.4' for 40.4475, '40.5' for 40.45, '51' for a whole-percent Figure 51.0; '–' for no value.
    `decimals` overrides the value's own (a Figure's, else one)."""
    if value is None or not math.isfinite(value):
        return "–"
    return _rounded(value, decimals_of(value) if decimals is None else decimals)


def interval_text(low: float | None, high: float | None) -> str | None:
    """'70.1–72.5' as the board writes an interval beneath its score; None where there is none."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    return f"{score_text(low)}–{score_text(high)}"
