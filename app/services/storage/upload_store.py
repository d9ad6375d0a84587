"""The store of original uploads, whichever STORAGE_URL chose: the upload folder (upload_files: empty, a
path or file:///path) or an S3 bucket (upload_objects: s3://bucket/prefix). Uploads, backups and `flask
uploads check` go through here and do not ask which.

Both keep the same gzip bytes under the same content-addressed name (``<sha256[:2]>/<sha256>.gz``) and the
same contract around an upload's transaction: ``keep`` starts the write, ``wait`` before the transaction
begins raises StorageFailed if the store refused it or did not confirm it within STORAGE_TIMEOUT (so a store
that hangs holds no lock and no worker for longer), ``finish`` after the commit makes the original durable
and visible, ``discard`` when nothing was stored. After ``discard``, ``in_doubt`` says that the original may
still appear (a bucket that took the write but did not answer): ``settle_stray``, run by a job once
``stray_after`` has passed, removes it unless a stored submission names it.
"""

from __future__ import annotations

from typing import Protocol

from app import settings
from app.services.storage import upload_files, upload_objects
from app.services.storage.upload_files import IN_FLIGHT_SECONDS, FolderCheck
from app.services.storage.upload_objects import BucketCheck

__all__ = [
    "IN_FLIGHT_SECONDS",
    "BucketCheck",
    "FolderCheck",
    "Kept",
    "Store",
    "check",
    "current",
    "keep",
    "settle_stray",
    "stray_after",
]


class Kept(Protocol):
    """An original being written for its upload, confirmed before the upload's transaction begins."""

    digest: str
    in_doubt: bool  # after discard: the original may still appear in the store (settle_stray removes it)

    def wait(self) -> None: ...

    def finish(self) -> None: ...

    def discard(self) -> None: ...


class Store(Protocol):
    """What both stores do (upload_files, the module, and upload_objects.UploadBucket)."""

    def keep(self, data: bytes, digest: str) -> Kept: ...

    def read_original(self, digest: str) -> bytes: ...

    def where(self, digest: str) -> str: ...

    def read_compressed(self, digest: str) -> bytes | None: ...

    def compressed_sha256(self, digest: str) -> str | None: ...

    def put_compressed(self, digest: str, source: str) -> None: ...


def current() -> Store:
    bucket = settings.current().upload_bucket
    return upload_files if bucket is None else upload_objects.UploadBucket(bucket)


def keep(data: bytes, digest: str) -> Kept:
    """Start writing an upload's original to the store, in the background; ``wait`` for it before the upload's
    transaction (see the module's docstring)."""
    return current().keep(data, digest)


def read_original(digest: str) -> bytes:
    return current().read_original(digest)


def stray_after() -> float:
    """Seconds after a discard left an original in doubt by which this process no longer writes it."""
    return upload_objects.stray_after(settings.current().storage_timeout)


def settle_stray(digest: str) -> str:
    """Remove the original of an upload that was not stored, left in doubt, unless a stored submission names
    it; what was done, briefly. Raises StorageFailed while the store does not answer."""
    store = current()
    if not isinstance(store, upload_objects.UploadBucket):
        return "nothing to do: uploads are kept in a folder"  # a folder's leftovers go when their write ends
    return store.settle_stray(digest)


def check(delete: bool = False, min_age: float = IN_FLIGHT_SECONDS) -> FolderCheck | BucketCheck:
    """The store against the database's stored submissions: originals without a row, rows without an
    original (and in the folder, leftovers of unfinished uploads); with ``delete``, removes what no row names
    (and puts back complete files of committed rows). Changes only the store, never rows."""
    bucket = settings.current().upload_bucket
    if bucket is None:
        return upload_files.check_folder(delete=delete, min_age=min_age)
    return upload_objects.check_bucket(bucket, delete=delete, min_age=min_age)
