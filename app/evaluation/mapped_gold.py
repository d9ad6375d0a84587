"""A parsed gold set kept as a folder of .npy files, opened memory-mapped: parsed once, shared by every process.

A VQA v2 test-std split (447,793 questions) parsed is some 430 MB of Python objects in each process that scores
it; as this folder it is ~50 MB of arrays every process maps read-only (the page cache holds them once). Numeric
arrays are written as they are; a column of text (the ids, a field) as categories and codes: the distinct values'
UTF-8 bytes end to end (``*.text.npy``) with their offsets (``*.offsets.npy``), and each row's code
(``*.codes.npy``). Ids that are all integers written as Python writes them are one int64 array instead (with a
sorted copy and its order, which positions_of_ints searches), and ids of at most HASHED_WIDTH bytes are also kept
as the fixed-width bytes the upload lookups compare (``GoldSet._id_bytes``). Text becomes Python strings only when
something reads it (GoldSet.lazily, LazyFields).

``manifest.json`` says how each attribute of the gold set is kept, and the sha256 of every file: ``read`` checks
them all, so a damaged or tampered folder is refused (Unreadable) and the caller builds it again from the gold
file (which is why nothing is synced to disk: a folder lost in a crash is made again). Nothing here knows where
the folder lives (label_files does).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import weakref
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .gold import HASHED_WIDTH, GoldSet, LazyFields, coded_fields, object_array

FORMAT = 1  # the layout below; a change of it is a new folder name (folder_tag)
MANIFEST = "manifest.json"
_SCALARS = (type(None), bool, int, float, str)


class NotCompactable(ValueError):
    """The gold set holds a value the layout has no place for: it stays parsed in memory."""


class Unreadable(Exception):
    """The folder is missing, incomplete, of another layout or does not match its manifest: build it again."""


@cache
def code_version() -> str:
    """A digest of the scoring domain's source: the gold readers that made a folder are part of its name, so that
    an upgrade that reads a gold file differently never serves a folder an older reader made."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(str(FORMAT).encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def folder_tag(task: str) -> str:
    """What tells apart the folders of one gold file: the task type reading it and the code it was read with."""
    return hashlib.sha256(f"{task}\0{code_version()}".encode()).hexdigest()[:16]


# --- writing ----------------------------------------------------------------------------------------------


def write(gold: GoldSet, folder: Path) -> int:
    """Write ``gold`` into the new folder ``folder`` (made here, 0700; files 0600); its size in bytes.
    NotCompactable (nothing left behind) when the gold set holds something the layout cannot keep."""
    plan = _plan(gold)
    folder.mkdir(mode=0o700)
    try:
        files: dict[str, str] = {}
        for name, array in plan.arrays.items():
            files[name] = _save(folder / name, array)
        manifest = {
            "format": FORMAT,
            "class": f"{type(gold).__module__}:{type(gold).__qualname__}",
            "scalars": plan.scalars,
            "attributes": plan.attributes,
            "fields": plan.fields,
            "known": plan.known,
            "files": files,
        }
        # Last, and whole or not at all: a folder without its manifest is unreadable, so it is made again.
        _private_write(folder / f"{MANIFEST}.tmp", json.dumps(manifest, sort_keys=True).encode())
        os.replace(folder / f"{MANIFEST}.tmp", folder / MANIFEST)
    except BaseException:
        _remove(folder)
        raise
    return sum(path.stat().st_size for path in folder.iterdir())


@dataclasses.dataclass
class _Plan:
    scalars: dict[str, Any] = dataclasses.field(default_factory=dict)
    attributes: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # attribute -> how kept
    fields: list[tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=list)  # (name, how kept), in order
    # cached property -> its file, or the files of a tuple of arrays
    known: dict[str, str | list[str]] = dataclasses.field(default_factory=dict)
    arrays: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # file name -> content


def _plan(gold: GoldSet) -> _Plan:
    plan = _Plan()
    for spec in dataclasses.fields(gold):
        name = spec.name
        if name == "ids":
            plan.attributes[name] = _ids(gold, plan)
            continue
        value = getattr(gold, name)
        if name == "fields":
            for index, field in enumerate(value):
                coded = value.coded(field) if isinstance(value, LazyFields) else None
                stem = f"field{index}"
                kept = _text(np.asarray(value[field]), stem, plan) if coded is None else _categories(*coded, stem, plan)
                plan.fields.append((field, kept))
        elif isinstance(value, np.ndarray):
            if value.dtype == object:
                plan.attributes[name] = _text(value, name, plan)
            else:
                plan.attributes[name] = {"kind": "array", "file": _add(plan, f"{name}.npy", value)}
        elif isinstance(value, _SCALARS):
            plan.scalars[name] = value
        else:
            raise NotCompactable(f"{type(gold).__name__}.{name} holds a {type(value).__name__}")
    return plan


def _ids(gold: GoldSet, plan: _Plan) -> dict[str, Any]:
    ints = gold.int_ids
    if ints is not None:
        ordered, order = gold.int_lookup
        plan.known["int_lookup"] = [_add(plan, "ids.sorted.npy", ordered), _add(plan, "ids.order.npy", order)]
        return {"kind": "integers", "file": _add(plan, "ids.npy", ints)}
    kept = _text(np.asarray(gold.ids), "ids", plan)
    as_bytes = gold.__dict__.get("_id_bytes")
    if as_bytes is None:
        as_bytes = np.array([identifier.encode("utf-8") for identifier in gold.ids.tolist()] or [b""])
    if as_bytes.dtype.itemsize <= HASHED_WIDTH:  # wider: positions_of_bytes never reads them
        plan.known["_id_bytes"] = _add(plan, "ids.bytes.npy", as_bytes)
    return kept


def _text(values: np.ndarray, stem: str, plan: _Plan) -> dict[str, Any]:
    """A 1-D column of Python strings as categories and codes."""
    if values.ndim != 1 or not all(type(value) is str for value in values.tolist()):
        raise NotCompactable(f"{stem} is not a column of text")
    codes, categories = pd.factorize(values, sort=False)
    return _categories(codes, np.asarray(categories, dtype=object), stem, plan)


def _categories(codes: np.ndarray, categories: np.ndarray, stem: str, plan: _Plan) -> dict[str, Any]:
    """A column as each row's code and the distinct values (strings) the codes number."""
    values = categories.tolist()
    if set(map(type, values)) - {str}:
        raise NotCompactable(f"{stem} is not a column of text")
    joined = "".join(values)
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    if joined.isascii():  # the usual: a character a byte, and no bytes object made for each value
        np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)), out=offsets[1:])
        blob = joined.encode("ascii")
    else:
        encoded = [value.encode("utf-8", "surrogatepass") for value in values]
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(values)), out=offsets[1:])
        blob = b"".join(encoded)
    del joined, values
    width = np.uint8 if len(offsets) <= 2**8 else np.uint16 if len(offsets) <= 2**16 else np.int32
    return {
        "kind": "text",
        "codes": _add(plan, f"{stem}.codes.npy", codes.astype(width)),
        "text": _add(plan, f"{stem}.text.npy", np.frombuffer(blob, dtype=np.uint8)),
        "offsets": _add(plan, f"{stem}.offsets.npy", offsets),
    }


def _add(plan: _Plan, name: str, array: np.ndarray) -> str:
    plan.arrays[name] = np.ascontiguousarray(array)
    return name


def _save(path: Path, array: np.ndarray) -> str:
    """Write an .npy file (straight from the array: no copy of it); its sha256."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        np.save(handle, array, allow_pickle=False)
    return _sha256(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while piece := handle.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()


def _private_write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _remove(folder: Path) -> None:
    for path in folder.iterdir() if folder.is_dir() else []:
        path.unlink(missing_ok=True)
    if folder.is_dir():
        folder.rmdir()


def remove(folder: Path) -> None:
    """Remove a folder ``write`` made (a damaged one before it is written again); nothing if there is none."""
    _remove(folder)


# --- reading ----------------------------------------------------------------------------------------------


def read(folder: Path) -> GoldSet:
    """The gold set kept in ``folder``, its arrays mapped read-only; Unreadable when it is missing or damaged."""
    try:
        manifest = json.loads((folder / MANIFEST).read_bytes())
        if manifest.get("format") != FORMAT:
            raise Unreadable(f"{folder.name}: another layout")
        cls = _gold_class(manifest["class"])
        arrays = {name: _mapped(folder / name, digest) for name, digest in manifest["files"].items()}
        values: dict[str, Any] = dict(manifest["scalars"])
        makers: dict[str, Callable[[], Any]] = {}
        for name, how in manifest["attributes"].items():
            if how["kind"] == "array":
                values[name] = arrays[how["file"]]
            elif how["kind"] == "integers":
                values["int_ids"] = arrays[how["file"]]
                makers[name] = _integers_as_text(arrays[how["file"]])
            else:
                makers[name] = _text_column(arrays, how)
        values["fields"] = coded_fields({name: _codes_and_values(arrays, how) for name, how in manifest["fields"]})
        known = {
            name: arrays[file] if isinstance(file, str) else tuple(arrays[one] for one in file)
            for name, file in manifest["known"].items()
        }
        expected = {spec.name for spec in dataclasses.fields(cls)}
        given = set(values) - {"int_ids"} | set(makers)
        if given != expected:
            raise Unreadable(f"{folder.name}: attributes {sorted(given ^ expected)} differ from {cls.__name__}'s")
    except Unreadable:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise Unreadable(f"{folder.name}: {exc}") from exc
    gold: GoldSet = cls.lazily(values, makers, known)
    return gold


def _gold_class(name: str) -> type[GoldSet]:
    """GoldSet or the subclass named (one a family defines, e.g. GQA's): never an arbitrary class."""
    found = [GoldSet]
    for cls in found:
        if f"{cls.__module__}:{cls.__qualname__}" == name:
            return cls
        found.extend(cls.__subclasses__())
    raise Unreadable(f"no gold set class {name}")


def _mapped(path: Path, digest: str) -> np.ndarray:
    """The array of an .npy file, mapped read-only, once its bytes match ``digest``."""
    if _sha256(path) != digest:
        raise Unreadable(f"{path.name} does not match its sha256")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:  # an empty array has nothing to map
        array = np.load(path, allow_pickle=False)
    return np.asarray(array)


def _integers_as_text(ints: np.ndarray) -> Callable[[], np.ndarray]:
    return lambda: object_array([str(value) for value in ints.tolist()])


def _codes_and_values(
    arrays: dict[str, np.ndarray], how: dict[str, Any]
) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    """A text column's codes (mapped), and a maker of its distinct values as Python strings."""
    text, offsets = arrays[how["text"]], arrays[how["offsets"]]

    def values() -> np.ndarray:
        blob = text.tobytes()
        bounds = offsets.tolist()
        return object_array(
            [blob[start:end].decode("utf-8", "surrogatepass") for start, end in zip(bounds, bounds[1:], strict=False)]
        )

    return arrays[how["codes"]], values


def _text_column(arrays: dict[str, np.ndarray], how: dict[str, Any]) -> Callable[[], np.ndarray]:
    codes, values = _codes_and_values(arrays, how)

    def made() -> np.ndarray:
        distinct = values()
        column: np.ndarray = distinct[np.asarray(codes, dtype=np.intp)] if len(distinct) else object_array([])
        return column

    return made


def mapped_bytes(array: np.ndarray) -> bool:
    """Whether ``array``'s data lies in a mapped file (shared), not in this process's own memory."""
    base: Any = array
    while base is not None:
        if isinstance(base, np.memmap) or type(base).__name__ == "mmap":
            return True
        base = getattr(base, "base", None)
    return False


def held_bytes(gold: GoldSet) -> tuple[int, int]:
    """(bytes of this process's own memory, bytes mapped from a folder) that ``gold`` and what it has worked out
    (its indexes, its ids as strings) hold. Python strings are estimated from a sample of them."""
    private = mapped = 0
    seen: set[int] = set()
    for value in _held_values(gold):
        if id(value) in seen:
            continue
        seen.add(id(value))
        size = _size(value)
        if isinstance(value, np.ndarray) and mapped_bytes(value):
            mapped += size
        else:
            private += size
    return private, mapped


def _held_values(gold: GoldSet) -> list[Any]:
    values: list[Any] = []
    for name, value in gold.__dict__.items():
        if name == "_makers":
            continue
        if isinstance(value, LazyFields):
            values.extend(value.made())
        elif isinstance(value, dict):
            values.append(value)
            values.extend(item for item in value.values() if isinstance(item, np.ndarray))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            values.extend(item for item in vars(value).values() if isinstance(item, np.ndarray))
        elif isinstance(value, (np.ndarray, pd.Index)):
            values.append(value)
        elif isinstance(value, tuple):
            values.extend(item for item in value if isinstance(item, np.ndarray))
    return values


# Sizes of object arrays already measured, by id (with a weak reference: an id is reused once its array is gone).
_measured: dict[int, tuple[weakref.ref[np.ndarray], int]] = {}


def _size(value: Any) -> int:
    if isinstance(value, pd.Index):
        return int(value.memory_usage()) + (_objects(value.to_numpy()) if value.dtype == object else 0)
    if isinstance(value, np.ndarray):
        return int(value.nbytes) + (_objects(value) if value.dtype == object else 0)
    if isinstance(value, dict):  # its keys are the ids, counted with them
        return sys.getsizeof(value)
    return 0


def _objects(values: np.ndarray) -> int:
    """The Python objects an object array points to, each counted once (a field's few values, shared by its rows)."""
    known = _measured.get(id(values))
    if known is not None and known[0]() is values:
        return known[1]
    distinct = {id(item): item for item in values.reshape(-1).tolist()}
    size = sum(sys.getsizeof(item) for item in distinct.values())
    for key in [key for key, (ref, _) in _measured.items() if ref() is None]:
        del _measured[key]
    _measured[id(values)] = (weakref.ref(values), size)
    return size
