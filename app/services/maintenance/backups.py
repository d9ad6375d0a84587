"""Backups: one consistent archive of a deployment's state, restorable into an empty deployment.

The archive is a tar.gz holding
  database/<table>.jsonl          every row of every table, one JSON object a line, ordered by primary key
  hidden_labels/<gold path>       the gold file of every split (checked against the sha256 on record)
  submissions/<aa>/<sha256>.gz    the original upload of every stored submission, as its store keeps it (gzip)
  files.jsonl                     name, sha256 and size of each file above, one JSON object a line
  manifest.json                   format, Alembic revision, row counts, and the sha256, size and count of files.jsonl
The list of files is a member of its own, written and read a line at a time, so neither a backup nor a restore
holds a million uploads' names in memory (format version 1 listed them in the manifest; restore reads both).
All tables are read in one read-only snapshot (PostgreSQL: REPEATABLE READ; SQLite: one read transaction,
which WAL mode keeps on one snapshot), so rows agree with each other; the files are immutable and named
by content, so the ones the snapshot refers to are the right ones. Binary columns are base64, times ISO
8601, tagged so a restore needs no knowledge of the schema; the rows load into SQLite or PostgreSQL alike.
Uploads are read from, and restored into, whichever store the deployment uses (the upload folder or an S3
bucket, services/storage/upload_store.py), one at a time; the archive is the same either way, so a backup of
one restores into the other.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask_migrate import downgrade, upgrade
from sqlalchemy import MetaData, func, select, text

from app import settings
from app.db import db
from app.schema import MIGRATIONS
from app.services.errors import Conflict, InvalidInput
from app.services.storage import upload_store

FORMAT = "holdout-backup"
VERSION = 2
READABLE_VERSIONS = (1, 2)
UPLOAD_NAME = re.compile(r"([0-9a-f]{2})/(\1[0-9a-f]{62})\.gz")  # an upload's name under submissions/
MANIFEST = "manifest.json"
FILE_LIST = "files.jsonl"
VERSION_TABLE = "alembic_version"
BATCH = 1000


@dataclass
class Summary:
    """What a backup holds or a restore loaded."""

    path: Path
    revision: str
    tables: dict[str, int] = field(default_factory=dict)
    gold_files: int = 0
    uploads: int = 0
    upgraded_to: str | None = None  # restore: the revision the database was migrated to afterwards

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


# --- values ------------------------------------------------------------------------------------------


def _encode(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    return value


def _decode(value):
    if isinstance(value, dict):
        if "$b64" in value:
            return base64.b64decode(value["$b64"])
        if "$dt" in value:
            moment = datetime.fromisoformat(value["$dt"])
            # SQLite hands times back without a zone; the application stores UTC.
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return value


def _sha256_file(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _revisions() -> list[str]:
    """Every known revision, oldest first (the history is linear)."""
    return [s.revision for s in reversed(list(ScriptDirectory(str(MIGRATIONS)).walk_revisions()))]


def _current_revision(connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


# --- backup ------------------------------------------------------------------------------------------


def backup(path: Path) -> Summary:
    """Write the deployment's database, gold files and uploads to a new tar.gz at `path` (mode 0600).

    Raises Conflict when `path` exists, InvalidInput when a file the database refers to is missing or no
    longer matches its checksum (the message names it).
    """
    path = Path(path)
    if path.exists():
        raise Conflict(f"{path} already exists; choose a new name for the backup")
    if not path.parent.is_dir():
        raise InvalidInput(f"folder {path.parent} does not exist")
    labels_dir = settings.current().hidden_labels_dir
    uploads = upload_store.current()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    os.chmod(tmp, 0o600)  # the archive holds the hidden labels
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "created_at": datetime.now(UTC).isoformat(),
        "tables": {},
    }
    summary = Summary(path=path, revision="")
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=6) as archive, _FileList() as listed:
            with _snapshot() as connection:
                revision = _current_revision(connection)
                if revision is None:
                    raise InvalidInput("the database has never been migrated: there is nothing to back up")
                manifest["revision"] = summary.revision = revision
                manifest["dialect"] = connection.dialect.name
                metadata = MetaData()
                metadata.reflect(bind=connection)
                for table in metadata.sorted_tables:
                    if not _backed_up(table.name):
                        continue
                    count = _add_table(archive, listed, connection, table)
                    manifest["tables"][table.name] = summary.tables[table.name] = count
                summary.gold_files = _add_gold_files(archive, listed, connection, metadata, labels_dir)
                summary.uploads = _add_uploads(archive, listed, connection, uploads)
            manifest["file_list"] = listed.add_to(archive)
            _add_bytes(archive, MANIFEST, json.dumps(manifest, sort_keys=True, indent=1).encode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return summary


def _add_gold_files(archive, listed: _FileList, connection, metadata: MetaData, labels_dir) -> int:
    """Every split's gold file (and every earlier one a correction replaced) and choices file, checked; how
    many. A restore puts back every file under hidden_labels/ as it is, so the choices come back with the gold."""
    splits = connection.execute(text("SELECT id, gold_path, gold_sha256 FROM splits ORDER BY id")).all()
    if "choices_path" in metadata.tables["splits"].columns:
        splits += connection.execute(
            text("SELECT id, choices_path, choices_sha256 FROM splits WHERE choices_path IS NOT NULL ORDER BY id")
        ).all()
    if "gold_versions" in metadata.tables:
        # Gold files a correction replaced are kept as evidence: back them up too.
        current = {path for _, path, _ in splits}
        earlier = connection.execute(
            text("SELECT split_id, previous_path, previous_sha256 FROM gold_versions ORDER BY id")
        ).all()
        splits += [row for row in dict.fromkeys(earlier) if row[1] not in current]
    added = 0
    for split_id, gold_path, gold_sha256 in splits:
        source = _inside(labels_dir, gold_path, f"gold file of split {split_id}")
        if not os.path.isfile(source):
            raise InvalidInput(f"the gold file of split {split_id} is missing: {source}")
        _add_file(
            archive,
            listed,
            f"hidden_labels/{PurePosixPath(gold_path).as_posix()}",
            source,
            expect=gold_sha256,
            what=f"the gold file of split {split_id}",
        )
        added += 1
    return added


def _add_uploads(archive, listed: _FileList, connection, uploads: upload_store.Store) -> int:
    """The original upload of every scored submission, read from its store one at a time; how many."""
    # Streamed while the snapshot is open: a deployment may hold a million uploads.
    digests = (
        connection.execution_options(stream_results=True, yield_per=BATCH)
        .execute(text("SELECT DISTINCT file_sha256 FROM submissions WHERE status = 'scored' ORDER BY 1"))
        .scalars()
    )
    added = 0
    for digest in digests:
        data = uploads.read_compressed(digest)
        if data is None:
            where = uploads.where(digest)
            raise InvalidInput(f"the original upload {digest} of a scored submission is missing: {where}")
        name = f"submissions/{digest[:2]}/{digest}.gz"
        _add_bytes(archive, name, data)
        listed.add(name, hashlib.sha256(data).hexdigest(), len(data))
        added += 1
    return added


class _snapshot:
    """A read-only connection on one snapshot of the whole database."""

    def __enter__(self):
        engine = db.engine
        self.connection = engine.connect()
        if engine.dialect.name == "postgresql":
            self.connection = self.connection.execution_options(isolation_level="REPEATABLE READ")
            self.transaction = self.connection.begin()
            self.connection.exec_driver_sql("SET TRANSACTION READ ONLY")
        else:
            self.transaction = self.connection.begin()
        return self.connection

    def __exit__(self, *_exc):
        try:
            self.transaction.rollback()
        finally:
            self.connection.close()


class _FileList:
    """files.jsonl, spooled to a temporary file as the files are archived, added to the archive last."""

    def __enter__(self):
        self.spool = tempfile.TemporaryFile()
        self.digest, self.count = hashlib.sha256(), 0
        return self

    def __exit__(self, *_exc):
        self.spool.close()

    def add(self, name: str, sha256: str, size: int) -> None:
        line = json.dumps({"name": name, "sha256": sha256, "size": size}, separators=(",", ":")).encode() + b"\n"
        self.spool.write(line)
        self.digest.update(line)
        self.count += 1

    def add_to(self, archive: tarfile.TarFile) -> dict:
        """Append the list to `archive`; what the manifest records of it."""
        size = self.spool.tell()
        self.spool.seek(0)
        _append(archive, _member(FILE_LIST, size), self.spool)
        return {"sha256": self.digest.hexdigest(), "size": size, "count": self.count}


def _add_table(archive: tarfile.TarFile, listed: _FileList, connection, table) -> int:
    order = list(table.primary_key.columns) or list(table.columns)
    digest, count = hashlib.sha256(), 0
    with tempfile.TemporaryFile() as spool:
        result = connection.execution_options(stream_results=True, yield_per=BATCH).execute(
            select(table).order_by(*order)
        )
        for row in result.mappings():
            line = (
                json.dumps(
                    {key: _encode(value) for key, value in row.items()}, ensure_ascii=False, separators=(",", ":")
                ).encode()
                + b"\n"
            )
            spool.write(line)
            digest.update(line)
            count += 1
        size = spool.tell()
        spool.seek(0)
        name = f"database/{table.name}.jsonl"
        _append(archive, _member(name, size), spool)
    listed.add(name, digest.hexdigest(), size)
    return count


def _add_file(archive, listed: _FileList, name: str, source: str, expect: str | None = None, what: str = "") -> None:
    with open(source, "rb") as fh:
        data = fh.read()
    digest = hashlib.sha256(data).hexdigest()
    if expect is not None and digest != expect:
        raise InvalidInput(f"{what} no longer matches the sha256 on record: {source}")
    _add_bytes(archive, name, data)
    listed.add(name, digest, len(data))


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    _append(archive, _member(name, len(data)), io.BytesIO(data))


def _append(archive: tarfile.TarFile, info: tarfile.TarInfo, fileobj) -> None:
    archive.addfile(info, fileobj)
    # A TarFile keeps every member it wrote for listing, which a backup never asks for: a million uploads
    # would keep a million TarInfo objects (~1 GB).
    archive.members.clear()  # type: ignore[attr-defined]


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o600, int(time.time())
    return info


def _inside(folder: Path | str, relative: str, what: str) -> str:
    """`folder/relative`, refusing anything that would land outside `folder`.

    Paths of single files are plain strings, not Path objects, here and in the loops over files: pathlib interns
    every name it parses, and a million distinct upload names make the interpreter's table of interned strings
    grow and be copied (megabytes at once, at moments that depend on the whole process's history)."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if relative.startswith("/") or ".." in parts or not parts:
        raise InvalidInput(f"{what} has an unsafe path: {relative!r}")
    return os.path.join(folder, *parts)


# --- restore -----------------------------------------------------------------------------------------


def restore(path: Path) -> Summary:
    """Load an archive written by `backup` into this (empty) deployment.

    Verifies every file against the manifest first; refuses (Conflict) a database with rows in any table
    or a file that exists with other content; migrates the database to the archive's revision, inserts
    the rows in foreign-key order in one transaction (and moves PostgreSQL's id sequences past them),
    writes the gold files (mode 0600) and uploads (into this deployment's store: the folder or a bucket),
    then migrates to the newest revision.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"no backup at {path}")
    with tempfile.TemporaryDirectory(prefix="holdout-restore-") as staging_name:
        staging = _Staging(Path(staging_name))
        manifest = _unpack(path, staging)
        revision = manifest["revision"]
        known = _revisions()
        if revision not in known:
            raise InvalidInput(
                f"the backup is at revision {revision}, which this code does not know; "
                "restore it with the code version that wrote it"
            )
        _require_empty_database()
        labels_dir = settings.current().hidden_labels_dir
        uploads = upload_store.current()
        # Two passes over the list, so nothing is written when any destination holds other content.
        for _ in _placed_files(manifest, staging, labels_dir, uploads):
            pass
        _migrate_to(revision, known)
        summary = Summary(path=path, revision=revision)
        for source, target, digest, upload in _placed_files(manifest, staging, labels_dir, uploads):
            if upload is None:
                _place(source, target, digest)
                summary.gold_files += 1
            else:
                uploads.put_compressed(upload, source)
                summary.uploads += 1
        summary.tables = _load_rows(staging.checked, manifest)
    upgrade()
    summary.upgraded_to = known[-1]
    return summary


class _Staging:
    """Where a restore unpacks the archive (`unpacked`), and where each file goes once it has been found in
    the list and matched its sha256 (`checked`): what is left unpacked at the end is a file nobody listed,
    and a name listed twice finds its file gone. No set of names is held in memory."""

    def __init__(self, root: Path):
        self.unpacked = root / "unpacked"
        self.checked = root / "checked"
        self.unpacked.mkdir()
        self.checked.mkdir()


def _unpack(path: Path, staging: _Staging) -> dict:
    """Extract the archive's regular files and check them against its list; the manifest."""
    _extract(path, staging)
    manifest = _read_manifest(path, staging)
    _check_listed(manifest, staging)
    return manifest


def _extract(path: Path, staging: _Staging) -> None:
    """Every member of the archive into staging.unpacked: InvalidInput for anything but regular files, a name
    held twice or an unreadable archive."""
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in archive:
                if not member.isfile():
                    raise InvalidInput(f"the backup holds {member.name!r}, which is not a regular file")
                target = _inside(staging.unpacked, member.name, "an archive member")
                if os.path.lexists(target):
                    raise InvalidInput(f"the backup holds {member.name!r} twice")
                os.makedirs(os.path.dirname(target), exist_ok=True)
                source_file = archive.extractfile(member)
                if source_file is None:
                    raise InvalidInput(f"the archive's member {member.name} is not a file")
                with source_file as source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                archive.members.clear()  # type: ignore[attr-defined]  # no TarInfo kept per member read
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InvalidInput(f"{path} is not a readable backup archive: {exc}") from exc


def _read_manifest(path: Path, staging: _Staging) -> dict:
    """The unpacked manifest, when it is a Holdout backup's of a version this code reads."""
    if not (staging.unpacked / MANIFEST).is_file():
        raise InvalidInput(f"{path} has no {MANIFEST}: not a Holdout backup")
    try:
        manifest = json.loads((staging.unpacked / MANIFEST).read_text())
    except ValueError as exc:
        raise InvalidInput(f"the backup's {MANIFEST} is not valid JSON") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidInput(f"{path} is not a Holdout backup")
    if manifest.get("version") not in READABLE_VERSIONS:
        raise InvalidInput(
            f"{path} is a Holdout backup of format version {manifest.get('version')}; this code reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    return manifest


def _check_listed(manifest: dict, staging: _Staging) -> None:
    """Move each listed file that matches its sha256 from unpacked to checked; InvalidInput for a file
    missing, damaged, listed twice or not listed at all."""
    for name, digest in _listed(manifest, staging):
        unpacked = _inside(staging.unpacked, name, "a listed file")
        checked = _inside(staging.checked, name, "a listed file")
        if not os.path.isfile(unpacked):
            if os.path.lexists(checked):
                raise InvalidInput(f"the backup's list names {name} twice")
            raise InvalidInput(f"the backup is incomplete: {name} is missing")
        if _sha256_file(unpacked) != digest:
            raise InvalidInput(f"the backup is damaged: {name} does not match its sha256")
        os.makedirs(os.path.dirname(checked), exist_ok=True)
        os.replace(unpacked, checked)
    unlisted = (
        name
        for name in (p.relative_to(staging.unpacked).as_posix() for p in staging.unpacked.rglob("*") if p.is_file())
        if name not in (MANIFEST, FILE_LIST)
    )
    extra = sorted(itertools.islice(unlisted, 11))
    if extra:
        shown = ", ".join(extra[:10]) + (" and more" if len(extra) > 10 else "")
        raise InvalidInput(f"the backup holds files its manifest does not list: {shown}")


def _listed(manifest: dict, staging: _Staging):
    """(name, sha256) of every file the backup lists, read a line at a time from files.jsonl (version 2) or
    from the manifest (version 1)."""
    if manifest["version"] == 1:
        files = manifest.get("files")
        if not isinstance(files, dict) or not all(isinstance(entry, dict) for entry in files.values()):
            raise InvalidInput(f"the backup's {MANIFEST} has no valid list of files")
        for name, entry in files.items():
            yield name, entry.get("sha256")
        return
    record = manifest.get("file_list")
    source = staging.unpacked / FILE_LIST
    if not isinstance(record, dict) or not source.is_file():
        raise InvalidInput(f"the backup is incomplete: {FILE_LIST} is missing")
    if _sha256_file(source) != record.get("sha256"):
        raise InvalidInput(f"the backup is damaged: {FILE_LIST} does not match its sha256")
    count = 0
    with open(source, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                entry = json.loads(line)
                name, digest = entry["name"], entry["sha256"]
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInput(f"the backup's {FILE_LIST}, line {number}: not a file entry") from exc
            if name in (MANIFEST, FILE_LIST):
                raise InvalidInput(f"the backup's {FILE_LIST}, line {number}: lists {name}")
            count += 1
            yield name, digest
    if count != record.get("count"):
        raise InvalidInput(f"the backup's {FILE_LIST} lists {count} files, its manifest says {record.get('count')}")


def _backed_up(table: str) -> bool:
    """The app's tables: not alembic's version (restore migrates), nor procrastinate's (on PostgreSQL: which
    worker holds which job now; the jobs table itself is kept, and a restored waiting job is handed over
    again by the workers' sweep)."""
    return table != VERSION_TABLE and not table.startswith("procrastinate_")


def _require_empty_database() -> None:
    with db.engine.connect() as connection:
        metadata = MetaData()
        metadata.reflect(bind=connection)
        for table in metadata.sorted_tables:
            if not _backed_up(table.name):
                continue
            if connection.execute(select(func.count()).select_from(table)).scalar_one():
                raise Conflict(
                    f"the database is not empty (table {table.name} has rows); restore needs an empty "
                    "deployment: a new database, an empty hidden-labels folder and an empty upload folder or bucket"
                )


def _placed_files(manifest: dict, staging: _Staging, labels_dir: Path, uploads: upload_store.Store):
    """(checked file, destination, sha256, the upload's own sha256 or None for a gold file) for every file but
    the database's, one at a time; Conflict if a destination holds something else."""
    for name, digest in _listed(manifest, staging):
        top, _, rest = name.partition("/")
        if top == "hidden_labels":
            target, upload = _inside(labels_dir, rest, "a gold file"), None
            held = _sha256_file(target) if os.path.lexists(target) else None
        elif top == "submissions":
            found = UPLOAD_NAME.fullmatch(rest)
            if found is None:
                raise InvalidInput(f"the backup holds an upload named unlike one: {name!r}")
            upload = found.group(2)
            target, held = uploads.where(upload), uploads.compressed_sha256(upload)
        elif top == "database":
            continue
        else:
            raise InvalidInput(f"the backup holds an unexpected file {name!r}")
        if held is not None and held != digest:
            raise Conflict(f"{target} already exists with other content; restore needs an empty deployment")
        yield _inside(staging.checked, name, "a listed file"), target, digest, upload


def _place(source: str, target: str, digest: str) -> None:
    if os.path.lexists(target):
        return  # identical (checked above)
    folder, name = os.path.split(target)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    # Gold files are private: their folder and its parent (the labels root).
    for path in (folder, os.path.dirname(folder)):
        os.chmod(path, 0o700)
    tmp = os.path.join(folder, f".{name}.restore")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out, open(source, "rb") as fh:
        shutil.copyfileobj(fh, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)
    os.chmod(target, 0o600)


def _migrate_to(revision: str, known: list[str]) -> None:
    with db.engine.connect() as connection:
        current = _current_revision(connection)
    if current == revision:
        return
    if current is None or known.index(current) < known.index(revision):
        upgrade(revision=revision)
    else:
        downgrade(revision=revision)  # the database is empty: nothing is lost
    db.session.remove()


def _load_rows(checked: Path, manifest: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    with db.engine.begin() as connection:
        metadata = MetaData()
        metadata.reflect(bind=connection)
        expected = set(manifest.get("tables", {}))
        present = {t.name for t in metadata.sorted_tables if _backed_up(t.name)}
        if expected - present:
            raise InvalidInput(f"the backup has tables the schema lacks: {', '.join(sorted(expected - present))}")
        for table in metadata.sorted_tables:
            if table.name not in expected:
                continue
            source = checked / "database" / f"{table.name}.jsonl"
            count, batch = 0, []
            with open(source, "rb") as fh:
                for line in fh:
                    row = {key: _decode(value) for key, value in json.loads(line).items()}
                    unknown = set(row) - set(table.columns.keys())
                    if unknown:
                        raise InvalidInput(f"rows of {table.name} have columns the schema lacks: {sorted(unknown)}")
                    batch.append(row)
                    if len(batch) >= BATCH:
                        connection.execute(table.insert(), batch)
                        count, batch = count + len(batch), []
            if batch:
                connection.execute(table.insert(), batch)
                count += len(batch)
            if count != manifest["tables"][table.name]:
                raise InvalidInput(
                    f"the backup's {table.name} holds {count} rows, its manifest says {manifest['tables'][table.name]}"
                )
            counts[table.name] = count
        if connection.dialect.name == "postgresql":
            _reset_sequences(connection, metadata)
    return counts


def _reset_sequences(connection, metadata: MetaData) -> None:
    """Move each serial id's sequence past the restored rows, so the next insert gets a new id."""
    for table in metadata.sorted_tables:
        for column in table.primary_key.columns:
            sequence = connection.execute(
                text("SELECT pg_get_serial_sequence(:table, :column)"),
                {"table": table.name, "column": column.name},
            ).scalar()
            if sequence:
                connection.execute(
                    text(
                        f'SELECT setval(:sequence, COALESCE((SELECT MAX("{column.name}") FROM "{table.name}"), 0) + 1, '
                        "false)"
                    ),
                    {"sequence": sequence},
                )
