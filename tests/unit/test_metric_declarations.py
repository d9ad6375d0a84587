"""Each family declares its metrics once (tasks.base.Metric), and the documentation's table of metrics (the
participants' page on file formats and metrics) is that declaration as written: a family or a metric added or
changed without its row fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evaluation import TASK_TYPES, get_task
from app.evaluation.tasks.base import Metric

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "participants" / "families.md").read_text(encoding="utf-8")
HEADER = "| task | metrics, in the order every view shows them: label (n counts …) |"


def _metric_text(task, metric: Metric) -> str:
    estimate = metric.name in task.estimate_only_metrics  # counts no units of its own: no n, no interval
    facts = ["no n or interval" if estimate else f"n counts {metric.counts}"]
    if not metric.percent:
        facts.append(f"a plain number to {metric.decimals} decimals")
    if metric.lower_is_better:
        facts.append("lower is better")
    if not metric.ranks:
        facts.append("ranks nothing")
    if metric.name == task.primary_metric:
        facts.append("ranks")
    elif metric.name == task.tie_break_metric:
        facts.append("breaks ties")
    return f"{task.column_label('all', metric.name)} (`{metric.name}`; {', '.join(facts)})"


def metric_rows() -> list[str]:
    """The documentation's table, one row a registered family, from the declarations alone."""
    rows = []
    for task in TASK_TYPES.values():
        named = ", ".join(f"{task.subset_label(s)}" for s in task.subset_labels)
        subsets = f"; subsets as the family writes them: {named}" if named else ""
        rows.append(f"| `{task.name}` | {'; '.join(_metric_text(task, m) for m in task.declared_metrics)}{subsets} |")
    return rows


def test_the_documented_table_is_the_declarations():
    table = "\n".join([HEADER, "|---|---|", *metric_rows()])
    assert table in PAGE, "docs/participants/families.md's metrics table is not the declarations; write:\n" + table


@pytest.mark.parametrize("name", list(TASK_TYPES))
def test_every_family_declares_each_metric_once_with_what_views_need(name):
    task = get_task(name)
    names = [metric.name for metric in task.declared_metrics]
    assert len(names) == len(set(names)) and task.metrics == tuple(names)
    assert task.primary_metric in names and set(task.subset_metrics) <= set(names)
    assert task.metric(task.primary_metric).ranks
    for metric in task.declared_metrics:
        assert metric.label and metric.counts
        assert metric.percent or metric.decimals is not None  # a plain number says how it is written
        assert task.column_label("all", metric.name)


def test_the_official_orders_and_labels():
    """As the official boards and papers have them (issue 34)."""
    assert [m.label for m in get_task("vcr").declared_metrics] == ["Q→A", "QA→R", "Q→AR"]
    assert get_task("winoground").metrics == ("text", "image", "group")
    vqa = get_task("vqa-v2")
    assert [vqa.column_label(s, "accuracy") for s in ("all", *vqa.subset_labels)] == [
        "Overall",
        "Yes/No",
        "Number",
        "Other",
    ]
    distribution = get_task("gqa").metric("distribution")
    assert (distribution.unit, distribution.lower_is_better, distribution.ranks) == ("plain", True, False)
    assert distribution.decimals == 4


def test_an_undeclared_ranking_metric_is_refused_at_registration():
    from app.evaluation.tasks.base import ACCURACY, TaskType, _check_declared

    class Broken(TaskType):
        name = "broken"
        declared_metrics = (ACCURACY,)
        primary_metric = "f1"
        tie_break_metric = None
        subset_metrics = ()

    with pytest.raises(TypeError, match="f1"):
        _check_declared(Broken())
