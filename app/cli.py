"""Maintainers' commands: `flask --app wsgi benchmarks|splits|subsets|evaluate|demo ...`.

These names and options are an interface that scripts rely on. Errors exit with code 2.
"""
from __future__ import annotations

import json
from pathlib import Path

import click
from flask import Flask
from flask.cli import AppGroup, with_appcontext

from app.evaluation import TASK_TYPES
from app.services import catalog, demo, submissions
from app.services.errors import ServiceError


class CliError(click.ClickException):
    exit_code = 2


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path!r}: {exc.strerror}") from exc


def _fail(exc: ServiceError) -> CliError:
    lines = [exc.message] + [
        f"line {d['line']}: {d['message']}" if d["line"] and not d["message"].startswith("line ") else d["message"]
        for d in exc.details()
    ]
    return CliError("\n".join(lines))


benchmarks_cli = AppGroup("benchmarks", help="Add and list benchmarks.")
splits_cli = AppGroup("splits", help="Add and list splits (gold files).")
subsets_cli = AppGroup("subsets", help="Add subsets of a split.")


@benchmarks_cli.command("add")
@click.argument("slug")
@click.option("--task", "task_type", required=True, type=click.Choice(list(TASK_TYPES)), help="Task type.")
@click.option("--name", required=True, help="Display name, e.g. NLVR2.")
@click.option("--description", default="", help="A sentence or two about the benchmark.")
@click.option("--paper-url", default=None, help="Link to the benchmark's paper.")
def benchmarks_add(slug, task_type, name, description, paper_url):
    """Add a benchmark SLUG of a task type."""
    try:
        benchmark = catalog.add_benchmark(slug, task_type, name, description, paper_url)
    except ServiceError as exc:
        raise _fail(exc) from exc
    click.echo(f"added benchmark {benchmark.slug} ({benchmark.task_type})")


@benchmarks_cli.command("list")
def benchmarks_list():
    """List benchmarks."""
    for benchmark in catalog.list_benchmarks():
        click.echo(f"{benchmark.slug}\t{benchmark.task_type}\t{benchmark.name}")


@splits_cli.command("add")
@click.argument("benchmark")
@click.argument("split")
@click.option("--labels", required=True, type=click.Path(dir_okay=False), help="Gold file (JSON lines).")
@click.option("--hidden", is_flag=True, help="A blind test split: labels never leave the server.")
@click.option("--name", default=None, help='Display name, e.g. "Test-U".')
@click.option("--annotations", type=click.Path(dir_okay=False), help="Category annotation file (NLVR2 format).")
@click.option("--subset-field", default=None, help="A gold-file field whose values define subsets, e.g. region.")
def splits_add(benchmark, split, labels, hidden, name, annotations, subset_field):
    """Import the gold file of SPLIT of BENCHMARK into the hidden-labels folder."""
    gold = _read(labels, "labels file")
    notes = _read(annotations, "annotations file") if annotations else None
    try:
        added = catalog.add_split(
            benchmark, split, gold, hidden=hidden, name=name, annotations=notes, subset_field=subset_field
        )
    except ServiceError as exc:
        raise _fail(exc) from exc
    subsets = ", ".join(f"{s.name} ({s.size})" for s in added.subsets) or "none"
    click.echo(
        f"added split {benchmark}/{added.slug} ({'hidden' if added.hidden else 'public'}): "
        f"{added.example_count} examples, sha256 {added.gold_sha256}; subsets: {subsets}"
    )


@splits_cli.command("list")
def splits_list():
    """List splits with their size, visibility and policy."""
    rows = catalog.list_splits()
    if not rows:
        click.echo("no splits yet")
        return
    click.echo("benchmark\tsplit\tname\tvisibility\texamples\tsubsets\tfeedback\topen\tsha256")
    for split in rows:
        click.echo(
            f"{split.benchmark.slug}\t{split.slug}\t{split.name}\t{'hidden' if split.hidden else 'public'}\t"
            f"{split.example_count}\t{len(split.subsets)}\t{split.feedback}\t{'open' if split.is_open else 'closed'}\t"
            f"{split.gold_sha256[:12]}"
        )


@subsets_cli.command("add")
@click.argument("benchmark")
@click.argument("split")
@click.argument("name")
@click.option("--ids", required=True, type=click.Path(dir_okay=False), help="File of identifiers, one a line.")
def subsets_add(benchmark, split, name, ids):
    """Add subset NAME to SPLIT from a file of identifiers; stored submissions are rescored on it."""
    data = _read(ids, "identifier file")
    try:
        subset, rescored = catalog.add_subset(benchmark, split, name, data)
    except ServiceError as exc:
        raise _fail(exc) from exc
    click.echo(f"added subset {subset.name} ({subset.size} examples); rescored {rescored} submissions")


@click.command("evaluate")
@with_appcontext
@click.argument("benchmark")
@click.argument("split")
@click.argument("predictions", type=click.Path(dir_okay=False))
def evaluate(benchmark, split, predictions):
    """Score PREDICTIONS against SPLIT without storing anything; print JSON scores."""
    data = _read(predictions, "predictions file")
    try:
        scores = submissions.evaluate(benchmark, split, data)
    except ServiceError as exc:
        raise _fail(exc) from exc
    click.echo(json.dumps(scores, indent=2))


@click.command("demo")
@with_appcontext
def demo_command():
    """Create demo benchmarks, teams and scored submissions (idempotent)."""
    with click.progressbar(length=sum(len(b.splits) for b in demo.BENCHMARKS), label="demo splits") as bar:
        created = demo.load_demo(progress=lambda _name: bar.update(1))
    click.echo("created " + ", ".join(f"{n} {what}" for what, n in created.items()))


def register(app: Flask) -> None:
    for command in (benchmarks_cli, splits_cli, subsets_cli, evaluate, demo_command):
        app.cli.add_command(command)
