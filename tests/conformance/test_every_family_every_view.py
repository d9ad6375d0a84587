"""Every registered family through every view: the board page, a submission's page, a team's page, the models view,
the API and the CSV and JSON exports name the family's metrics as it declares them (TaskType.declared_metrics), in
its order, each with the n it counts (TaskType.metric_units of the gold set), and write one entry's primary score
as the same figure. A family added later is walked here without a line of this file changing; a configured task
type is walked too.

Synthetic data only (the families' generators): this module needs nothing from ../shared/data.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest

from app import synthetic
from app.db import db
from app.evaluation import TASK_TYPES, get_task
from app.evaluation.configured import configured_task
from app.evaluation.display import score_text
from app.models import Team
from app.services import catalog
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from tests.support.users import make_user

SIZE = 160
BENCH = "bench"
SPLIT = "dev"
SPLIT_NAME = "Dev"
TEAMS = ("Lab", "Rivals")
_TAGS = re.compile(r"<[^>]+>")


def _text(fragment: str) -> str:
    return html.unescape(_TAGS.sub("", fragment)).strip()


def _heading(label: str, metric) -> str:
    """A header as every page writes it: the label, and beside it the direction where less is better."""
    return f"{label} (lower is better)" if metric.lower_is_better else label


# A configured task type (app/evaluation/configured) is walked as the families are: a soft short answer, scored in
# points as VQA v2 (a grouped classification's views: tests/web/test_configured_benchmark.py).
CONFIGURED = {
    "configured-short-answer": {
        "type": "short-answer",
        "scoring": "soft",
        "normalise": "vqa",
        "unit_noun": "questions",
        "gold": {"format": "json", "records": "annotations", "id": "qid", "label": "answers", "answer_key": "answer"},
        "predictions": {"format": "json", "id": "qid", "label": "answer"},
    },
}


def _build(app, name: str) -> dict:
    """A benchmark of family `name` with a public split of SIZE synthetic examples and four published entries from
    two teams; what each view must show, computed from the family's declaration and the gold set."""
    config = CONFIGURED.get(name)
    task = get_task(name) if config is None else configured_task(config)
    data = task.synthetic_gold(SIZE, seed=3, split=SPLIT)
    gold = task.read_gold(data)
    world: dict = {"task": task, "ids": []}
    with app.app_context():
        if config is None:
            catalog.add_benchmark(BENCH, name, task.label)
        else:
            catalog.add_benchmark(BENCH, config["type"], task.label, task_config=config)
        # A family that takes the official choices file (GQA) gets one, so that every metric it declares shows.
        choices = synthetic.gqa_choices(data, seed=3) if getattr(task, "choices_metrics", ()) else None
        catalog.add_split(BENCH, SPLIT, data, name=SPLIT_NAME, choices=choices)
        for t, team_name in enumerate(TEAMS):
            team = Team(name=team_name)
            db.session.add(team)
            db.session.commit()
            world.setdefault("slugs", []).append(team.slug)
            user = make_user(f"{team_name.lower()}@example.org", team=team)
            for i in range(2):
                accuracy = 0.55 + 0.1 * (2 * t + i)
                upload = task.synthetic_predictions(
                    data, accuracy, seed=11 + 2 * t + i, **task.demo_split_options(SPLIT)
                )
                result = submissions.submit(user, None, BENCH, SPLIT, Upload(upload, model_name=f"{team_name}-{i}"))
                submissions.publish(user, result.id, description=f"entry {team_name} {i}")
                world["ids"].append(result.id)
        split = catalog.get_split(BENCH, SPLIT)
        derived = {s.name: s.indices for s in split.subsets if s.source == "derived"}
    fields = task.default_subset_fields
    shown = sorted((s for s in derived if fields is None or s.split(":", 1)[0] in fields), key=task.subset_order)
    # (subset, metric, header label, n) of the board's default columns, in the family's order.
    expected = [
        ("all", m, _heading(task.column_label("all", m), task.metric(m)), task.metric_units(gold, m))
        for m in task.metrics
    ]
    for subset in shown:
        for m in task.subset_metrics:
            n = task.metric_units(gold, m, derived[subset])
            expected.append((subset, m, _heading(task.column_label(subset, m), task.metric(m)), n))
    world["columns"] = expected
    world["gold"] = gold
    return world


def _n(fragment: str) -> int | None:
    found = re.search(r"n = ([\d,]+)", _text(fragment))
    return int(found.group(1).replace(",", "")) if found else None


def _headers(page: str, table_class: str) -> list[tuple[str, int | None]]:
    """(label, n) of each numeric header of the first table of that class: the label without its n, a lower-is-better
    label with its direction ("Distribution (lower is better)")."""
    table = re.search(rf'<table class="[^"]*{table_class}[^"]*".*?</thead>', page, re.S)
    assert table, f"no table .{table_class}"
    found = []
    for cell in re.findall(r'<th scope="col" class="num[^"]*"[^>]*>(.*?)</th>', table.group(0), re.S):
        label = _text(re.sub(r'<span class="n".*?</span>', "", cell, flags=re.S))
        found.append((label, _n(cell)))
    return found


def _row_cells(page: str, submission_id: int) -> list[str]:
    row = re.search(rf'<tr class="entry" data-submission-id="{submission_id}">(.*?)</tr>', page, re.S)
    assert row, submission_id
    return [
        _text(c.split("<span", 1)[0]) for c in re.findall(r'<td class="num[^"]*"[^>]*>(.*?)</td>', row.group(1), re.S)
    ]


@pytest.fixture(params=[*TASK_TYPES, *CONFIGURED])
def world(request, app):
    return _build(app, request.param) | {"client": app.test_client()}


def test_the_board_page_names_orders_and_counts_as_the_family_declares(world):
    task, client = world["task"], world["client"]
    page = client.get(f"/leaderboards/{BENCH}/{SPLIT}").get_data(as_text=True)
    want = [(label, n) for _, _, label, n in world["columns"]]
    assert _headers(page, "leaderboard") == want, task.name
    # The split's size is its examples, whatever its metrics count (GQA: every question, not the balanced ones).
    facts = _text(re.search(r'<p class="muted board-facts">(.*?)</p>', page, re.S).group(1))
    assert facts.startswith(f"{SPLIT_NAME}: {world['gold'].n:,} examples.") and "queried" not in facts, facts
    # Its header sorts best first: ascending where less is better.
    links = re.findall(r'<a class="sort[^"]*" href="([^"]+)"', page.split("</thead>", 1)[0])
    for (_, metric, _, _), link in zip(world["columns"], links, strict=True):
        first = "asc" if task.metric(metric).lower_is_better else "desc"
        assert f"order={first}" in html.unescape(link), (task.name, metric, link)
    # Every figure with its declared decimals: a plain number (GQA's distribution) never as a one-decimal percent.
    api = client.get(f"/api/v1/leaderboards/{BENCH}/{SPLIT}").get_json()
    for entry in api["entries"]:
        cells = _row_cells(page, entry["submission_id"])
        for (subset, metric, _, _), cell in zip(world["columns"], cells, strict=True):
            declared = task.metric(metric)
            value = entry["scores"].get(subset, {}).get(metric, {}).get("value")
            if value is not None and declared.decimals is not None:
                assert cell == f"{value:.{declared.decimals}f}", (task.name, metric, cell)


def test_a_metric_that_does_not_rank_is_never_bold(world):
    task, client = world["task"], world["client"]
    page = client.get(f"/leaderboards/{BENCH}/{SPLIT}").get_data(as_text=True)
    rows = re.findall(r'<tr class="entry".*?</tr>', page, re.S)
    assert rows
    bold = set()
    for row in rows:
        classes = re.findall(r'<td class="(num[^"]*)"', row)
        for (_, metric, _, _), cls in zip(world["columns"], classes, strict=True):
            if "best" in cls.split():
                bold.add(metric)
    assert task.primary_metric in bold  # a column that ranks has its best bold
    assert not {m for m in bold if not task.metric(m).ranks}, task.name


def test_the_api_and_the_exports_carry_the_same_columns(world):
    task, client = world["task"], world["client"]
    # The label alone (its direction is a field of its own).
    want = [(f"{s}:{m}", task.column_label(s, m), n) for s, m, _, n in world["columns"]]
    api = client.get(f"/api/v1/leaderboards/{BENCH}/{SPLIT}").get_json()
    assert [(c["key"], c["label"], c["examples"]) for c in api["columns"]] == want, task.name
    for column in api["columns"]:
        declared = task.metric(column["metric"])
        facts = (column["unit"], column["direction"], column["decimals"], column["ranks"], column["counts"])
        assert facts == (declared.unit, declared.direction, declared.decimals, declared.ranks, declared.counts)
    exported = json.loads(client.get(f"/leaderboards/{BENCH}/{SPLIT}/export.json").get_data(as_text=True))
    assert [(f"{c['subset']}:{c['metric']}", c["label"], c["examples"]) for c in exported["columns"]] == want
    rows = list(csv.reader(io.StringIO(client.get(f"/leaderboards/{BENCH}/{SPLIT}/export.csv").get_data(as_text=True))))
    keys = [cell for cell in rows[0] if ":" in cell and not cell.endswith(("ci_low", "ci_high"))]
    assert keys == [key for key, _, _ in want]


def test_a_submission_page_names_each_metric_with_its_n(world):
    task, client, gold = world["task"], world["client"], world["gold"]
    page = client.get(f"/submissions/{world['ids'][0]}").get_data(as_text=True)
    headers = _headers(page, "scores")
    metrics = [(_heading(task.metric(m).label, task.metric(m)), task.metric_units(gold, m)) for m in task.metrics]
    assert [h for h in headers if h[0] != "Examples"] == metrics, task.name
    # Its rows: the whole split, then the subsets in the family's order, each under its label.
    rows = re.findall(r'<tr data-subset="([^"]+)">\s*<th scope="row">(.*?)</th>', page)
    assert rows[0][0] == "all"
    subsets = [name for name, _ in rows[1:]]
    assert subsets == sorted(subsets, key=task.subset_order), task.name
    assert all(_text(label) == task.subset_label(name) for name, label in rows[1:])


def test_a_team_page_shows_the_boards_columns_in_its_order(world):
    task, client = world["task"], world["client"]
    page = client.get(f"/teams/{world['slugs'][0]}").get_data(as_text=True)
    want = [(label, n) for _, _, label, n in world["columns"]]
    assert _headers(page, "team-entries") == want, task.name


def test_the_models_view_counts_as_the_board(world):
    task, client = world["task"], world["client"]
    page = client.get(f"/leaderboards/{BENCH}/models").get_data(as_text=True)
    headers = _headers(page, "models")
    primary = next(c for c in world["columns"] if c[0] == "all" and c[1] == task.primary_metric)
    rest = [c for c in world["columns"] if c is not primary]
    assert headers[0][1] == primary[3], task.name
    assert [(label, n) for label, n in headers[1:]] == [(f"{SPLIT_NAME} {label}", n) for _, _, label, n in rest]


def test_one_number_everywhere(world):
    """The best entry's primary score, as the board writes it, on every view."""
    task, client = world["task"], world["client"]
    api = client.get(f"/api/v1/leaderboards/{BENCH}/{SPLIT}").get_json()
    top = api["entries"][0]
    figure = top["scores"]["all"][task.primary_metric]["text"]
    board = client.get(f"/leaderboards/{BENCH}/{SPLIT}").get_data(as_text=True)
    at = [c[:2] for c in world["columns"]].index(("all", task.primary_metric))
    assert _row_cells(board, top["submission_id"])[at] == figure
    exported = list(
        csv.DictReader(io.StringIO(client.get(f"/leaderboards/{BENCH}/{SPLIT}/export.csv").get_data(as_text=True)))
    )
    assert score_text(float(exported[0][f"all:{task.primary_metric}"])) == figure
    submission = client.get(f"/submissions/{top['submission_id']}").get_data(as_text=True)
    assert figure in submission
    models = client.get(f"/leaderboards/{BENCH}/models").get_data(as_text=True)
    assert figure in _text(models)


def test_the_issue_s_cases_read_as_their_official_boards(app):
    """The cases the demo showed wrong (issue 34): VQA v2's columns, GQA's and A-OKVQA's n."""
    vqa = _build(app, "vqa-v2")
    assert [label for _, _, label, _ in vqa["columns"]] == ["Overall", "Yes/No", "Number", "Other"]
    client = app.test_client()
    page = client.get(f"/leaderboards/{BENCH}/{SPLIT}").get_data(as_text=True)
    assert [label for label, _ in _headers(page, "leaderboard")] == ["Overall", "Yes/No", "Number", "Other"]


@pytest.mark.parametrize("name", ["gqa", "a-okvqa"])
def test_n_is_the_units_a_metric_counts_not_the_split_size(app, name):
    world = _build(app, name)
    task, gold = world["task"], world["gold"]
    page = app.test_client().get(f"/leaderboards/{BENCH}/{SPLIT}").get_data(as_text=True)
    shown = dict(_headers(page, "leaderboard"))
    if name == "gqa":
        counted = task.metric_units(gold, "accuracy")
        assert counted < gold.n  # the unbalanced questions count in no accuracy
        assert shown["Accuracy"] == counted
        assert shown["Binary"] + shown["Open"] == counted
    else:
        counted = task.metric_units(gold, "da_accuracy")
        assert counted < gold.n
        assert shown["DA accuracy"] == counted and shown["MC accuracy"] == gold.n
