"""Uploaded text files: the checks every one passes before its lines are read (size, binary content, UTF-8,
byte-order mark, emptiness), and how a value from a file is quoted in a message.

Prediction files, gold files, annotation files and identifier lists all go through ``read_text``.
"""

from __future__ import annotations

import codecs

from .errors import ValidationError, at

BOM = b"\xef\xbb\xbf"
_UTF8_CHUNK = 1 << 20


def show(value: object, limit: int = 60) -> str:
    """A value quoted for a message, shortened so that one absurd cell cannot flood the page."""
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.2f} MB ({size:,} bytes)"


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _check_utf8(data: bytes) -> None:
    """Raise on the first invalid UTF-8 byte without building the file's text (one str of a 50 MB file
    would cost 50 to 200 MB): ASCII files pass in one C scan, others are decoded a chunk at a time."""
    if data.isascii():
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for offset in range(0, len(data), _UTF8_CHUNK):
        chunk = view[offset : offset + _UTF8_CHUNK]
        try:
            decoder.decode(chunk, final=offset + len(chunk) >= len(data))
        except UnicodeDecodeError as exc:
            # exc.object is what the decoder held back from the previous chunk (a character's first
            # bytes), then this chunk.
            bad = offset + exc.start - (len(exc.object) - len(chunk))
            raise ValidationError(
                at(_line_at(data, bad), f"not valid UTF-8 (byte 0x{data[bad]:02x}); save the file as UTF-8")
            ) from None


def _blank(data: bytes, start: int) -> bool:
    """Whether ``data[start:]`` is only whitespace, looked at a chunk at a time (``strip`` would copy the file)."""
    return all(data[offset : offset + _UTF8_CHUNK].isspace() for offset in range(start, len(data), _UTF8_CHUNK))


def check_text(data: bytes, max_bytes: int | None = None, max_lines: int | None = None) -> int:
    """The checks every uploaded text file passes first; returns the offset its text starts at: after a
    byte-order mark, else 0 (the BOM is not a line, so line numbers are unchanged).

    Each is one C-level scan that allocates nothing in proportion to the file (the file is never copied),
    so a hostile file is refused for the price of reading it. ``max_lines``: more physical lines than this
    cannot be valid.
    """
    if not isinstance(data, bytes):
        raise ValidationError(f"expected the file's bytes, got {type(data).__name__}")
    if max_bytes is not None and len(data) > max_bytes:
        raise ValidationError(f"file is too large: {_megabytes(len(data))}; the limit is {_megabytes(max_bytes)}")
    start = len(BOM) if data.startswith(BOM) else 0
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ValidationError(
            at(
                _line_at(data, nul),
                "binary content (NUL byte); upload a plain UTF-8 text file, not a spreadsheet or archive",
            )
        )
    if max_lines is not None:
        lines = data.count(b"\n") + (not data.endswith(b"\n"))
        if lines > max_lines:
            raise ValidationError(
                at(
                    max_lines + 1,
                    f"too many lines: the file has {lines:,}, and a valid file for this split has at most "
                    f"{max_lines:,} (one line per prediction, a header, and as many blank lines)",
                )
            )
    _check_utf8(data)
    if _blank(data, start):
        raise ValidationError("file is empty")
    return start


def read_text(data: bytes, max_bytes: int | None = None, max_lines: int | None = None) -> bytes:
    """``check_text``, then the bytes without a byte-order mark (a copy only when there is one)."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    start = check_text(data, max_bytes, max_lines)
    return data[start:] if start else data
