"""How a score is written: one decimal, rounded half up once from the stored value.

Every page, export and API view that writes a score as text calls score_text, so an entry reads the same
on its board, its own page, the models view and in every export. Stored values are exact ratios
(100 * k / n) computed in floating point; they are first snapped to 9 decimals so that float noise
(40.449999999 for 40.45) cannot tip the one real rounding.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

DECIMALS = 1


def score_text(value: float | None, decimals: int = DECIMALS) -> str:
    """'40.4' for 40.4475, '40.5' for 40.45; '–' for no value."""
    if value is None or not math.isfinite(value):
        return "–"
    exact = Decimal(f"{value:.9f}")
    return str(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))
