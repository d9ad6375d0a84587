"""How a score is written: one decimal, rounded half up once from the stored value.

Every page, export and API view that writes a score as text calls score_text, so an entry reads the same
on its board, its own page, the models view and in every export. Stored values are exact ratios
(100 * k / n) computed in floating point; they are first snapped to 9 decimals so that float noise
(40.449999999 for 40.45) cannot tip the one real rounding. On a blind test before its reveal the value a board
holds is already the released one (to the split's count resolution; services/blind_test/visibility.py), so the
text is that figure's, the same on every page (it may differ by a last-digit double rounding from the stored
value's, which only maintainers read).
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
