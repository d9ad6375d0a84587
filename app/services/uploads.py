"""Original upload files, kept gzip-compressed and named by their sha256 (content-addressed, so idempotent)."""
from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from pathlib import Path

from flask import current_app


def uploads_dir() -> Path:
    return Path(current_app.config["SUBMISSIONS_DIR"])


def path_for(digest: str) -> Path:
    return uploads_dir() / digest[:2] / f"{digest}.gz"


def keep_original(data: bytes) -> str:
    """Write the upload (if not already there) and return its sha256."""
    digest = hashlib.sha256(data).hexdigest()
    target = path_for(digest)
    if target.exists():
        return digest
    target.parent.mkdir(parents=True, exist_ok=True)
    # A unique temporary name: two threads or processes may store the same file at the same moment.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{digest[:12]}-", suffix=".tmp")
    try:
        # Level 1: a prediction CSV shrinks ~4.4x instead of ~6x, in a third of the time (inside the upload).
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return digest


def read_original(digest: str) -> bytes:
    with gzip.open(path_for(digest), "rb") as fh:
        return fh.read()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
