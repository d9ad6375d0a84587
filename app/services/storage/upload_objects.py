"""Original upload files as objects in an S3 bucket (STORAGE_URL=s3://bucket/prefix; upload_store chooses):
the same gzip bytes as the upload folder's files, under the key ``<prefix>/<sha256[:2]>/<sha256>.gz``.

An original is written under its final key, and confirmed by the server, before its upload's transaction
begins: the key is the content's hash, so writing it twice is harmless, and what a crash between the write
and the commit leaves is an object without a row, which ``check`` reports (and ``repair`` deletes).
``discard`` deletes the object only when no stored submission names its sha256 (another upload may have the
same content). A server that cannot be reached, answers 5xx or refuses access is a StorageFailed answered
503 (with Retry-After but for refused access); so is one that has not confirmed the write within
STORAGE_TIMEOUT (the budget of the whole write, retries included: each request's timeouts are cut to fit
it): the upload is then not stored at all and uses no quota, and the worker and the database's lock are
free again. A write that reached a server which did not answer may still land when it resumes: it is left
``in_doubt``, and intake queues a job that deletes the object (``settle_stray``) once the server answers.
boto3 finds the credentials itself (AWS_ACCESS_KEY_ID, ...); nothing here reads, keeps or logs them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import os
import re
import time
from collections.abc import Iterator
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from app import observability, settings
from app.services.errors import StorageFailed
from app.services.storage import upload_files
from app.settings import DEFAULT_STORAGE_TIMEOUT, S3Location

log = logging.getLogger(__name__)
PAGE_SIZE = 1000  # keys a listing asks for at a time (S3's most)
# Each request's limits are cut from the budget (STORAGE_TIMEOUT), so a dead or hanging server fails an
# upload within it instead of holding a worker.
CONNECT_TIMEOUT = 3  # at most
ATTEMPTS = 2  # in all: one retry, for a dropped connection
CONTINUE_WAIT = 1  # botocore waits up to 1 s for a "100 Continue" before sending a PUT's body, in each attempt
SETTLE_SECONDS = 1.0  # between the two deletes of a stray object (settle_stray)
HASH_BLOCK = 1 << 20
KEY_NAME = re.compile(r"([0-9a-f]{2})/(\1[0-9a-f]{62})\.gz")

_clients: dict[tuple, Any] = {}


def timeouts(budget: float) -> tuple[float, float]:
    """Each attempt's (connect, read) timeouts: ATTEMPTS of them fit the budget. An upload's wait is cut at the
    budget whatever botocore does; these end the request itself soon after."""
    share = budget / ATTEMPTS
    return min(CONNECT_TIMEOUT, share), share


def stray_after(budget: float) -> float:
    """Seconds after an upload gave up on its write by which that write has ended in this process: its
    attempts' timeouts (at most the budget each, connect and read), botocore's wait for "100 Continue" in each,
    and the pause before the retry (under a second). The repair of an object in doubt waits that long."""
    return ATTEMPTS * (budget + CONTINUE_WAIT) + 2


def client_for(location: S3Location, budget: float = DEFAULT_STORAGE_TIMEOUT) -> Any:
    """This process's S3 client for the location's server and budget (botocore clients are thread-safe; a
    forked worker makes its own, as it has none of its parent's connections)."""
    key = (os.getpid(), location.endpoint_url, location.region, budget)
    found = _clients.get(key)
    if found is None:
        import boto3  # only a deployment that keeps uploads in a bucket pays for importing it
        from botocore.config import Config

        connect, read = timeouts(budget)
        config = Config(
            connect_timeout=connect,
            read_timeout=read,
            retries={"total_max_attempts": ATTEMPTS, "mode": "standard"},
            # Other S3 servers (MinIO, SeaweedFS, Ceph) serve buckets under the path, not as host names, and
            # some refuse the checksums that newer botocore adds to every request unless asked.
            s3={"addressing_style": "path"} if location.endpoint_url else {},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        found = _clients[key] = boto3.session.Session().client(
            "s3", endpoint_url=location.endpoint_url, region_name=location.region, config=config
        )
    return found


def forget_clients() -> None:
    """Make new clients on next use (the tests, after changing the credentials in the environment)."""
    _clients.clear()


def storage_failed(exc: Exception, doing: str) -> StorageFailed:
    """The answer to an S3 request that failed; counted in /metrics and remembered for /healthz. 503 (a retry
    later may succeed) except for a server that says it is full (507, as the upload folder's disk)."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    full, passing = False, True  # passing: a retry later may succeed (Retry-After)
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = exc.response.get("Error", {}).get("Code", "")
        full = status == 507 or "StorageFull" in code  # MinIO's XMinioStorageFull
        passing = isinstance(status, int) and status >= 500 and not full
        if status == 403 or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            reason = f"the S3 server refused access ({code or status})"
        else:
            reason = f"the S3 server answered {status or 'an error'} {code}".rstrip()
    elif isinstance(exc, (ConnectTimeoutError, ReadTimeoutError, TimeoutError)):
        reason = "the S3 server did not answer in time"  # TimeoutError: not within the budget (STORAGE_TIMEOUT)
    elif isinstance(exc, (EndpointConnectionError, ConnectionClosedError)):
        reason = "the S3 server cannot be reached"
    elif isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        reason, passing = "no S3 credentials are set", False
    else:
        reason = f"the S3 request failed ({type(exc).__name__})"
    observability.storage_failure("uploads", reason)
    log.error("upload storage: %s failed: %s", doing, exc)  # botocore's messages name no credential
    what = "is full" if full else f"is unavailable: {reason}"
    return StorageFailed(
        f"the server's upload storage {what}: your file was not stored and your quota is unchanged; "
        "try again later, and tell the maintainers if it persists",
        unavailable=not full,
        retry_after=upload_files.RETRY_AFTER if passing else None,
    )


def _may_have_landed(exc: BaseException) -> bool:
    """Whether a write that failed so may still have reached the server, and its object appear: not when the
    server could not be reached at all, refused the request (4xx) or no credentials were set."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, PartialCredentialsError

    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return not (isinstance(status, int) and status < 500)
    return not isinstance(exc, (EndpointConnectionError, NoCredentialsError, PartialCredentialsError))


def _s3_errors() -> tuple[type[Exception], ...]:
    from botocore.exceptions import BotoCoreError, ClientError

    return (BotoCoreError, ClientError)


def _not_found(exc: Exception) -> bool:
    """Whether the object is not there; a bucket that is not there is a failure (a setting is wrong)."""
    response = getattr(exc, "response", None) or {}
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status == 404 and response.get("Error", {}).get("Code") != "NoSuchBucket"


def compress(data: bytes) -> bytes:
    """The object's bytes: exactly the upload folder's file for the same content."""
    buffer = io.BytesIO()
    upload_files.compress_into(buffer, data)
    return buffer.getvalue()


class UploadBucket:
    """The originals under one bucket and prefix (a small handle: made for each use from the settings)."""

    def __init__(self, location: S3Location, budget: float | None = None):
        self.location = location
        self.bucket = location.bucket
        self.prefix = f"{location.prefix}/" if location.prefix else ""
        self.budget = settings.current().storage_timeout if budget is None else budget  # STORAGE_TIMEOUT

    @property
    def client(self) -> Any:
        return client_for(self.location, self.budget)

    def key_for(self, digest: str) -> str:
        return f"{self.prefix}{digest[:2]}/{digest}.gz"

    def where(self, digest: str) -> str:
        """Where the original with this sha256 is kept, for messages."""
        return f"s3://{self.bucket}/{self.key_for(digest)}"

    def digest_of(self, key: str) -> str | None:
        """The sha256 an object's key names, None for a key of another shape (left alone)."""
        found = KEY_NAME.fullmatch(key[len(self.prefix) :]) if key.startswith(self.prefix) else None
        return found.group(2) if found else None

    # --- an upload's original ---------------------------------------------------------------------------

    def keep(self, data: bytes, digest: str) -> PendingObject:
        """Start writing the upload's original in a background thread; ``wait`` for it within the budget."""
        return PendingObject(self, data, digest)

    def put(self, key: str, body: Any, md5: bytes) -> None:
        """Write ``body`` (bytes or a binary file) under ``key``; its MD5 lets the server refuse a damaged body."""
        self.client.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=body,
            ContentMD5=base64.b64encode(md5).decode("ascii"),
            ContentType="application/gzip",
        )

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except _s3_errors() as exc:
            if _not_found(exc):
                return False
            raise
        return True

    def read_original(self, digest: str) -> bytes:
        import gzip

        compressed = self.read_compressed(digest)
        if compressed is None:
            raise FileNotFoundError(f"no original upload at {self.where(digest)}")
        return gzip.decompress(compressed)

    # --- backups: the kept (compressed) bytes, one original at a time ---------------------------------

    def read_compressed(self, digest: str) -> bytes | None:
        """The object's bytes as they are (gzip); None when there is none. StorageFailed when the server fails."""
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key_for(digest))
            return response["Body"].read()
        except _s3_errors() as exc:
            if _not_found(exc):
                return None
            raise storage_failed(exc, f"reading {self.where(digest)}") from exc

    def compressed_sha256(self, digest: str) -> str | None:
        """The sha256 of the object's bytes (not of its content), None when there is none."""
        hasher = hashlib.sha256()
        try:
            # GET, not HEAD: a HEAD's 404 has no body to tell a missing object from a missing bucket.
            response = self.client.get_object(Bucket=self.bucket, Key=self.key_for(digest))
            for block in response["Body"].iter_chunks(HASH_BLOCK):
                hasher.update(block)
        except _s3_errors() as exc:
            if _not_found(exc):
                return None
            raise storage_failed(exc, f"reading {self.where(digest)}") from exc
        return hasher.hexdigest()

    def put_compressed(self, digest: str, source: str) -> None:
        """Keep the file ``source`` (a backup's copy, already checked) as the object of the original with this
        sha256 (the same bytes as any object already there: content-addressed)."""
        md5 = hashlib.md5(usedforsecurity=False)
        with open(source, "rb") as fh:
            for block in iter(lambda: fh.read(HASH_BLOCK), b""):
                md5.update(block)
            fh.seek(0)
            try:
                self.put(self.key_for(digest), fh, md5.digest())
            except _s3_errors() as exc:
                raise storage_failed(exc, f"writing {self.where(digest)}") from exc

    # --- consistency of the bucket with the database -------------------------------------------------

    def objects(self) -> Iterator[tuple[str, float]]:
        """(key, last modified as a POSIX time) of every object under the prefix, a page at a time."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix, PaginationConfig={"PageSize": PAGE_SIZE}
        )
        for page in pages:
            for item in page.get("Contents", ()):
                yield item["Key"], item["LastModified"].timestamp()

    def check(self, stored: set[str], min_age: float = upload_files.IN_FLIGHT_SECONDS) -> BucketCheck:
        """Compare the objects with ``stored``, the digests the database's stored submissions name. Streams the
        listing: beside ``stored`` it keeps only what is wrong."""
        result = BucketCheck(self.bucket)
        unseen = set(stored)
        young = time.time() - min_age
        try:
            for key, modified in self.objects():
                digest = self.digest_of(key)
                if digest is None:
                    continue
                if digest in stored:
                    unseen.discard(digest)
                elif modified > young:
                    result.in_flight.append(key)  # written, its row perhaps not committed yet
                else:
                    result.objects_without_row.append(key)
        except _s3_errors() as exc:
            raise storage_failed(exc, f"listing {self.location}") from exc
        result.rows_without_object = sorted(unseen)
        return result

    def forget_stray(self, digest: str) -> bool:
        """Delete the object of an upload that was not stored, unless a stored submission names the same
        content (another upload may share it): False when one does. Raises StorageFailed."""
        if _named_by_a_row(digest):
            return False
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key_for(digest))
        except _s3_errors() as exc:
            raise storage_failed(exc, f"deleting {self.where(digest)}") from exc
        return True

    def settle_stray(self, digest: str) -> str:
        """The repair of an upload whose write was left in doubt (a job, once ``stray_after`` has passed): its
        object deleted unless a stored submission names it, and again a moment later, in case the server,
        paused until just now, was still finishing the write it had taken before. Raises StorageFailed while
        the server does not answer (the job is tried again later)."""
        for attempt in range(2):
            if not self.forget_stray(digest):
                return f"kept {self.where(digest)}: a stored submission has this content"
            if attempt == 0:
                time.sleep(SETTLE_SECONDS)
        return f"deleted {self.where(digest)}: no stored submission has this content"

    def repair(self, found: BucketCheck) -> None:
        """Delete the objects without a row (one request each: DeleteObjects wants a checksum some servers
        refuse, and such objects are few)."""
        for key in found.objects_without_row:
            try:
                self.client.delete_object(Bucket=self.bucket, Key=key)
            except _s3_errors() as exc:
                raise storage_failed(exc, f"deleting {found.address(key)}") from exc


@dataclass
class BucketCheck:
    bucket: str
    objects_without_row: list[str] = field(default_factory=list)  # keys of objects no stored submission names
    in_flight: list[str] = field(default_factory=list)  # keys of objects without a row, too young to judge
    rows_without_object: list[str] = field(default_factory=list)  # digests of stored submissions

    @property
    def clean(self) -> bool:
        return not (self.objects_without_row or self.rows_without_object)

    def address(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def check_bucket(
    location: S3Location, delete: bool = False, min_age: float = upload_files.IN_FLIGHT_SECONDS
) -> BucketCheck:
    """``check`` against the database; with ``delete``, ``repair`` what it found. Changes only objects."""
    bucket = UploadBucket(location)
    found = bucket.check(upload_files.stored_digests(), min_age)
    if delete:
        bucket.repair(found)
    return found


class PendingObject:
    """An original being written to its final key: ``wait`` before the upload's transaction begins (raises
    StorageFailed if the server refused the write or did not confirm it within the budget), ``finish`` after
    its commit, ``discard`` when nothing was stored (then ``in_doubt`` says whether the object may still
    appear, for a repair once the server answers)."""

    def __init__(self, bucket: UploadBucket, data: bytes, digest: str):
        self.bucket = bucket
        self.digest = digest
        self.key = bucket.key_for(digest)
        self.in_doubt = False
        self._body: bytes | None = None
        # The client first (a worker's first upload imports boto3 and loads S3's model: a second or more on a busy
        # host), so that the budget is the server's alone.
        bucket.client  # noqa: B018
        self._deadline = time.monotonic() + bucket.budget
        self._future: Future = upload_files.writer_threads().submit(self._write, data)

    def _write(self, data: bytes) -> None:
        body = compress(data)
        self.bucket.put(self.key, body, hashlib.md5(body, usedforsecurity=False).digest())
        self._body = body  # kept until finish, in case the object must be written again

    def _remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def _gave_up(self) -> None:
        """The budget is spent and the write has not ended: one not begun never will (cancelled); one under
        way may still land."""
        self.in_doubt = self.in_doubt or not self._future.cancel()

    def wait(self) -> None:
        """Raises StorageFailed if the server refused the write, could not be reached or did not confirm it
        within the budget."""
        doing = f"writing {self.bucket.where(self.digest)}"
        try:
            self._future.result(timeout=self._remaining())
        except futures.TimeoutError:
            if self._future.done():  # the write's own failure, not the budget's end
                raise
            self._gave_up()
            late = TimeoutError(f"no answer within {self.bucket.budget:g} s (STORAGE_TIMEOUT)")
            raise storage_failed(late, doing) from None
        except _s3_errors() as exc:
            self.in_doubt = _may_have_landed(exc)
            raise storage_failed(exc, doing) from exc

    def finish(self) -> None:
        """After the commit: the object was confirmed before it, so this only makes sure it is still there
        (a concurrent upload of the same content whose commit failed may have deleted it in between) and
        writes it again if not. The row is stored, so a failure here is logged, not answered; `flask uploads
        check` reports a row without its object."""
        self.wait()
        body, self._body = self._body, None
        try:
            if not self.bucket.exists(self.key) and body is not None:
                self.bucket.put(self.key, body, hashlib.md5(body, usedforsecurity=False).digest())
        except _s3_errors() as exc:
            observability.storage_failure("uploads", type(exc).__name__)
            log.error("could not confirm %s after its commit (%s); `flask uploads check` will tell", self.key, exc)

    def discard(self) -> None:
        """Nothing was stored: delete the object, unless the write failed before reaching the server (then
        there is none) or a stored submission names the same content. Never raises, and waits for the write no
        longer than the rest of the budget: a write still under way then, one that failed after reaching the
        server, or a delete that failed leaves ``in_doubt`` set. The upload's own error is the answer."""
        self._body = None
        if not self._future.done():
            futures.wait([self._future], timeout=self._remaining())
            if not self._future.done():
                self._gave_up()
                return
        if self._future.cancelled():
            return
        failure = self._future.exception()
        if failure is not None:
            self.in_doubt = self.in_doubt or (isinstance(failure, _s3_errors()) and _may_have_landed(failure))
            return
        try:
            self.bucket.forget_stray(self.digest)
        except Exception as exc:  # the database or the server away: the object waits for its repair
            log.warning("could not remove %s of an upload that was not stored (%s)", self.key, exc)
            self.in_doubt = True


def _named_by_a_row(digest: str) -> bool:
    """Whether a stored submission's original has this sha256. Ends the caller's transaction first: it failed
    (or was refused) and is rolled back anyway, and on SQLite it may hold the write lock."""
    from sqlalchemy import select

    from app.db import db
    from app.models import Submission

    db.session.rollback()
    named = db.session.scalar(
        select(Submission.id).where(Submission.file_sha256 == digest, Submission.status == "scored").limit(1)
    )
    db.session.rollback()
    return named is not None
