"""Commands on published entries: a maintainer's verified mark (`entries verify`, `entries unverify`)."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from app.cli.errors import refusals
from app.services.maintenance import maintainer_actions

entries_cli = AppGroup("entries", help="Mark published entries verified, or take the mark off.")


@entries_cli.command("verify")
@click.argument("submission_id", type=int)
@click.option("--note", required=True, help="What was checked, at most 500 characters (shown on hover and tap).")
@click.option("--url", default=None, help="An http(s) link to the check (optional).")
def entries_verify(submission_id, note, url):
    """Mark published entry SUBMISSION_ID verified (audited); marking it again replaces the note and link."""
    with refusals():
        entry = maintainer_actions.verify_entry(None, submission_id, note, url, via="cli")
    click.echo(f"entry {entry.id} ({entry.model_name}) is marked verified")


@entries_cli.command("unverify")
@click.argument("submission_id", type=int)
def entries_unverify(submission_id):
    """Take the verified mark off entry SUBMISSION_ID (audited)."""
    with refusals():
        entry = maintainer_actions.unverify_entry(None, submission_id, via="cli")
    click.echo(f"entry {entry.id} ({entry.model_name}) is not marked verified")


COMMANDS = (entries_cli,)  # what this module adds to `flask`
