"""Original upload files in the upload folder (STORAGE_URL empty or a folder: upload_store chooses), kept
gzip-compressed and named by their sha256 (content-addressed, so idempotent).

An original is kept only for a submission that is stored: it is written under a temporary name before
the upload's transaction begins, and moved into place only once the row is committed (``Pending``),
removed otherwise. ``check`` finds what a killed worker can still leave behind: files without a row, rows
without a file. A write the disk refuses (full, failing) is a StorageFailed (507), one it has not finished
within STORAGE_TIMEOUT a StorageFailed (503, with Retry-After: a disk that hangs holds neither the worker
nor the database's lock); the upload is then not stored at all, and the file goes when its write ends.
Originals are private to the server's account: files 0600 in folders 0700.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import logging
import os
import secrets
import shutil
import time
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from app import observability, settings
from app.services.errors import StorageFailed

log = logging.getLogger(__name__)
TEMP_SUFFIX = ".tmp"
FILE_MODE = 0o600
FOLDER_MODE = 0o700
WRITE_BLOCK = 1 << 20  # bytes of an original compressed at a time
# A temporary file younger than this may belong to an upload in flight (workers time out after 60 s).
IN_FLIGHT_SECONDS = 600
RETRY_AFTER = 30  # seconds: the Retry-After of an upload a store did not answer in time (it may be back then)


def uploads_dir() -> Path:
    return settings.current().upload_folder


def path_for(digest: str) -> Path:
    return uploads_dir() / digest[:2] / f"{digest}.gz"


def _temp_for(target: Path) -> Path:
    # The full digest in the name: `check` can tell which row a leftover belongs to.
    return target.parent / f".{target.name[:-3]}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


class Pending:
    """An original being written under a temporary name: ``wait`` before the upload's transaction begins
    (re-raises a write error; gives up after STORAGE_TIMEOUT), ``finish`` after its commit (moves it into
    place), ``discard`` when nothing was stored."""

    in_doubt = False  # never: a file still being written when its upload gave up is removed once written

    def __init__(self, data: bytes, digest: str, background: bool = True):
        self.digest = digest
        self.target = path_for(digest)
        self.temp = _temp_for(self.target)
        self._future: Future | None = None
        if background:
            self._deadline = time.monotonic() + settings.current().storage_timeout
            self._future = writer_threads().submit(_write, self.temp, data)
            return
        try:
            _write(self.temp, data)
        except OSError as exc:
            raise storage_failed(exc) from exc

    def _remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def wait(self) -> None:
        """Raises StorageFailed if the disk refused the write or did not finish it within STORAGE_TIMEOUT."""
        if self._future is None:
            return
        try:
            self._future.result(timeout=self._remaining())
        except OSError as exc:  # futures.TimeoutError is one too: then the write has not ended
            if self._future.done():
                raise storage_failed(exc) from exc
            self._future.cancel()  # not begun (waiting for a writer thread): it never will be
            raise timed_out() from None

    def finish(self) -> None:
        """After the commit: the row is stored, so a failure here is logged, not answered; the complete
        temporary file stays, and `flask uploads check --repair` moves it into place."""
        self.wait()
        try:
            if self.target.exists():  # the same content is already kept for another submission
                self.temp.unlink(missing_ok=True)
            else:
                os.replace(self.temp, self.target)
        except OSError as exc:
            observability.storage_failure("uploads", os.strerror(exc.errno or 0))
            log.error("could not move %s into place (%s); `flask uploads check --repair` will", self.temp, exc)

    def discard(self) -> None:
        """Remove the temporary file; one still being written when the budget is spent goes when its write
        ends (a failed write leaves nothing, and was answered already)."""
        if self._future is not None and not self._future.done():
            futures.wait([self._future], timeout=self._remaining())
            if not self._future.cancel():  # under way (or ended meanwhile: then the callback runs at once)
                self._future.add_done_callback(lambda _: self.temp.unlink(missing_ok=True))
                return
        self.temp.unlink(missing_ok=True)


def keep(data: bytes, digest: str) -> Pending:
    """Start writing the upload in a background thread; compressing and writing release the GIL, so this
    overlaps the upload's database work."""
    return Pending(data, digest)


_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None


def writer_threads() -> ThreadPoolExecutor:
    """The threads that write originals beside their upload's transaction (to the folder or a bucket)."""
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():  # a forked worker has none of its parent's threads
        _pool, _pool_pid = ThreadPoolExecutor(max_workers=2, thread_name_prefix="holdout-keep"), os.getpid()
    return _pool


def storage_failed(exc: OSError) -> StorageFailed:
    """The answer to a write the upload folder refused; counted in /metrics and remembered for /healthz."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    observability.storage_failure("uploads", reason)
    log.error("upload storage refused a write: %s", exc)
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    what = "is full" if full else f"failed ({reason})"
    return StorageFailed(
        f"the server's upload storage {what}: your file was not stored and your quota is unchanged; "
        "try again later, and tell the maintainers if it persists"
    )


def timed_out() -> StorageFailed:
    """The answer to an upload the upload folder did not take within STORAGE_TIMEOUT (a disk that hangs)."""
    observability.storage_failure("uploads", "timed out")
    log.error("upload storage: the upload folder did not finish a write within STORAGE_TIMEOUT")
    return StorageFailed(
        "the server's upload storage is unavailable: the upload folder did not answer in time: your file was not "
        "stored and your quota is unchanged; try again later, and tell the maintainers if it persists",
        unavailable=True,
        retry_after=RETRY_AFTER,
    )


def make_private_folder(folder: Path) -> None:
    """Create the folder (and missing parents) 0700, and tighten it if it exists."""
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o777 != FOLDER_MODE:
        folder.chmod(FOLDER_MODE)


def secure_uploads_dir(root: Path) -> None:
    """At start-up: the upload folder and its subfolders 0700 (earlier versions made them 0755), so no other
    account on the machine reads a team's file, whatever mode an old file has. Files are not walked (there
    may be a million); each is 0600 from the moment it is written."""
    if not root.is_dir():
        return
    for path in [root, *(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())]:
        with contextlib.suppress(PermissionError):  # owned by someone else: left to its owner
            path.chmod(FOLDER_MODE)


def _write(temp: Path, data: bytes) -> None:
    make_private_folder(temp.parent.parent)
    make_private_folder(temp.parent)
    try:
        # O_EXCL: a fresh file, never one planted in its place; 0600 from its first byte.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with open(fd, "wb") as raw:
            compress_into(raw, data)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def compress_into(raw, data: bytes) -> None:
    """An original as it is kept, written to the binary file ``raw``: gzip with no time stamp, so the same
    content always gives the same bytes, in the folder and in a bucket alike."""
    # Level 1: a prediction CSV shrinks ~4.4x instead of ~6x, in a third of the time (inside the upload).
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as fh:
        # A block at a time: zlib returns what one call compresses as one buffer (of the upload's size
        # for a file that does not compress), made in this thread's arena.
        view = memoryview(data)
        for start in range(0, len(view), WRITE_BLOCK):
            fh.write(view[start : start + WRITE_BLOCK])


def read_original(digest: str) -> bytes:
    with gzip.open(path_for(digest), "rb") as fh:
        return fh.read()


def where(digest: str) -> str:
    """Where the original with this sha256 is kept, for messages."""
    return _file_for(digest)


# --- backups: the kept (compressed) bytes, one original at a time -----------------------------------------
# Plain strings, not Path objects: pathlib interns every name it parses, which a backup of a million uploads
# would pay for (see backups._inside).


def _file_for(digest: str) -> str:
    return os.path.join(uploads_dir(), digest[:2], f"{digest}.gz")


def read_compressed(digest: str) -> bytes | None:
    """The kept file's bytes as they are (gzip); None when there is none."""
    try:
        with open(_file_for(digest), "rb") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def compressed_sha256(digest: str) -> str | None:
    """The sha256 of the kept file's bytes (not of its content), None when there is none."""
    target = _file_for(digest)
    if not os.path.lexists(target):
        return None
    hasher = hashlib.sha256()
    with open(target, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def put_compressed(digest: str, source: str) -> None:
    """Keep the file ``source`` (a backup's copy, already checked) as the original with this sha256, unless
    one is kept already: written under a temporary name, flushed to disk, then moved into place."""
    target = _file_for(digest)
    if os.path.lexists(target):
        return
    folder = os.path.dirname(target)
    make_private_folder(uploads_dir())
    make_private_folder(Path(folder))  # one of 256
    temp = os.path.join(folder, f".{digest}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with open(fd, "wb") as out, open(source, "rb") as fh:
            shutil.copyfileobj(fh, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


# --- consistency of the folder with the database --------------------------------------------------------


@dataclass
class FolderCheck:
    files_without_row: list[Path] = field(default_factory=list)  # kept originals no stored submission names
    leftovers: list[Path] = field(default_factory=list)  # temporary files of uploads that did not finish
    restorable: list[Path] = field(default_factory=list)  # complete temporary files of a committed row
    in_flight: list[Path] = field(default_factory=list)  # temporary files too young to judge
    rows_without_file: list[str] = field(default_factory=list)  # digests of stored submissions

    @property
    def clean(self) -> bool:
        return not (self.files_without_row or self.leftovers or self.restorable or self.rows_without_file)


def _digest_of_temp(path: Path) -> str:
    return path.name[1:].split(".", 1)[0]


def _holds(path: Path, digest: str) -> bool:
    """Whether a gzip file decompresses, whole, to content with this sha256."""
    hasher = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                hasher.update(block)
    except (OSError, EOFError):
        return False
    return hasher.hexdigest() == digest


def check(stored: set[str], min_age: float = IN_FLIGHT_SECONDS) -> FolderCheck:
    """Compare the folder with ``stored``, the digests the database's stored submissions name."""
    result = FolderCheck()
    folder = uploads_dir()
    present: set[str] = set()
    now = time.time()
    temps = []
    for path in sorted(folder.glob("*/*")) if folder.exists() else []:
        if path.name.endswith(TEMP_SUFFIX):
            temps.append(path)
        elif path.name.endswith(".gz"):
            digest = path.name[:-3]
            present.add(digest)
            if digest not in stored:
                result.files_without_row.append(path)
    for path in temps:
        digest = _digest_of_temp(path)
        try:
            young = now - path.stat().st_mtime < min_age
        except FileNotFoundError:  # finished meanwhile
            continue
        if young:
            result.in_flight.append(path)
        elif digest in stored and digest not in present and _holds(path, digest):
            result.restorable.append(path)  # a worker killed between its commit and the move
        else:
            result.leftovers.append(path)
    restorable = {_digest_of_temp(path) for path in result.restorable}
    result.rows_without_file = sorted(stored - present - restorable)
    return result


def repair(found: FolderCheck) -> None:
    """Move restorable files into place and remove files without a row and leftovers."""
    for path in found.restorable:
        os.replace(path, path.parent / f"{_digest_of_temp(path)}.gz")
    for path in found.files_without_row + found.leftovers:
        path.unlink(missing_ok=True)


def check_folder(delete: bool = False, min_age: float = IN_FLIGHT_SECONDS) -> FolderCheck:
    """``check`` against the database (every scored submission keeps its original); with ``delete``,
    ``repair`` what it found. Changes only files, never rows."""
    found = check(stored_digests(), min_age)
    if delete:
        repair(found)
    return found


def stored_digests() -> set[str]:
    """The sha256 of every stored (scored) submission's original: what the store must hold."""
    from sqlalchemy import select

    from app.db import db
    from app.models import Submission

    return set(db.session.scalars(select(Submission.file_sha256).where(Submission.status == "scored")))
