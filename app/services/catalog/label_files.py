"""The hidden-labels folder: imported gold files, written once (mode 0600) and read through a cache.

Only this module opens gold files; everything else gets a parsed GoldSet.
"""

from __future__ import annotations

import os
from pathlib import Path

from app import settings
from app.db import on_rollback
from app.evaluation import GoldSet, TakesChoices, ValidationError
from app.lru import LRU
from app.models import Split
from app.services.catalog.task_types import task_of
from app.services.storage.checksums import sha256

# Parsed gold sets by file and hash. More than a site's splits are usually: visited in turn (a crawler, every
# board's pages), splits past the size evict each other before their next use, and every visit parses a gold
# file again (the demo alone has 18 splits). A real NLVR2 test set holds under 2 MB parsed.
_cache: LRU[GoldSet] = LRU(48)


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
    """The split's parsed gold labels (with its choices file attached, where it has one), verified against the
    recorded sha256 on first load."""
    key = _key(split)
    gold = _cache.get(key)
    if gold is not None:
        return gold
    data = _read_checked(split.gold_path, split.gold_sha256, f"gold file for split {split.id}")
    task = task_of(split.benchmark)
    gold = task.read_gold(data)
    compact = stored_choices(split)
    if compact is not None:
        gold = with_choices(task, gold, compact)
    return _cache.put(key, gold)


def remember(split: Split, gold: GoldSet) -> GoldSet:
    """Keep `gold`, parsed from the split's gold file (and choices) as it was imported, as load_gold would make
    it: the split's first upload after the import does not parse the file again."""
    return _cache.put(_key(split), gold)


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
