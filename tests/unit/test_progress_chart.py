"""The progress chart: a self-contained SVG (no script, no style attribute), one point per entry, a step line."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone

from app.services import progress_chart
from app.services.progress_chart import Line, Point

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
SVG = "{http://www.w3.org/2000/svg}"


def test_nothing_to_plot_is_no_chart():
    assert progress_chart.render([], "Accuracy") == ""


def test_points_titles_and_the_record_line():
    points = [Point(START + timedelta(days=d), value, f"m{d} <b>&") for d, value in
              ((0, 60.0), (10, 55.0), (20, 70.0), (30, 65.0), (40, 80.0))]
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


def test_time_ticks_are_dates_whatever_the_span():
    for span in (timedelta(hours=1), timedelta(days=20), timedelta(days=900)):
        svg = progress_chart.render([Point(START, 50.0, "a"), Point(START + span, 60.0, "b")], "Q→AR")
        dates = re.findall(r">(\d{4}-\d{2}-\d{2})<", svg)
        assert 2 <= len(dates) <= 7 and len(set(dates)) == len(dates), (span, dates)
