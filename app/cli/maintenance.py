"""Maintenance commands: the demo, backups and their restore, and label audits (`demo`, `backup`, `restore`,
`labels`)."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import AppGroup, with_appcontext

from app.cli.errors import read_file, refusals
from app.services.maintenance import backups, demo, label_audits


@click.command("demo")
@with_appcontext
def demo_command():
    """Create demo benchmarks, teams and scored submissions (idempotent)."""
    with click.progressbar(length=sum(len(b.splits) for b in demo.BENCHMARKS), label="demo splits") as bar:
        created = demo.load_demo(progress=lambda _name: bar.update(1))
    click.echo("created " + ", ".join(f"{n} {what}" for what, n in created.items()))
    for email, password, admin, team in demo.DEMO_USERS:
        role = "maintainer" if admin else f"member of {team}"
        click.echo(f"demo login ({role}): {email} / {password}")


@click.command("backup")
@with_appcontext
@click.argument("path", type=click.Path(dir_okay=False))
def backup_command(path):
    """Write a consistent archive (tar.gz) of the database, gold files and uploads (from the upload folder or
    the bucket) to the new file PATH."""
    with refusals():
        summary = backups.backup(Path(path))
    click.echo(
        f"wrote {summary.path}: {summary.rows} rows in {len(summary.tables)} tables (revision "
        f"{summary.revision}), {summary.gold_files} gold files, {summary.uploads} uploads; it holds the "
        "hidden labels: keep it private"
    )


@click.command("restore")
@with_appcontext
@click.argument("path", type=click.Path(dir_okay=False))
def restore_command(path):
    """Restore the archive PATH (from `backup`) into this empty deployment (its uploads into this deployment's
    folder or bucket), then migrate to the newest schema."""
    with refusals():
        summary = backups.restore(Path(path))
    click.echo(
        f"restored {summary.path}: {summary.rows} rows in {len(summary.tables)} tables (revision "
        f"{summary.revision}, migrated to {summary.upgraded_to}), {summary.gold_files} gold files, "
        f"{summary.uploads} uploads"
    )


labels_cli = AppGroup(
    "labels", help="Audit a split's gold labels; install a corrected gold file; summarise for the probe check."
)


@labels_cli.command("audit")
@click.argument("benchmark")
@click.argument("split")
@click.option(
    "--top",
    default=str(label_audits.DEFAULT_TOP),
    show_default=True,
    help=f"How many suspect labels to list (1 to {label_audits.MAX_TOP}).",
)
def labels_audit(benchmark, split, top):
    """List the examples of SPLIT whose gold label the stored submissions most consistently contradict."""
    with refusals():
        report = label_audits.audit_labels(benchmark, split, top)
    noise = ", ".join(f"{field} {100 * (1 - value):.2f}%" for field, value in report.gold_accuracy.items())
    click.echo(
        f"{benchmark}/{split}: {report.submissions} distinct submissions voted; estimated wrong gold labels: {noise}"
    )
    click.echo("rank	identifier	field	gold	likely	p_wrong	against")
    for row in report.rows:
        click.echo(
            f"{row.rank}	{row.identifier}	{row.field}	{row.gold}	{row.likely}	"
            f"{row.probability:.4f}	{100 * row.against:.1f}%"
        )


@labels_cli.command("correct")
@click.argument("benchmark")
@click.argument("split")
@click.option("--labels", required=True, type=click.Path(dir_okay=False), help="The corrected gold file.")
@click.option("--note", required=True, help="What was corrected and why (audit log).")
def labels_correct(benchmark, split, labels, note):
    """Install a corrected gold file for SPLIT as its next version and rescore every stored submission."""
    data = read_file(labels, "labels file")
    with refusals():
        done = label_audits.correct_labels(None, benchmark, split, data, note, via="cli")
    click.echo(
        f"{benchmark}/{split}: gold version {done.version} installed ({done.old_sha256[:12]} -> "
        f"{done.new_sha256[:12]}); {done.labels_changed} label{'' if done.labels_changed == 1 else 's'} "
        f"changed, {done.rescored} submissions rescored, {done.ranks_moved} published "
        f"rank{'' if done.ranks_moved == 1 else 's'} moved"
    )


@labels_cli.command("summarise")
@click.argument("benchmark")
@click.argument("split")
def labels_summarise(benchmark, split):
    """Make the probe summaries of hidden SPLIT's stored submissions against its labels (those stored before
    migration 0010 have none: the probe check reads them the slow way until this runs)."""
    with refusals():
        summarised = label_audits.summarise_for_probes(None, benchmark, split, via="cli")
    click.echo(f"{benchmark}/{split}: {summarised} submissions summarised for the probe check")


COMMANDS = (demo_command, backup_command, restore_command, labels_cli)  # what this module adds to `flask`
