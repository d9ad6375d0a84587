"""The progress chart of a leaderboard: the best published primary score over time, as inline SVG.

Rendered on the server so the page needs no script, font or network access. Only presentation
attributes are used (no style="" attributes, which a strict Content-Security-Policy would block), and
every team-written string is XML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape, quoteattr

from markupsafe import Markup

from app.evaluation.display import score_text
from app.services import catalog

WIDTH, HEIGHT = 560, 280  # narrow enough that its text stays readable scaled down to a phone's width
LEFT, RIGHT, TOP, BOTTOM = 52, 14, 14, 46  # margins: room for the axis labels
TIME_LABEL_HALF = 32  # half the width of the widest time label ("Sep 2026") at font-size 13, and a little room
TIME_LABEL_Y = HEIGHT - BOTTOM + 21  # the time labels' baseline: clear of the lowest y tick's label
FONT = "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif"
INK, MUTED, GRID, ACCENT, REFERENCE = "#1d232a", "#5b6673", "#e3e7eb", "#1f5fa8", "#8a5a00"


@dataclass(frozen=True)
class Point:
    moment: datetime
    value: float  # percent
    label: str  # the tooltip: model, team, score, date
    href: str | None = None  # the entry's page: a tap on a touch screen opens it (no hover there)


@dataclass(frozen=True)
class Line:
    value: float
    label: str  # a reference row, e.g. "Human 96.1"


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = max(span, 1e-9) / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _y_range(values: Sequence[float]) -> tuple[float, float, float]:
    low, high = min(values), max(values)
    pad = max((high - low) * 0.08, 1.0)
    low, high = max(0.0, low - pad), min(100.0, high + pad)
    step = _nice_step(high - low)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


_DAY_STEPS = (1, 2, 7, 14, 30, 61, 91, 182, 365, 730, 1826)


def _time_ticks(start: datetime, end: datetime, most: int = 5) -> list[tuple[datetime, str]]:
    """(moment, label) ticks, at most `most`: UTC midnights a whole number of days apart for spans under
    about four months ('Mar 14'), else first days of months a whole number of months apart ('Mar 2025')."""
    days = (end - start).total_seconds() / 86400
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    if days <= 120:
        step = next((d for d in _DAY_STEPS if days / d <= most), _DAY_STEPS[-1])
        moment = start.replace(hour=0, minute=0, second=0, microsecond=0)
        if moment < start:
            moment += timedelta(days=1)
        ticks = []
        while moment <= end:
            ticks.append((moment, f"{moment:%b} {moment.day}"))
            moment += timedelta(days=step)
        return ticks
    months = days / 30.44
    step = next((m for m in (1, 2, 3, 6, 12, 24, 60) if months / m <= most), 120)
    year, month = start.year, start.month
    ticks = []
    while True:
        moment = datetime(year, month, 1, tzinfo=UTC)
        if moment > end:
            break
        if moment >= start and (year * 12 + month - 1) % step == 0:
            ticks.append((moment, f"{moment:%b %Y}" if step < 12 else f"{year}"))
        month += 1
        if month > 12:
            year, month = year + 1, 1
    return ticks


@dataclass(frozen=True)
class _Frame:
    """Where a moment and a value land in the plot area."""

    start: datetime
    end: datetime
    y_low: float
    y_high: float
    y_step: float
    plot_w: int = WIDTH - LEFT - RIGHT
    plot_h: int = HEIGHT - TOP - BOTTOM

    def x(self, moment: datetime) -> float:
        return LEFT + (moment - self.start).total_seconds() / (self.end - self.start).total_seconds() * self.plot_w

    def y(self, value: float) -> float:
        return TOP + (self.y_high - value) / (self.y_high - self.y_low) * self.plot_h


def render(
    points: Sequence[Point],
    metric_label: str,
    references: Sequence[Line] = (),
    title: str = "Best published score over time",
    now: datetime | None = None,
    title_id: str = "chart-title",
) -> str:
    """An <svg> element (a string of markup) or "" when there is nothing to plot. The time axis spans the
    entries' dates and never reaches past `now`; `title_id` tells several charts on one page apart."""
    if not points:
        return ""
    now = now or datetime.now(UTC)
    ordered = sorted(points, key=lambda p: p.moment)
    values = [p.value for p in ordered] + [line.value for line in references]
    start, end = ordered[0].moment, ordered[-1].moment
    if end - start < timedelta(days=2):
        start, end = start - timedelta(days=1), min(end + timedelta(days=1), max(now, end))
    frame = _Frame(start, end, *_y_range(values))
    out = [
        f'<svg class="progress-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-labelledby={quoteattr(title_id)} font-family={quoteattr(FONT)} font-size="13">',
        f"<title id={quoteattr(title_id)}>{escape(title)}: {escape(metric_label)}</title>",
    ]
    out += _axes(frame, metric_label)
    out += _reference_lines(frame, references)
    out.append(_record(frame, ordered))
    out += _entry_points(frame, ordered)
    return "".join(out)


def _axes(frame: _Frame, metric_label: str) -> list[str]:
    """The horizontal grid with the y-axis ticks, the time ticks, both axes and their titles."""
    x, y, plot_w, plot_h = frame.x, frame.y, frame.plot_w, frame.plot_h
    out = []
    # Horizontal grid and y-axis ticks.
    tick = frame.y_low
    while tick <= frame.y_high + 1e-9:
        ty = y(tick)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="{MUTED}">{tick:g}</text>')
        tick += frame.y_step
    for moment, label in _time_ticks(frame.start, frame.end):
        tx = x(moment)
        out.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM + 4}" stroke="{MUTED}"/>'
        )
        # A label centred on a tick near the right edge ran past the chart's box and was cut ("Jul 2026", issue
        # 34): it ends at its tick there.
        anchor = "end" if tx > WIDTH - TIME_LABEL_HALF else "middle"
        out.append(f'<text x="{tx:.1f}" y="{TIME_LABEL_Y}" text-anchor="{anchor}" fill="{MUTED}">{label}</text>')
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM}" stroke="{INK}"/>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" stroke="{INK}"/>')
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" fill="{INK}">'
        "Submission date (UTC)</text>"
    )
    out.append(
        f'<text transform="rotate(-90)" x="{-(TOP + plot_h / 2):.1f}" y="14" text-anchor="middle" '
        f'fill="{INK}">{escape(metric_label)} (%)</text>'
    )
    return out


def _reference_lines(frame: _Frame, references: Sequence[Line]) -> list[str]:
    """Reference rows as dashed horizontal lines."""
    out = []
    for line in references:
        ly = frame.y(line.value)
        out.append(
            f'<g class="reference"><title>{escape(line.label)}</title>'
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="{REFERENCE}" '
            f'stroke-dasharray="5 4"/>'
            f'<text x="{WIDTH - RIGHT - 4}" y="{ly - 4:.1f}" text-anchor="end" fill="{REFERENCE}">'
            f"{escape(line.label)}</text></g>"
        )
    return out


def _record(frame: _Frame, ordered: Sequence[Point]) -> str:
    """The record: a step line that rises when an entry beats every earlier one, held to the last date."""
    best = None
    path: list[str] = []
    for point in ordered:
        if best is None or point.value > best:
            px, py = frame.x(point.moment), frame.y(point.value)
            path.append(f"M{px:.1f},{py:.1f}" if best is None else f"H{px:.1f}V{py:.1f}")
            best = point.value
    path.append(f"H{frame.x(frame.end):.1f}")
    return f'<path class="record" d="{"".join(path)}" fill="none" stroke="{ACCENT}" stroke-width="2"/>'


def _entry_points(frame: _Frame, ordered: Sequence[Point]) -> list[str]:
    """A point an entry, with its tooltip (and its page's link when it has one), closing the svg."""
    # Shared attributes on the group keep a thousand points small.
    out = [f'<g class="entries" fill="{ACCENT}" fill-opacity="0.55" stroke="#ffffff" stroke-width="1">']
    x, y = frame.x, frame.y
    for point in ordered:
        circle = (
            f'<circle cx="{x(point.moment):.0f}" cy="{y(point.value):.0f}" r="5"><title>{escape(point.label)}'
            "</title></circle>"
        )
        # A link makes the point tappable and focusable; its page says what the tooltip says and more.
        out.append(
            f"<a href={quoteattr(point.href)} aria-label={quoteattr(point.label)}>{circle}</a>"
            if point.href
            else circle
        )
    out.append("</g></svg>")
    return out


def tooltip(model: str, team: str | None, value: float, moment: datetime) -> str:
    return f"{model} ({team or 'Anonymous'}): {score_text(value)}%, {moment.astimezone(UTC):%Y-%m-%d}"


def for_board(board) -> Markup:
    """The chart of a board (a services.leaderboards.Board): every published entry's primary score, with
    the reference rows as lines; empty while the board's scores are held."""
    if board.snapshot is None:
        return Markup("")
    task = catalog.task_of(board.benchmark)
    metric = task.primary_metric
    points = [
        Point(
            e.submitted_at,
            e.scores["all"][metric],
            tooltip(e.model_name, e.team, e.scores["all"][metric], e.submitted_at),
            f"/submissions/{e.submission_id}",
        )
        for e in board.snapshot.entries
        if metric in e.scores.get("all", {})
    ]
    lines = [
        Line(r.scores["all"][metric], f"{r.name} {score_text(r.scores['all'][metric])}")
        for r in board.snapshot.references
        if metric in r.scores.get("all", {})
    ]
    return Markup(render(points, catalog.task_of(board.benchmark).metric(metric).label, lines))


def for_team_board(board, number: int) -> Markup:
    """The chart of a team's entries on one split (a services.boards.team_pages.TeamBoard): each entry's primary
    score as its board shows it, with the team's best so far as the line; `number` tells the page's charts
    apart."""
    points = [
        Point(
            moment, value, tooltip(entry.model_name, entry.team, value, moment), f"/submissions/{entry.submission_id}"
        )
        for moment, value, entry in board.points()
    ]
    title = f"{board.benchmark_name} {board.split_name}: the team's best published score over time"
    return Markup(render(points, board.primary_label, title=title, title_id=f"chart-title-{number}"))
