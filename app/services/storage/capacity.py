"""Room in the stores, as /healthz reports it: free space in the upload folder and on the disk of a SQLite
database, and the last write each store refused in this process (a full or failing disk, an S3 server
away; for PostgreSQL and a bucket, whose room the app cannot see, the refusal is the only sign) for 5 minutes, or
for the upload store until it confirms an upload's write again. Reads no table, so it answers while the database
is away."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from app import observability, settings
from app.db import db

RECENT_SECONDS = 300  # a refused write this recent still counts as a sign of trouble
MIN_DATABASE_FREE = 16 * 1024 * 1024  # below this a SQLite database cannot take a busy day's uploads
MB = 1024 * 1024


def _free_bytes(path: Path) -> int | None:
    for folder in (path, *path.parents):  # the nearest folder that exists (the upload folder is made lazily)
        if folder.exists():
            return shutil.disk_usage(folder).free
    return None


def _sqlite_file() -> Path | None:
    url = db.engine.url
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def problems() -> list[str]:
    """What is wrong with the stores now, one sentence each; empty when all is well."""
    found = []
    config = settings.current()
    need = 2 * config.max_upload_bytes  # an upload's original and its temporary copy, with room to spare
    # A bucket's room is not ours to see: its refused writes (below) are the sign.
    free = _free_bytes(config.upload_folder) if config.upload_bucket is None else None
    if free is not None and free < need:
        found.append(
            f"uploads: {free / MB:.1f} MB free in the upload folder, under the {need // MB} MB an upload may need"
        )
    database = _sqlite_file()
    free = _free_bytes(database) if database is not None else None
    if free is not None and free < MIN_DATABASE_FREE:
        found.append(f"database: {free / MB:.1f} MB free on the database's disk")
    now = time.time()
    for store, (when, reason) in sorted(observability.last_storage_failures().items()):
        if now - when < RECENT_SECONDS:
            found.append(f"{store}: a write was refused {now - when:.0f} s ago ({reason})")
    return found
