"""The checksum every stored file is recorded and verified by: uploads, gold files, identifier files."""

from __future__ import annotations

import hashlib


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
