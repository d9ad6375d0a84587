"""Files the tests write: any bytes under a name, and JSON-lines bodies (gold files)."""

from __future__ import annotations

import json
from pathlib import Path


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def jsonl(records, end: bytes = b"") -> bytes:
    """One JSON object a line, joined by newlines; `end` follows the last line."""
    return b"\n".join(json.dumps(record).encode() for record in records) + end
