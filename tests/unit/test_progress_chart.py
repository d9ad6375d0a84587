"""The progress chart: a self-contained SVG (no script, no style attribute), one point per entry, a step line."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from app.web import progress_chart
from app.web.progress_chart import Line, Point

START = datetime(2024, 1, 1, tzinfo=UTC)
SVG = "{http://www.w3.org/2000/svg}"


def test_nothing_to_plot_is_no_chart():
    assert progress_chart.render([], "Accuracy") == ""


def test_points_titles_and_the_record_line():
    points = [
        Point(START + timedelta(days=d), value, f"m{d} <b>&")
        for d, value in ((0, 60.0), (10, 55.0), (20, 70.0), (30, 65.0), (40, 80.0))
    ]
    svg = progress_chart.render(points, "Accuracy", [Line(96.1, "Human 96.1")])
    root = ET.fromstring(svg)  # well-formed XML
    assert "style=" not in svg and "<script" not in svg and "href" not in svg
    circles = root.findall(f".//{SVG}circle")
    assert len(circles) == 5
    assert [c.find(f"{SVG}title").text for c in circles] == [f"m{d} <b>&" for d in (0, 10, 20, 30, 40)]
    assert "&lt;b&gt;&amp;" in svg  # escaped in the markup
    record = root.find(f".//{SVG}path[@class='record']").get("d")
    assert record.count("V") == 2  # the record rises twice: 60 -> 70 -> 80
    assert "Accuracy (%)" in svg and "Submission date (UTC)" in svg
    assert root.find(f".//{SVG}g[@class='reference']/{SVG}title").text == "Human 96.1"
    # Higher scores are drawn higher (smaller y).
    ys = [float(c.get("cy")) for c in circles]
    assert ys[4] < ys[2] < ys[0] < ys[1]


def _tick_labels(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text for t in root.findall(f"{SVG}text") if t.get("y") == str(progress_chart.TIME_LABEL_Y)]


def test_time_ticks_are_few_short_and_distinct_whatever_the_span():
    for span in (
        timedelta(hours=1),
        timedelta(days=20),
        timedelta(days=120),
        timedelta(days=730),
        timedelta(days=3000),
    ):
        svg = progress_chart.render(
            [Point(START, 50.0, "a"), Point(START + span, 60.0, "b")], "Q→AR", now=START + span + timedelta(days=1)
        )
        labels = _tick_labels(svg)
        assert 2 <= len(labels) <= 5 and len(set(labels)) == len(labels), (span, labels)
        assert all(len(label) <= 8 for label in labels), labels  # 'Mar 2025', 'Jan 14', '2026'


def test_two_years_of_entries_get_month_ticks():
    svg = progress_chart.render(
        [Point(START, 50.0, "a"), Point(START + timedelta(days=700), 60.0, "b")],
        "Accuracy",
        now=START + timedelta(days=800),
    )
    labels = _tick_labels(svg)
    assert labels[0] == "Jan 2024" and all(re.fullmatch(r"[A-Z][a-z]{2} 20\d\d", label) for label in labels)


def test_nothing_is_drawn_past_today():
    """Entries on one day a few hours ago: the axis is padded to the left, not past now."""
    now = START + timedelta(hours=5)
    svg = progress_chart.render(
        [Point(START, 50.0, "a"), Point(START + timedelta(hours=1), 60.0, "b")], "Accuracy", now=now
    )
    root = ET.fromstring(svg)
    right = progress_chart.WIDTH - progress_chart.RIGHT
    record = root.find(f".//{SVG}path[@class='record']").get("d")
    end_x = float(record.rsplit("H", 1)[1])
    # The axis ends at now (5 hours after the first entry, on an axis starting a day before it).
    start_x = progress_chart.LEFT
    assert end_x == pytest.approx(right)
    hours = (end_x - start_x) / (right - start_x) * 29  # 24 h of padding + 5 h
    assert hours == pytest.approx(29)
    assert max(float(c.get("cx")) for c in root.iter(f"{SVG}circle")) < right


def test_points_link_to_their_entries_for_touch_screens():
    svg = progress_chart.render([Point(START, 50.0, "a", "/submissions/7")], "Accuracy", now=START + timedelta(days=3))
    root = ET.fromstring(svg)
    link = root.find(f".//{SVG}a")
    assert link.get("href") == "/submissions/7" and link.find(f"{SVG}circle") is not None
