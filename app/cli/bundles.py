"""Commands on bundles: a benchmark hosted from one reviewed folder (`bundle apply`, `bundle export`)."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import AppGroup

from app.bundles import BundleError, read_bundle, write_bundle
from app.cli.errors import CliError, refusals
from app.services.maintenance import bundles

bundle_cli = AppGroup("bundle", help="Host a benchmark from a bundle (benchmark.yaml and its files), or export one.")


@bundle_cli.command("apply")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option(
    "--dry-run", is_flag=True, help="Say what would change (rescoring and moved positions too); change nothing."
)
@click.option("--reason", default=None, help="Why a gold file changed: the label correction's note (required then).")
def bundle_apply(folder, dry_run, reason):
    """Make the benchmark FOLDER/benchmark.yaml describes exist as it says, in one transaction."""
    try:
        loaded = read_bundle(Path(folder))
    except BundleError as exc:
        raise CliError("\n".join([f"{folder}: the bundle cannot be read", *map(str, exc.problems)])) from exc
    with refusals():
        outcome = bundles.apply_bundle(None, loaded, dry_run=dry_run, reason=reason, via="cli")
    head = "would change" if dry_run else "changed"
    if not outcome.changes:
        click.echo(f"{outcome.benchmark}: nothing to change (the catalog already says what the bundle says)")
        return
    click.echo(f"{outcome.benchmark}: {head} ({len(outcome.changes)}):")
    for change in outcome.changes:
        click.echo(f"  {change.target}: {change.summary}")
    if dry_run:
        click.echo("dry run: nothing was changed")


@bundle_cli.command("export")
@click.argument("benchmark")
@click.argument("folder", type=click.Path(file_okay=False))
def bundle_export(benchmark, folder):
    """Write BENCHMARK as a bundle into FOLDER (new or empty), in the canonical form."""
    with refusals():
        bundle, files = bundles.export_bundle(benchmark)
    try:
        write_bundle(bundle, files, Path(folder))
    except (BundleError, OSError) as exc:
        raise CliError(f"cannot write the bundle into {folder!r}: {exc}") from exc
    click.echo(f"wrote {benchmark} to {folder}: benchmark.yaml and {len(files)} files")


COMMANDS = (bundle_cli,)
