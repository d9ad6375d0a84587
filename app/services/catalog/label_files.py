"""The hidden-labels folder: imported gold files, written once (mode 0600) and read through a cache.

Only this module opens gold files; everything else gets a parsed GoldSet. A gold file is parsed once: what it
parses to is kept beside it as a folder of arrays (app/evaluation/mapped_gold.py), named by the file's sha256 and
by what read it, written when the split is added or its gold corrected (or when a process finds none), and
mapped read-only by every process, so that workers share one copy of a large split's gold in the page cache.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from app import observability, settings
from app.db import on_rollback
from app.evaluation import GoldSet, TakesChoices, ValidationError, mapped_gold
from app.lru import LRU
from app.models import Split
from app.services.catalog.task_types import task_of
from app.services.storage.checksums import sha256

# Gold sets by file and hash. More than a site's splits are usually: visited in turn (a crawler, every board's
# pages), splits past the size evict each other before their next use. A mapped one costs this process little of
# its own (what it has worked out: indexes, ids as strings); one its family cannot map holds its parse.
_cache: LRU[GoldSet] = LRU(48)
_log = logging.getLogger(__name__)


class GoldFileError(RuntimeError):
    """A gold file is missing or no longer matches the checksum recorded at import."""


def labels_dir() -> Path:
    return settings.current().hidden_labels_dir


def secure_labels_dir(root: Path) -> None:
    """The hidden-labels folder and every folder under it 0700, every file 0600 (a checkout gives the
    folder 0755; files copied in by hand may be 0644). Owned by someone else: left to its owner."""
    if not root.is_dir():
        return
    for path in [root, *root.rglob("*")]:
        try:
            if path.is_symlink():
                continue
            os.chmod(path, 0o700 if path.is_dir() else 0o600)
        except PermissionError:
            pass


def gold_relative_path(benchmark_slug: str, split_slug: str, data: bytes) -> Path:
    """Where write_gold keeps this content, relative to the hidden-labels folder (one file per content)."""
    return Path(benchmark_slug) / f"{split_slug}-{sha256(data)[:16]}.jsonl"


def write_gold(benchmark_slug: str, split_slug: str, data: bytes) -> tuple[str, str]:
    """Store a gold file under the hidden-labels folder; return (path relative to it, sha256)."""
    return _write_private(gold_relative_path(benchmark_slug, split_slug, data), data)


def write_choices(benchmark_slug: str, split_slug: str, compact: bytes) -> tuple[str, str]:
    """Store a split's choices (the compact form TakesChoices.read_choices makes) beside its gold file, as
    private as it; return (path relative to the hidden-labels folder, sha256)."""
    return _write_private(Path(benchmark_slug) / f"{split_slug}-choices-{sha256(compact)[:16]}.npz", compact)


def write_as_given(benchmark_slug: str, split_slug: str, kind: str, data: bytes) -> tuple[str, str]:
    """Keep a split's annotation or choices file as the maintainer gave it (``kind``: "annotations" or
    "choices"), as private as its gold file, for a bundle export to write back; (relative path, sha256)."""
    return _write_private(Path(benchmark_slug) / f"{split_slug}-{kind}-{sha256(data)[:16]}.given", data)


def _write_private(relative: Path, data: bytes) -> tuple[str, str]:
    digest = sha256(data)
    root = labels_dir()
    target = root / relative
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    os.chmod(target.parent, 0o700)
    if not target.exists():  # a change rolled back takes its new file with it
        on_rollback(lambda: target.unlink(missing_ok=True))
    tmp = target.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    os.chmod(target, 0o600)
    return str(relative), digest


def remove_gold(relative: str) -> None:
    (labels_dir() / relative).unlink(missing_ok=True)


def _read_checked(relative: str, digest: str, what: str) -> bytes:
    try:
        data = (labels_dir() / relative).read_bytes()
    except FileNotFoundError as exc:
        raise GoldFileError(f"{what} is missing from the hidden-labels folder") from exc
    if sha256(data) != digest:
        raise GoldFileError(f"{what} does not match its recorded sha256")
    return data


def gold_bytes(split: Split) -> bytes:
    """The split's current gold file as stored (after any correction), verified against its sha256."""
    return _read_checked(split.gold_path, split.gold_sha256, f"gold file for split {split.id}")


# Where a split records each of its stored files: (path column, sha256 column).
_STORED = {
    "labels": ("gold_path", "gold_sha256"),
    "annotations": ("annotations_path", "annotations_sha256"),
    "choices": ("choices_file_path", "choices_file_sha256"),
}


def stored_file(split: Split, kind: str) -> tuple[str | None, str | None]:
    """(path relative to the hidden-labels folder, sha256) of the split's gold file ("labels") or of the
    annotation or choices file it was added with; (None, None) where none was kept."""
    path_column, digest_column = _STORED[kind]
    return getattr(split, path_column), getattr(split, digest_column)


def stored_head(relative: str, size: int = 65536) -> bytes:
    """The first bytes of a stored file (what kind of file it is), unverified: never a whole file's content."""
    try:
        with (labels_dir() / relative).open("rb") as handle:
            return handle.read(size)
    except FileNotFoundError as exc:
        raise GoldFileError(f"{relative} is missing from the hidden-labels folder") from exc


def stored_bytes(relative: str, digest: str, what: str) -> bytes:
    """A stored file's bytes, verified against its recorded sha256 (GoldFileError otherwise)."""
    return _read_checked(relative, digest, what)


def load_gold(split: Split) -> GoldSet:
    """The split's parsed gold labels (with its choices file attached, where it has one): mapped from the folder
    its gold file was parsed into, else parsed from the file (verified against its recorded sha256) and that
    folder written."""
    key = _key(split)
    gold = _cache.get(key)
    if gold is not None:
        if time.monotonic() - _measured_at[0] > MEASURE_EVERY:
            _measure()  # what it has worked out since (an index of its ids) shows, now and then
        return gold
    task = task_of(split.benchmark)
    gold = _mapped(split, task)
    compact = stored_choices(split)
    if compact is not None:
        gold = with_choices(task, gold, compact)
    _cache.put(key, gold)
    _measure()
    return gold


def remember(split: Split, gold: GoldSet) -> GoldSet:
    """Keep `gold`, parsed from the split's gold file as it was imported or corrected (without its choices), as
    load_gold would: its folder written now (a split of SHARE_FROM examples or more), so that no process parses the
    file again."""
    task = task_of(split.benchmark)
    folder = parsed_folder(split, task.name)
    if gold.n < SHARE_FROM:
        kept = gold
    else:
        with _building(folder):
            try:
                kept = mapped_gold.read(folder)
            except mapped_gold.Unreadable:
                kept = _store(folder, gold)
    compact = stored_choices(split)
    if compact is not None:
        kept = with_choices(task, kept, compact)
    _cache.put(_key(split), kept)
    _measure()
    return kept


# Splits of fewer examples are parsed by each process as before: tens of milliseconds and a few MB (a real NLVR2
# test set: 7,000 examples, 2 MB parsed), where writing and mapping their folder cost the demo's 18 splits half a
# second each time it is loaded. Sharing is for the splits whose parse costs seconds and hundreds of MB a worker.
SHARE_FROM = 50_000


def parsed_folder(split: Split, task: str) -> Path:
    """Where the split's gold file parsed by `task` is kept: beside the file, named by its sha256 and the reader."""
    return labels_dir() / Path(split.gold_path).parent / f"{split.gold_sha256}-{mapped_gold.folder_tag(task)}.parsed"


def _mapped(split: Split, task) -> GoldSet:
    folder = parsed_folder(split, task.name)
    try:
        return mapped_gold.read(folder)
    except mapped_gold.Unreadable:
        pass
    with _building(folder):  # one process parses; the others wait for its folder
        try:
            return mapped_gold.read(folder)
        except mapped_gold.Unreadable as exc:
            if folder.exists():
                _log.warning("parsed gold of split %s is damaged (%s): parsing its gold file again", split.id, exc)
        data = _read_checked(split.gold_path, split.gold_sha256, f"gold file for split {split.id}")
        gold = task.read_gold(data)
        del data
        return gold if gold.n < SHARE_FROM else _store(folder, gold)


def _store(folder: Path, gold: GoldSet) -> GoldSet:
    """`gold` written into `folder` (replacing a damaged one, and the folders older code made of the same file)
    and mapped from it; `gold` itself where its family's gold cannot be kept so or the folder cannot be written."""
    # Written aside and renamed into place: a process of another host (the folder on shared storage) maps a
    # whole folder or none.
    aside = folder.with_name(f"{folder.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        mapped_gold.remove(folder)
        mapped_gold.write(gold, aside)
        try:
            aside.rename(folder)
        except OSError:  # another host's, made meanwhile: the same content
            mapped_gold.remove(aside)
        # Made for a change that is not kept (a dry run, a failed import): gone with it, as its gold file is.
        on_rollback(lambda: mapped_gold.remove(folder))
        mapped = mapped_gold.read(folder)
    except mapped_gold.NotCompactable:
        return gold
    except (OSError, mapped_gold.Unreadable) as exc:
        _log.warning("could not keep parsed gold in %s (%s): this process holds its own", folder, exc)
        return gold
    digest = folder.name.rsplit("-", 1)[0]
    for stale in folder.parent.glob(f"{digest}-*.parsed"):
        if stale != folder:  # made by another version of the readers: never read again
            mapped_gold.remove(stale)
    return mapped


@contextmanager
def _building(folder: Path) -> Iterator[None]:
    """An exclusive lock, between the processes of this host, on building a folder: one on the folder it goes in
    (no lock file left beside the gold files)."""
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(folder.parent, os.O_RDONLY)
    try:
        with suppress(OSError):  # a file system without locks (some NFS mounts): two processes may both parse
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


MEASURE_EVERY = 10.0  # seconds between two measures of the cache on its hits (a measure costs 0.2 ms a gold set)
_measured_at = [float("-inf")]


def _measure() -> tuple[int, int]:
    """(private, mapped) bytes of the gold sets this process holds, measured now and recorded for /metrics
    (load_gold measures at every call: what a gold set works out after one shows at the next)."""
    private = mapped = 0
    for gold in _cache.values():
        own, shared = mapped_gold.held_bytes(gold)
        private, mapped = private + own, mapped + shared
    observability.gold_cache(private, mapped)
    _measured_at[0] = time.monotonic()
    return private, mapped


def cache_bytes() -> tuple[int, int]:
    """(private, mapped) bytes of the gold sets this process holds, measured now."""
    return _measure()


def _key(split: Split) -> tuple:
    # The task's name too: a configured type's names its config, and the same file read by another config is
    # another gold set.
    return (str(labels_dir() / split.gold_path), split.gold_sha256, split.choices_sha256, task_of(split.benchmark).name)


def stored_choices(split: Split) -> bytes | None:
    """The split's stored choices (compact form), verified against the recorded sha256; None without."""
    if split.choices_path is None or split.choices_sha256 is None:
        return None
    return _read_checked(split.choices_path, split.choices_sha256, f"choices of split {split.id}")


def with_choices(task, gold: GoldSet, compact: bytes) -> GoldSet:
    """`gold` with stored choices attached; GoldFileError when the family takes none or they no longer fit it."""
    if not isinstance(task, TakesChoices):
        raise GoldFileError(f"a {task.name} split has no choices file")
    try:
        return task.with_choices(gold, compact)
    except (ValidationError, ValueError) as exc:
        raise GoldFileError(f"the stored choices do not fit the gold file: {exc}") from exc
