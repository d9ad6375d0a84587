"""Whole-document JSON files (VQA v2, GQA and A-OKVQA results and gold files): bounds checked before parsing,
and every entry placed on its line for a refusal.

A JSON document is parsed whole (the official formats are one array or one object), so what it may cost is
checked first, in C-level scans that allocate nothing: the bytes (read_text), then an upper bound on the
values it holds (every value after the first in an array or object follows a comma, every container opens
with a bracket), so a 50 MB file of empty objects or numbers is refused before a Python object is made.

A refusal costs time linear in the file: the entries' lines are found in one pass (entry_lines), only the problems
shown are put in words (ProblemList.add_lines), and a gold reader stops looking after MAX_GOLD_PROBLEMS. Text that
no UTF-8 can hold, a lone surrogate written as an escape ("\\ud800"), is refused naming its line (check_unicode).
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .errors import ProblemList, ValidationError, at
from .text_files import check_text, read_text, show

# Problems a gold file's reader gathers before it stops looking: a file with millions of bad entries is refused
# for the price of its first ones (and a listing shows the first errors.MAX_PROBLEMS).
MAX_GOLD_PROBLEMS = 1000
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace, skipped in one C-level match
# An integer past int()'s limit on digits (sys.get_int_max_str_digits(), 4,300 by default; a fraction or an
# exponent makes a float, which has none): json.loads refuses it with a ValueError that says not where.
_MAX_DIGITS = sys.get_int_max_str_digits() or 4300
_LONG_INTEGER = re.compile(rb"(?<![.0-9])[0-9]{%d,}(?![.0-9eE])" % (_MAX_DIGITS + 1))
# Where a lone surrogate may be: an escape of one (a pair, two escapes, is a valid character).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_HIGH = rb"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
# A lone one (an even run of backslashes before it: an escaped backslash is no escape): a high surrogate not
# followed by a low one, or a low one not after a high one. Only to name the line: check_unicode decides.
_LONE_SURROGATE = re.compile(rb"(?<!\\)(?:\\\\)*(" + _HIGH + rb"(?!" + _LOW + rb")|(?<!" + _HIGH + rb")" + _LOW + rb")")


_TYPE_NAMES = {
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


INVALID = object()  # what json_line gives for a line that is not JSON (its problem added)


def json_line(raw: bytes | str, number: int, problems: ProblemList) -> Any:
    """One JSON-lines line's value; INVALID, with the line's problem added in the words every reader gives, for a
    line that is not JSON (or nests too deep)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        problems.add(at(number, f"invalid JSON ({exc.msg} at column {exc.colno})"))
    except (ValueError, RecursionError):
        problems.add(at(number, "invalid JSON"))
    return INVALID


def json_type(value: object) -> str:
    """What a parsed JSON value is, in JSON's own words, for every family's messages ("found an array")."""
    return "null" if value is None else _TYPE_NAMES.get(type(value), type(value).__name__)


def value_bound(data: bytes) -> int:
    """An upper bound on the JSON values (scalars, arrays and objects, keys not counted) ``data`` holds."""
    return data.count(b",") + data.count(b"{") + data.count(b"[") + 1


def load(
    data: bytes,
    *,
    max_bytes: int | None = None,
    max_values: int | None = None,
    what: str = "file",
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """The parsed document; ValidationError naming the line of a syntax error, or why the file is refused.

    ``object_pairs_hook``: as json.loads's, called for every object, innermost first (the document's own object
    last), e.g. to see keys an object repeats (json.loads keeps the last)."""
    text = read_text(data, max_bytes)
    if max_values is not None and value_bound(text) > max_values:
        raise ValidationError(
            f"the {what} holds more JSON values than a valid one for this split can "
            f"(at most {max_values:,}: one entry per expected item with its fields)"
        )
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise ValidationError(at(exc.lineno, f"invalid JSON ({exc.msg} at column {exc.colno})")) from None
    except ValueError as exc:
        too_long = "digits" in str(exc)  # "Exceeds the limit (4300 digits) for integer string conversion"
    except (RecursionError, UnicodeDecodeError):
        too_long = False
    number = _LONG_INTEGER.search(text) if too_long else None
    if number is not None:
        raise ValidationError(
            at(
                text.count(b"\n", 0, number.start()) + 1,
                f"an integer of {number.end() - number.start():,} digits; at most {_MAX_DIGITS:,} can be read",
            )
        )
    raise ValidationError(f"the {what} is not valid JSON (nested too deeply or malformed)")


class NotStreamable(Exception):
    """stream_array could not walk the file as a plain well-formed document: read it whole with load, whose
    refusals name the problem."""


class _Window:
    """A document's text decoded a chunk at a time: ``text`` holds what is left from a position on, so that a
    VQA-size annotations file (350 MB) is never decoded whole beside its bytes."""

    def __init__(self, data: bytes, start: int, chunk: int):
        self._view = memoryview(data)[start:]
        self._offset = 0
        self._chunk = chunk
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.eof = False

    def more(self, position: int) -> int:
        """Drop the text before ``position`` and decode the next chunk; the position in the new text (0)."""
        piece = self._view[self._offset : self._offset + self._chunk]
        self._offset += len(piece)
        self.eof = self._offset >= len(self._view)
        self.text = self.text[position:] + self._decoder.decode(piece, final=self.eof)
        return 0

    def skip(self, position: int) -> int:
        """The position of the next character that is not whitespace (len(text) only at the end of the file)."""
        while True:
            position = _skip(self.text, position)
            if position < len(self.text) or self.eof:
                return position
            position = self.more(position)

    def starts(self, prefix: str, position: int) -> tuple[bool, int]:
        """Whether the text at ``position`` (after whitespace) starts with ``prefix``, and that position."""
        position = self.skip(position)
        return self.text.startswith(prefix, position), position

    def value(self, position: int) -> tuple[Any, int]:
        """The JSON value at ``position``; a value running to the window's end is decoded again with more text (a
        number cut in two would otherwise read as its first digits)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, position)
                if end < len(self.text) or self.eof:
                    return value, end
            except ValueError:
                if self.eof:
                    raise
            position = self.more(position)


STREAM_CHUNK = 1 << 20  # bytes decoded at a time by stream_array


def stream_array(data: bytes, key: str, chunk: int = STREAM_CHUNK) -> Iterator[Any]:
    """The elements of the array under ``key`` in a JSON object, parsed one at a time, so that a large gold file
    (VQA v2's annotations: 2 million answer objects) never sits parsed whole in memory beside what is made of
    it, nor its text decoded whole (``chunk`` bytes at a time). Only for a plain, well-formed document: anything
    else (a syntax error, a repeated key, a surrogate escape, no such array) raises NotStreamable, and the
    caller reads the file with ``load`` instead."""
    if _SURROGATE_ESCAPE.search(data) is not None:
        raise NotStreamable("surrogate escapes: load checks them")
    window = _Window(data, check_text(data), chunk)
    try:
        opened, position = window.starts("{", 0)
        if not opened:
            raise NotStreamable("not an object")
        position = window.skip(position + 1)
        found = False
        while not window.text.startswith("}", position):
            name, position = window.value(position)
            colon, position = window.starts(":", position)
            if not isinstance(name, str) or not colon:
                raise NotStreamable("not a key")
            position = window.skip(position + 1)
            if name == key:
                if found or not window.text.startswith("[", position):
                    raise NotStreamable("the key repeated, or not an array")
                found = True
                position = window.skip(position + 1)
                while not window.text.startswith("]", position):
                    item, position = window.value(position)
                    yield item
                    del item
                    comma, position = window.starts(",", position)
                    if comma:
                        position = window.skip(position + 1)
                    elif not window.text.startswith("]", position):
                        raise NotStreamable("no comma between elements")
                position += 1
            else:
                _, position = window.value(position)
            comma, position = window.starts(",", position)
            if comma:
                position = window.skip(position + 1)
            elif not window.text.startswith("}", position):
                raise NotStreamable("no comma between keys")
        if not found or window.skip(position + 1) != len(window.text):
            raise NotStreamable("no such array, or text after the document")
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; long integers raise one too
        raise NotStreamable(str(exc)) from None


def check_unicode(data: bytes, document: Any, what: str = "file") -> None:
    """ValidationError naming the line of a lone surrogate in ``document`` (parsed from ``data``): JSON's escapes
    can write one ("\\ud800"), and no UTF-8 text, no text hash and no database column can hold it.

    Free for a file without a surrogate escape; one with escapes is encoded whole once, and only a lone one
    costs a scan for its line."""
    if _SURROGATE_ESCAPE.search(data) is None:
        return
    lone = _LONE_SURROGATE.search(data)
    try:
        json.dumps(document, ensure_ascii=False, check_circular=False).encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    except RecursionError:  # deeper than the encoder goes: the scan decides alone
        if lone is None:
            return
    message = "text that is not valid Unicode: a lone surrogate escape"
    if lone is None:
        raise ValidationError(f"the {what} holds {message}; write the text as UTF-8")
    escape = lone.group(1).decode("ascii")
    raise ValidationError(at(data.count(b"\n", 0, lone.start(1)) + 1, f"{message} ({escape}); write the text as UTF-8"))


def entry_lines(data: bytes, limit: int | None = None) -> list[int]:
    """The line each top-level entry of a JSON array (or each key of a JSON object) starts on, in order.

    Only for refusals: a second pass over the text, one entry at a time (the fast parse keeps no positions),
    linear in the text: whitespace is skipped by a regex and the newlines are counted from the previous entry on.
    ``limit``: at most this many entries (the first)."""
    return _entry_keys_and_lines(data, limit)[1]


def key_lines(data: bytes, limit: int) -> tuple[list[str], list[int]]:
    """The keys of the first ``limit`` entries of a JSON object, as written (a repeated key twice), and the line
    each starts on: where the keys are those of the parsed object, in order, no key repeated before them and its
    i-th entry is the file's i-th."""
    keys, lines = _entry_keys_and_lines(data, limit)
    return [str(key) for key in keys], lines


def _entry_keys_and_lines(data: bytes, limit: int | None) -> tuple[list[Any], list[int]]:
    text = read_text(data).decode("utf-8")
    keys: list[Any] = []
    lines: list[int] = []
    line, counted = 1, 0
    for offset, key in _entry_offsets(text):
        if limit is not None and len(lines) >= limit:
            break
        line += text.count("\n", counted, offset)
        counted = offset
        keys.append(key)
        lines.append(line)
    return keys, lines


def _entry_offsets(text: str) -> Iterator[tuple[int, Any]]:
    """(offset, key: None in an array) of each top-level entry."""
    position = _skip(text, 0)
    if position >= len(text) or text[position] not in "[{":
        return
    is_object = text[position] == "{"
    position = _skip(text, position + 1)
    while position < len(text) and text[position] not in "]}":
        start, key = position, None
        if is_object:
            key, position = _DECODER.raw_decode(text, position)
            position = _skip(text, position)
            position = _skip(text, position + 1)  # the colon
        yield start, key
        _, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if position < len(text) and text[position] == ",":
            position = _skip(text, position + 1)


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match is not None else position


_MISSING_SHOWN = 10


def entry_problems(
    problems: ProblemList,
    positions: np.ndarray,
    size: int,
    lines: np.ndarray,
    names: Sequence[str] | np.ndarray,
    name_of: Callable[[int], str],
    what: str,
) -> None:
    """Unknown, duplicate and missing identifiers of a JSON file's entries, each named with its entry and line.

    positions: each entry's row in the gold order (-1: not in the gold); lines and names: each entry's line and
    identifier as written; name_of(row): a gold identifier, for the missing ones."""
    positions = np.asarray(positions, dtype=np.int64)
    unknown = np.flatnonzero(positions < 0)
    problems.add_lines(lines, unknown, lambda entry: f"entry {entry + 1:,}: unknown {what} {show(names[entry])}")
    if unknown.size and size:
        problems.hint(f"{what}s look like {name_of(0)}")
    known = np.flatnonzero(positions >= 0)
    first: dict[int, int] = {}
    repeated: list[int] = []
    if np.bincount(positions[known], minlength=size).max(initial=0) > 1:
        for entry in known.tolist():
            if first.setdefault(int(positions[entry]), entry) != entry:
                repeated.append(entry)

    def duplicate(entry: int) -> str:
        earlier = first[int(positions[entry])]
        return (
            f"entry {entry + 1:,}: duplicate {what} {show(names[entry])} "
            f"(first at entry {earlier + 1:,}, line {int(lines[earlier])})"
        )

    problems.add_lines(lines, np.asarray(repeated, dtype=np.int64), duplicate)
    counts = np.bincount(positions[known], minlength=size)
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        shown = ", ".join(show(name_of(int(row))) for row in missing[:_MISSING_SHOWN])
        more = f" and {missing.size - _MISSING_SHOWN:,} more" if missing.size > _MISSING_SHOWN else ""
        plural = "s" if missing.size != 1 else ""
        problems.add(f"missing predictions for {missing.size:,} {what}{plural} of {size:,}: {shown}{more}")
