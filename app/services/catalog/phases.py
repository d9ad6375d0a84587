"""A split's phase: uploads are taken from `Split.opens_at` to `Split.closes_at` (either may be None: no bound).

The one rule of when a split takes uploads (`check_accepting`, judged at the moment the upload is handled, before
its file is read) and the one way its phase is put in words (`Phase.sentence`, on the board, the Submit page
and in the refusal). Every moment is UTC: a time given without a zone is taken as UTC. The final board (a
split's entries as they stood at closes_at) is made in services/boards/board_snapshots.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.db import commit
from app.models import Split, as_utc, utcnow
from app.services import catalog
from app.services.errors import Conflict, InvalidInput

OPEN, NOT_OPEN_YET, CLOSED = "open", "not_open_yet", "closed"
STATES = (OPEN, NOT_OPEN_YET, CLOSED)
CLEAR = ("", "none")  # what clears a bound (the command line's `--opens none`, an emptied console field)
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def moment_text(moment: datetime) -> str:
    """'2026-12-01 00:00 UTC' (seconds only where there are some)."""
    moment = as_utc(moment).astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if moment.second else "%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class Phase:
    """Where a split stands, at the moment it was asked: `open` between its bounds, `not_open_yet` before
    opens_at, `closed` from closes_at on (the split's open/closed policy is another matter: Split.is_open)."""

    opens_at: datetime | None
    closes_at: datetime | None
    state: str
    reveal_planned_at: datetime | None = None  # a hidden split's planned reveal, until it is revealed

    @property
    def sentence(self) -> str | None:
        """'Open until 2027-01-31 23:59 UTC', 'Opens 2026-12-01 00:00 UTC', 'Closed since ...', with the planned
        reveal where there is one ('...; scores to be revealed 2027-02-15 00:00 UTC'); None for a split open with
        no closing time and no planned reveal."""
        if self.state == NOT_OPEN_YET and self.opens_at is not None:
            said = f"Opens {moment_text(self.opens_at)}"
        elif self.state == CLOSED and self.closes_at is not None:
            said = f"Closed since {moment_text(self.closes_at)}"
        elif self.closes_at is not None:
            said = f"Open until {moment_text(self.closes_at)}"
        else:
            said = None
        if self.reveal_planned_at is None:
            return said
        reveal = f"scores to be revealed {moment_text(self.reveal_planned_at)}"
        return f"{said}; {reveal}" if said else f"{reveal[:1].upper()}{reveal[1:]}"

    @property
    def has_final_board(self) -> bool:
        """A split whose closing time has passed keeps its final board (view=final)."""
        return self.state == CLOSED and self.closes_at is not None


def phase_of(
    opens_at: datetime | None,
    closes_at: datetime | None,
    at: datetime | None = None,
    reveal_planned_at: datetime | None = None,
) -> Phase:
    at = at or utcnow()
    opens = as_utc(opens_at) if opens_at is not None else None
    closes = as_utc(closes_at) if closes_at is not None else None
    if opens is not None and at < opens:
        state = NOT_OPEN_YET
    elif closes is not None and at >= closes:
        state = CLOSED
    else:
        state = OPEN
    planned = as_utc(reveal_planned_at) if reveal_planned_at is not None else None
    return Phase(opens, closes, state, planned)


def of(split: Any, at: datetime | None = None) -> Phase:
    """The phase of a split (a Split, or anything with opens_at and closes_at) at `at` (default: now)."""
    planned = getattr(split, "reveal_planned_at", None) if getattr(split, "revealed_at", None) is None else None
    return phase_of(split.opens_at, split.closes_at, at, planned)


def check_accepting(split: Split, at: datetime) -> None:
    """Conflict (409, as a closed split's) when an upload handled at `at` falls outside the split's phase,
    naming the dates; the caller stores nothing then."""
    phase = of(split, at)
    where = f"{split.benchmark.name} {split.name}"
    if phase.state == NOT_OPEN_YET and phase.opens_at is not None:
        until = f" and close at {moment_text(phase.closes_at)}" if phase.closes_at is not None else ""
        raise Conflict(f"Uploads to {where} open at {moment_text(phase.opens_at)}{until}", field="split")
    if phase.state == CLOSED and phase.closes_at is not None:
        raise Conflict(f"Uploads to {where} closed at {moment_text(phase.closes_at)}", field="split")


def parse_moment(value: str | datetime | None, field: str) -> datetime | None:
    """A bound as given: ISO 8601 with a time zone ('2026-12-01T00:00Z', '...+01:00'), without one taken as
    UTC (the console's field: '2026-12-01 23:59'), a date alone as its midnight UTC; '' or 'none' clears it (None).
    The result is in UTC. InvalidInput names the field."""
    if isinstance(value, datetime):
        return as_utc(value).astimezone(UTC)
    text = (value or "").strip()
    if text.lower() in CLEAR:
        return None
    try:
        if len(text) > 40:
            raise ValueError(text)
        moment = datetime.fromisoformat(text + ("T00:00" if _DATE_ONLY.match(text) else ""))
        # In UTC here: an offset can carry a moment past year 1 or 9999 (OverflowError), refused the same way.
        return as_utc(moment).astimezone(UTC)
    except (ValueError, OverflowError):
        raise InvalidInput(
            f"{field} must be a date and time in ISO 8601 between the years 1 and 9999 in UTC, on the 24-hour "
            f"clock, e.g. 2026-12-01 23:59 or 2026-12-01T23:59Z (no zone: UTC), or 'none' to clear it; "
            f"got {text[:40]!r}",
            field=field,
        ) from None


def set_phase(
    benchmark_slug: str,
    split_slug: str,
    *,
    opens_at: Any = catalog.UNSET,
    closes_at: Any = catalog.UNSET,
    reveal_planned_at: Any = catalog.UNSET,
) -> Split:
    """Set or clear (None) a split's opening and closing times and its planned reveal (UNSET leaves one as it
    is); the closing time must come after the opening time (InvalidInput naming closes_at), and only a hidden
    split has a reveal to plan."""
    split = catalog.get_split(benchmark_slug, split_slug)
    opens = split.opens_at if opens_at is catalog.UNSET else parse_moment(opens_at, "opens_at")
    closes = split.closes_at if closes_at is catalog.UNSET else parse_moment(closes_at, "closes_at")
    if opens is not None and closes is not None and as_utc(closes) <= as_utc(opens):
        raise InvalidInput(
            f"closes_at ({moment_text(closes)}) must be after opens_at ({moment_text(opens)})", field="closes_at"
        )
    if reveal_planned_at is not catalog.UNSET:
        planned = parse_moment(reveal_planned_at, "reveal_planned_at")
        if planned is not None and not split.hidden:
            raise InvalidInput(
                f"{benchmark_slug}/{split_slug} is a public split: only a hidden split's reveal can be planned",
                field="reveal_planned_at",
            )
        split.reveal_planned_at = planned
    split.opens_at, split.closes_at = opens, closes
    split.board_version += 1  # the board says the phase, and its final view keeps the entries at closes_at
    commit()
    return split
