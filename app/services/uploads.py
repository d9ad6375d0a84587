"""Original upload files, kept gzip-compressed and named by their sha256 (content-addressed, so idempotent)."""
from __future__ import annotations

import gzip
import hashlib
import os
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
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as fh:
        fh.write(data)
    os.replace(tmp, target)
    return digest


def read_original(digest: str) -> bytes:
    with gzip.open(path_for(digest), "rb") as fh:
        return fh.read()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
