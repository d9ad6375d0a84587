"""Commands on submissions: `evaluate` scores a predictions file as an upload would, storing nothing."""

from __future__ import annotations

import json

import click
from flask.cli import with_appcontext

from app.cli.errors import read_file, refusals
from app.services.intake import submissions


@click.command("evaluate")
@with_appcontext
@click.argument("benchmark")
@click.argument("split")
@click.argument("predictions", type=click.Path(dir_okay=False))
def evaluate(benchmark, split, predictions):
    """Score PREDICTIONS against SPLIT without storing anything; print JSON scores."""
    data = read_file(predictions, "predictions file")
    with refusals():
        scores = submissions.evaluate(benchmark, split, data)
    click.echo(json.dumps(scores, indent=2))


COMMANDS = (evaluate,)  # what this module adds to `flask`
