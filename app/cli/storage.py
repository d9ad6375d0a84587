"""Commands on stored files: `uploads check` holds the store of original uploads against the database."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from app.cli.errors import refusals
from app.services.storage import upload_store

uploads_cli = AppGroup("uploads", help="Check the store of original uploads (folder or bucket) against the database.")


@uploads_cli.command("check")
@click.option(
    "--delete",
    is_flag=True,
    help="Remove files (or objects) without a row and leftovers of unfinished uploads; put back complete "
    "files of committed rows that a killed worker left under a temporary name.",
)
@click.option(
    "--min-age",
    type=click.FloatRange(min=0),
    default=upload_store.IN_FLIGHT_SECONDS,
    show_default=True,
    help="Seconds after which a temporary file (in a bucket: an object without a row) is no longer taken for "
    "an upload in flight.",
)
def uploads_check(delete, min_age):
    """List originals in the upload store (SUBMISSIONS_DIR, or STORAGE_URL's folder or bucket) without a
    stored submission, and stored submissions without an original.

    Exits with 1 when something is wrong and --delete was not given (or cannot mend it), 2 when the store
    cannot be read."""
    with refusals():
        found = upload_store.check(delete=delete, min_age=min_age)
    if isinstance(found, upload_store.BucketCheck):
        _report_bucket(found, delete)
        lost = found.rows_without_object
    else:
        _report_folder(found, delete)
        lost = found.rows_without_file
    if found.clean:
        click.echo("uploads and rows agree")
    elif not delete or lost:  # --delete cannot bring back a lost original
        raise SystemExit(1)


def _report_bucket(found: upload_store.BucketCheck, delete: bool) -> None:
    done = " (removed)" if delete else ""
    for key in found.objects_without_row:
        click.echo(f"object without a row{done}: {found.address(key)}")
    for digest in found.rows_without_object:
        click.echo(f"stored submission without an object: sha256 {digest}")
    for key in found.in_flight:
        click.echo(f"upload in flight, left alone: {found.address(key)}")


def _report_folder(found: upload_store.FolderCheck, delete: bool) -> None:
    done = " (removed)" if delete else ""
    for path in found.files_without_row:
        click.echo(f"file without a row{done}: {path}")
    for path in found.leftovers:
        click.echo(f"unfinished upload{done}: {path}")
    for path in found.restorable:
        moved = " (moved into place)" if delete else ""
        click.echo(f"complete file of a stored submission under a temporary name{moved}: {path}")
    for digest in found.rows_without_file:
        click.echo(f"stored submission without a file: sha256 {digest}")
    for path in found.in_flight:
        click.echo(f"upload in flight, left alone: {path}")


COMMANDS = (uploads_cli,)  # what this module adds to `flask`
