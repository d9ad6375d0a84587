"""Reading a bundle: a folder, or a .zip of it, to a checked Bundle and its files' contents.

Every problem of an honest mistake is collected in one pass (the YAML's schema problems, by line, then every
file's), each named by its key path and line. A hostile input is refused at its first sign, before anything
else is read, and cheaply: benchmark.yaml is read to MAX_YAML_BYTES + 1 at most; YAML's anchors, aliases, tags
and merge keys are refused at the event level, before any node is built (an exponential alias bomb costs one
event); file paths, symlinks, sizes, gzip and zip entries are checked before a byte is decompressed.

The YAML is read with YAML 1.2's core schema (true/false, null, integers, floats, everything else text), not
PyYAML's 1.1 one: `open: yes` is the text "yes" (and refused), `1:20` is not 80, a date stays text until the
model reads it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from .model import FILE_KEYS, Bundle, FileRef, shown

YAML_NAME = "benchmark.yaml"
MAX_YAML_BYTES = 1024 * 1024
MAX_FILE_BYTES = 1024**3  # a file's content (a .gz's once decompressed), and a .zip's whole uncompressed size
MAX_RATIO = 100  # a .gz's or a zip entry's content at most this many times its stored size ...
RATIO_SLACK = 1024 * 1024  # ... beyond the first MiB (small, repetitive files compress very well)
MAX_ZIP_ENTRIES = 10_000
MAX_DEPTH = 32  # nesting of the YAML (the format needs 6)
CHUNK = 1024 * 1024
_Loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # libyaml's parser when PyYAML was built with it

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One problem of a bundle: the key path (`splits[2].policy.per_day`; "" for the file as a whole), the line of
    benchmark.yaml it is on (None: no line), and what is wrong in plain words."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f" ({YAML_NAME}:{self.line})" if self.line is not None else ""
        return f"{self.path or YAML_NAME}: {self.message}{where}"


class BundleError(Exception):
    """A bundle that cannot be read: every problem found, in the order of the file."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(problem) for problem in problems))


@dataclass(frozen=True)
class LoadedBundle:
    """A bundle read and checked: its model, each named file's content (a `.gz` decompressed, after its
    sha256 matched the stored bytes), by the name benchmark.yaml gives it, and benchmark.yaml's bytes."""

    bundle: Bundle
    files: dict[str, bytes]
    yaml_bytes: bytes


class _Refused(Exception):
    """A file (or the whole input) refused: the words of the problem, and its line of benchmark.yaml if any."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def path_text(path: KeyPath) -> str:
    """A key path in words: splits[2].policy.per_day (an odd key quoted: scores["a b"])."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part, ensure_ascii=False)}]"
    return text


# --- YAML: events to values, with the line of every key ---------------------------------------------------

_NULL = re.compile(r"null|Null|NULL|~|")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+")
_OCT = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")
_NAN = re.compile(r"\.(nan|NaN|NAN)")


def resolve_plain(text: str) -> Any:
    """A plain (unquoted) scalar as YAML 1.2's core schema reads it."""
    if _NULL.fullmatch(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    try:
        if _INT.fullmatch(text):
            return int(text)
        if _OCT.fullmatch(text):
            return int(text[2:], 8)
        if _HEX.fullmatch(text):
            return int(text[2:], 16)
    except ValueError:  # more digits than Python turns into an int: text, refused where a number is expected
        return text
    if _FLOAT.fullmatch(text):
        return float(text)
    if _INF.fullmatch(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.fullmatch(text):
        return float("nan")
    return text


@dataclass
class _Frame:
    value: dict[str, Any] | list[Any]
    path: KeyPath
    key: str | None = None
    key_line: int = 0


@dataclass
class _Composed:
    value: Any = None
    lines: dict[KeyPath, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def compose(text: str) -> _Composed:
    """The YAML's one document as Python values (dicts, lists, str, int, float, bool, None), the line of every
    key path (a mapping's key: the key's line; a list item: where it starts), and its duplicate keys.
    _Refused: a YAML error, or anything hostile (an anchor, alias, tag or merge key, deep nesting, a second
    document), at its first event."""
    out = _Composed()
    stack: list[_Frame] = []
    documents = 0
    done = False

    def refuse(event: Any, words: str) -> _Refused:
        return _Refused(words, event.start_mark.line + 1)

    def place(value: Any, line: int, event: Any) -> KeyPath | None:
        """Put a node into its parent; its path (None: it was a mapping's key)."""
        nonlocal done
        if not stack:
            out.value, done = value, True
            out.lines[()] = line
            return ()
        frame = stack[-1]
        if isinstance(frame.value, list):
            path = (*frame.path, len(frame.value))
            frame.value.append(value)
            out.lines[path] = line
            return path
        if frame.key is None:
            if not isinstance(value, str):
                raise refuse(event, "a mapping's key must be text, not a list or a mapping")
            if value in frame.value:
                where = path_text((*frame.path, value))
                out.problems.append(Problem(where, line, f"the key {shown(value)} appears twice in this mapping"))
            frame.key, frame.key_line = value, line
            return None
        path = (*frame.path, frame.key)
        frame.value[frame.key] = value
        out.lines[path] = frame.key_line
        frame.key = None
        return path

    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise refuse(event, "more than one YAML document (---): a bundle's file holds one")
                continue
            if isinstance(event, yaml.StreamStartEvent | yaml.StreamEndEvent | yaml.DocumentEndEvent):
                continue
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise refuse(event, "YAML anchors and aliases (& and *) are not allowed: write each value out")
            if getattr(event, "tag", None) is not None:
                raise refuse(event, f"YAML tags ({event.tag}) are not allowed: write plain values")
            line = event.start_mark.line + 1
            if isinstance(event, yaml.ScalarEvent):
                is_key = bool(stack) and isinstance(stack[-1].value, dict) and stack[-1].key is None
                if is_key and event.implicit[0] and event.value == "<<":
                    raise refuse(event, "YAML merge keys (<<) are not allowed: write each key out")
                # A key is its text, whatever it looks like; a plain value is read as YAML 1.2's core schema says.
                place(event.value if is_key or not event.implicit[0] else resolve_plain(event.value), line, event)
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise refuse(event, f"nested more than {MAX_DEPTH} levels deep")
                container: dict[str, Any] | list[Any] = {} if isinstance(event, yaml.MappingStartEvent) else []
                path = place(container, line, event)
                if path is None:
                    raise refuse(event, "a mapping's key must be text, not a list or a mapping")
                stack.append(_Frame(container, path))
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                stack.pop()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise _Refused(f"not valid YAML: {exc.problem or exc.context}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise _Refused(f"not valid YAML: {exc}") from None
    if not done:
        raise _Refused("the file is empty: a bundle's benchmark.yaml describes a benchmark")
    return out


def _line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """The line of a key path; for a key that is missing, its nearest parent's."""
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)


# --- the schema's problems in plain words ------------------------------------------------------------------


def _model_at(path: KeyPath) -> type[BaseModel] | None:
    """The model class a key path inside benchmark.yaml leads to (None: not a model)."""
    model: type[BaseModel] | None = Bundle
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        info = model.model_fields.get(part)
        model = _model_in(info.annotation) if info is not None else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def _words(error: Any, path: KeyPath) -> str:
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind in ("bundle_value", "bundle_rule"):
        return str(ctx["message"])
    if kind == "missing":
        return "required, but missing"
    if kind == "extra_forbidden":
        model = _model_at(path[:-1])
        known = f" (expected one of: {', '.join(model.model_fields)})" if model is not None else ""
        return f"unknown key{known}"
    expected = {
        "bool_type": "true or false",
        "int_type": "an integer",
        "float_type": "a number",
        "string_type": "text",
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
        "dict_type": "a mapping",
        "list_type": "a list",
    }.get(kind)
    if expected is not None:
        return f"expected {expected}, got {shown(value)}"
    if kind == "literal_error":
        return f"expected {str(ctx.get('expected', '')).replace(chr(39), chr(34))}, got {shown(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_too_long":
        return f"longer than {ctx.get('max_length')} characters"
    if kind == "too_short":
        return "must hold at least one entry"
    if kind == "too_long":
        return f"must hold at most {ctx.get('max_length')} entries, got {ctx.get('actual_length')}"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    return str(error["msg"])


def schema_problems(exc: PydanticError, lines: dict[KeyPath, int]) -> list[Problem]:
    """A validation error of the model as problems, each with its key path and line, in the file's order."""
    problems: list[Problem] = []
    for error in exc.errors():
        path: KeyPath = tuple(part for part in error["loc"] if isinstance(part, str | int))
        if error["type"] == "bundle_rule":
            for inner, words in error["ctx"]["problems"]:
                full = (*path, *inner)
                problems.append(Problem(path_text(full), _line_of(lines, full), words))
            continue
        problems.append(Problem(path_text(path), _line_of(lines, path), _words(error, path)))
    return sorted(problems, key=lambda problem: problem.line if problem.line is not None else 0)


# --- the sources: a folder, a .zip ---------------------------------------------------------------------------


def _read_at_most(handle: Any, limit: int) -> bytes | None:
    """A binary file's bytes, read in chunks (a lying size cannot make one huge read); None as soon as there are
    more than `limit` (what was read is let go, never joined)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = handle.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None


def _size_words(size: int) -> str:
    if size >= 1024**3 and size % 1024**3 == 0:
        return f"{size // 1024**3} GiB"
    if size >= 1024**2 and size % 1024**2 == 0:
        return f"{size // 1024**2} MiB"
    return f"{size:,} bytes"


class _Source:
    """Where a bundle's files are read from (a folder, a .zip): benchmark.yaml under its own cap, the files it
    names under the bundle's; each source says how it opens one (`_open`)."""

    limit: int

    def _open(self, name: str, limit: int, what: str = "") -> bytes:
        raise NotImplementedError

    def yaml(self) -> bytes:
        return self._open(YAML_NAME, MAX_YAML_BYTES, "the file")

    def file(self, name: str) -> bytes:
        return self._open(name, self.limit)


class _Folder(_Source):
    """A bundle folder on disk: nothing outside it is read, no symlink followed, nothing but regular files."""

    def __init__(self, root: Path, limit: int) -> None:
        self.root, self.limit = root, limit
        if not root.is_dir():
            raise _Refused(f"{root} is not a folder")

    def _open(self, name: str, limit: int, what: str = "") -> bytes:
        what = what or shown(name)
        current = self.root
        parts = name.split("/")
        for index, part in enumerate(parts):
            current = current / part
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                raise _Refused(f"{what} is missing from the bundle") from None
            except OSError as exc:
                raise _Refused(f"{what} cannot be read: {exc.strerror}") from None
            if stat.S_ISLNK(info.st_mode):
                raise _Refused(f"{what} is or passes through a symbolic link: refused")
            last = index == len(parts) - 1
            if not last and not stat.S_ISDIR(info.st_mode):
                raise _Refused(f"{what} is missing from the bundle ({part} is not a folder)")
            if last and not stat.S_ISREG(info.st_mode):
                raise _Refused(f"{what} is not a regular file")
        if not os.path.realpath(current).startswith(os.path.realpath(self.root) + os.sep):
            raise _Refused(f"{what} resolves outside the bundle folder")
        if info.st_size > limit:
            raise _Refused(f"{what} is over {_size_words(limit)} ({info.st_size:,} bytes)")
        try:
            descriptor = os.open(current, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise _Refused(f"{what} cannot be read: {exc.strerror}") from None
        with os.fdopen(descriptor, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
                raise _Refused(f"{what} changed while it was read")
            data = _read_at_most(handle, limit)
        if data is None:
            raise _Refused(f"{what} is over {_size_words(limit)}")
        return data


class _Zip(_Source):
    """A .zip of a bundle folder (benchmark.yaml at its root or in its one top folder). Its entries are checked
    as a whole before any is read: names, kinds, encryption, count, sizes and compression ratios."""

    def __init__(self, data: bytes, limit: int) -> None:
        self.limit = limit
        try:
            self.archive = zipfile.ZipFile(io.BytesIO(data))
            entries = self.archive.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise _Refused(f"not a valid .zip file ({exc})") from None
        if len(entries) > MAX_ZIP_ENTRIES:
            raise _Refused(f"the .zip holds {len(entries):,} entries, over the limit of {MAX_ZIP_ENTRIES:,}")
        self.entries: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for entry in entries:
            name = entry.filename
            parts = name.rstrip("/").split("/")
            if (
                not name
                or name.startswith("/")
                or "\\" in name
                or "\x00" in name
                or re.match(r"[A-Za-z]:", name)
                or any(part in ("", ".", "..") for part in parts)
            ):
                raise _Refused(f"the .zip entry {shown(name)} is not a plain relative path: refused")
            kind = stat.S_IFMT(entry.external_attr >> 16)
            if kind == stat.S_IFLNK:
                raise _Refused(f"the .zip entry {shown(name)} is a symbolic link: refused")
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise _Refused(f"the .zip entry {shown(name)} is not a regular file or a folder: refused")
            if entry.flag_bits & 0x1:
                raise _Refused(f"the .zip entry {shown(name)} is encrypted: refused")
            if name.rstrip("/") in self.entries:
                raise _Refused(f"the .zip holds {shown(name.rstrip('/'))} twice: refused")
            if entry.file_size > MAX_RATIO * entry.compress_size + RATIO_SLACK:
                raise _Refused(
                    f"the .zip entry {shown(name)} expands {entry.file_size:,} bytes from {entry.compress_size:,} "
                    f"(over {MAX_RATIO} times): refused as a compression bomb"
                )
            total += entry.file_size
            if total > limit:
                raise _Refused(f"the .zip's files add up to over {_size_words(limit)} uncompressed: refused")
            self.entries[name.rstrip("/")] = entry
        if YAML_NAME in self.entries:
            self.prefix = ""
        else:
            # macOS's archiver adds a __MACOSX folder of resource forks beside the one it was asked for.
            tops = {name.split("/")[0] for name in self.entries} - {"__MACOSX"}
            top = next(iter(tops)) if len(tops) == 1 else ""
            if not top or f"{top}/{YAML_NAME}" not in self.entries:
                raise _Refused(f"the .zip holds no {YAML_NAME} at its root or in one top folder")
            self.prefix = top + "/"

    def _open(self, name: str, limit: int, what: str = "") -> bytes:
        what = what or shown(name)
        entry = self.entries.get(self.prefix + name)
        if entry is None:
            raise _Refused(f"{what} is missing from the bundle")
        if entry.is_dir():
            raise _Refused(f"{what} is not a regular file")
        if entry.file_size > limit:
            raise _Refused(f"{what} is over {_size_words(limit)} ({entry.file_size:,} bytes)")
        try:
            with self.archive.open(entry) as handle:
                data = _read_at_most(handle, limit)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:
            raise _Refused(f"{what} cannot be read from the .zip ({exc})") from None
        if data is None:
            raise _Refused(f"{what} is over {_size_words(limit)}")
        return data


def _gunzip(name: str, data: bytes, limit: int) -> bytes:
    """A .gz's content, decompressed a chunk at a time: refused past `limit` or MAX_RATIO times its size."""
    bound = min(limit, MAX_RATIO * len(data) + RATIO_SLACK)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            content = _read_at_most(handle, bound)
    except (OSError, EOFError, zlib.error) as exc:
        raise _Refused(f"{shown(name)} is not a valid gzip file ({exc})") from None
    if content is None:
        if bound == limit:
            raise _Refused(f"{shown(name)} decompresses to over {_size_words(limit)}")
        raise _Refused(
            f"{shown(name)} expands over {MAX_RATIO} times its {len(data):,} bytes: refused as a compression bomb"
        )
    return content


# --- reading ------------------------------------------------------------------------------------------------


def _raw_refs(raw: Any) -> Iterator[tuple[KeyPath, Any]]:
    """The file references of benchmark.yaml's values as read, before (or whatever) the model says of them."""
    splits = raw.get("splits") if isinstance(raw, dict) else None
    for index, split in enumerate(splits if isinstance(splits, list) else []):
        if not isinstance(split, dict):
            continue
        for key in FILE_KEYS:
            if split.get(key) is not None:
                yield ("splits", index, key), split[key]
        subsets = split.get("subsets")
        for position, subset in enumerate(subsets if isinstance(subsets, list) else []):
            if isinstance(subset, dict) and subset.get("ids") is not None:
                yield ("splits", index, "subsets", position, "ids"), subset["ids"]


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _Refused(f"not UTF-8 text: byte 0x{data[exc.start]:02x}", line) from None


def _read(open_source: Callable[[], _Folder | _Zip], limit: int) -> LoadedBundle:
    try:
        source = open_source()
        yaml_bytes = source.yaml()
        if len(yaml_bytes) > MAX_YAML_BYTES:
            raise _Refused(f"over {_size_words(MAX_YAML_BYTES)}")
        composed = compose(_decode(yaml_bytes))
    except _Refused as exc:
        raise BundleError([Problem("", exc.line, str(exc))]) from None
    if not isinstance(composed.value, dict):
        raise BundleError(
            [Problem("", 1, f"expected a mapping of keys (format, slug, ...), got {shown(composed.value)}")]
        )
    problems = list(composed.problems)
    bundle: Bundle | None = None
    try:
        bundle = Bundle.model_validate(composed.value)
    except PydanticError as exc:
        problems += schema_problems(exc, composed.lines)
    problems.sort(key=lambda problem: problem.line if problem.line is not None else 0)
    files: dict[str, bytes] = {}
    # Each file read, hashed and decompressed once, however many keys name it.
    read: dict[str, tuple[bytes, str] | _Refused] = {}
    unpacked: dict[str, bytes | _Refused] = {}
    for path, raw in _raw_refs(composed.value):
        try:
            ref = FileRef.model_validate(raw)
        except PydanticError:
            continue  # said above, among the schema's problems
        if ref.file not in read:
            try:
                stored = source.file(ref.file)
                read[ref.file] = (stored, hashlib.sha256(stored).hexdigest())
            except _Refused as exc:
                read[ref.file] = exc
        found = read[ref.file]
        file_key, sha_key = (*path, "file"), (*path, "sha256")
        if isinstance(found, _Refused):
            problems.append(Problem(path_text(file_key), _line_of(composed.lines, file_key), str(found)))
            continue
        stored, digest = found
        if digest != ref.sha256:
            problems.append(
                Problem(
                    path_text(sha_key),
                    _line_of(composed.lines, sha_key),
                    f"{shown(ref.file)} has sha256 {digest[:12]}…, benchmark.yaml says {ref.sha256[:12]}…",
                )
            )
            continue
        if ref.file not in unpacked:
            try:
                unpacked[ref.file] = _gunzip(ref.file, stored, limit) if ref.file.endswith(".gz") else stored
            except _Refused as exc:
                unpacked[ref.file] = exc
        content = unpacked[ref.file]
        if isinstance(content, _Refused):
            problems.append(Problem(path_text(file_key), _line_of(composed.lines, file_key), str(content)))
        else:
            files[ref.file] = content
    if problems or bundle is None:
        raise BundleError(problems)
    return LoadedBundle(bundle=bundle, files=files, yaml_bytes=yaml_bytes)


def read_bundle(folder: Path, *, max_file_bytes: int = MAX_FILE_BYTES) -> LoadedBundle:
    """A bundle folder read and checked; BundleError with every problem found otherwise."""
    return _read(lambda: _Folder(Path(folder), max_file_bytes), max_file_bytes)


def read_bundle_zip(data: bytes, *, max_file_bytes: int = MAX_FILE_BYTES) -> LoadedBundle:
    """A .zip of a bundle folder read and checked; BundleError with every problem found otherwise."""
    return _read(lambda: _Zip(data, max_file_bytes), max_file_bytes)
