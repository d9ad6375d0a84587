"""The canonical form of a bundle, written the same way every time: what export writes, so that export, apply on
a fresh server and export again give identical bytes, and a diff of two exports shows only what changed.

benchmark.yaml: a one-line header comment, then every key of the spec in the spec's order (defaults written out;
policy and phase always, a missing quota or date as `none`, any other missing value as `null`), block style,
two-space indentation, text quoted only where YAML 1.2 would read it otherwise, LF line ends, a final newline.
The .zip: entries sorted by name, at its root, with fixed timestamps and permissions.
"""

from __future__ import annotations

import hashlib
import io
import math
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from .model import NONE, Bundle, FileRef, Phase, Policy, ReferenceSpec, SplitSpec
from .reading import YAML_NAME, BundleError, Problem, path_text, resolve_plain

HEADER = "# A Holdout bundle (format 1): one benchmark, whole. The files it names sit beside this file."
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a .zip can say
ZIP_MODE = 0o100644  # a regular file, rw-r--r--
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_FLOW = set(",[]{}")


# --- scalars ---------------------------------------------------------------------------------------------


def _plain_ok(text: str) -> bool:
    """Whether text may go unquoted: read back by YAML 1.2's core schema as this same text, in block context."""
    return (
        text != ""
        and text.isprintable()
        and text == text.strip()
        and text[0] not in _INDICATORS
        and not _FLOW & set(text)
        and ": " not in text
        and " #" not in text
        and not text.endswith(":")
        and resolve_plain(text) == text
        and isinstance(resolve_plain(text), str)
    )


def _quoted(text: str) -> str:
    """Double-quoted, escaping what YAML's reader would not take as it is."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif (
            code < 0x20
            or 0x7F <= code <= 0x9F
            or code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF)
            or (0xD800 <= code <= 0xDFFF)
        ):
            out.append(f"\\u{code:04x}")
        elif not char.isprintable() and code > 0xFFFF:
            out.append(f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _literal_ok(text: str) -> bool:
    """Whether multi-line text can be a literal block (`|`) that reads back the same."""
    lines = text.split("\n")
    return (
        "\n" in text
        and not text.endswith("\n\n")
        and bool(lines[0])
        and lines[0][0] not in " \t"
        and all(line.isprintable() or line == "" for line in (ln.replace("\t", " ") for ln in lines))
        and "\r" not in text
        and "\ufeff" not in text
    )


def _text(text: str, indent: int) -> str:
    """Text as a value: plain, a literal block, or double-quoted (a leading space is the value's separator)."""
    if _plain_ok(text):
        return " " + text
    if _literal_ok(text):
        pad = " " * (indent + 2)
        body = "\n".join(pad + line if line else "" for line in text.rstrip("\n").split("\n"))
        return (" |" if text.endswith("\n") else " |-") + "\n" + body
    return " " + _quoted(text)


def _key(text: str) -> str:
    return text if _plain_ok(text) else _quoted(text)


def _number(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(float(value))


def _moment(value: datetime | None) -> str:
    if value is None:
        return NONE
    value = value.astimezone(UTC)
    if value.microsecond:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%dT%H:%MZ" if not value.second else "%Y-%m-%dT%H:%M:%SZ")


def _value(value: Any, indent: int) -> str:
    """Any value after its key (with the separating space or newline); mappings and lists as blocks."""
    if value is None:
        return " null"
    if isinstance(value, bool):
        return " true" if value else " false"
    if isinstance(value, int):
        return f" {value}"
    if isinstance(value, float):
        return " " + _number(value)
    if isinstance(value, str):
        return _text(value, indent)
    if isinstance(value, datetime):
        return " " + _moment(value)
    if isinstance(value, date):
        return " " + value.isoformat()
    if isinstance(value, dict):
        if not value:
            return " {}"
        return "\n" + "\n".join(_entry(str(key), item, indent + 2) for key, item in value.items())
    if isinstance(value, list | tuple):
        if not value:
            return " []"
        return "\n" + "\n".join(_item(item, indent + 2) for item in value)
    raise TypeError(f"no YAML for {type(value).__name__}")


def _entry(key: str, value: Any, indent: int) -> str:
    return " " * indent + _key(key) + ":" + _value(value, indent)


def _item(value: Any, indent: int) -> str:
    """A list item: a mapping's first key on the dash's line, the rest under it."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        lines = [_entry(str(key), item, indent + 2) for key, item in value.items()]
        return pad + "- " + lines[0][indent + 2 :] + ("\n" + "\n".join(lines[1:]) if len(lines) > 1 else "")
    if isinstance(value, list | tuple) and value:
        raise TypeError("a list directly inside a list has no place in a bundle")
    return pad + "-" + _value(value, indent)


# --- the bundle as ordered mappings -----------------------------------------------------------------------


def _file(ref: FileRef | None) -> dict[str, Any] | None:
    return None if ref is None else {"file": ref.file, "sha256": ref.sha256}


def _quota(value: int | None) -> int | str:
    return NONE if value is None else value


def _policy(policy: Policy) -> dict[str, Any]:
    return {
        "per_day": _quota(policy.per_day),
        "per_month": _quota(policy.per_month),
        "total": _quota(policy.total),
        "rejected_per_day": policy.rejected_per_day,
        "feedback": policy.feedback,
        "open": policy.open,
        "sealed": int(policy.sealed) if policy.sealed == 0 else policy.sealed,
    }


def _phase(phase: Phase) -> dict[str, Any]:
    return {"opens": _moment(phase.opens), "closes": _moment(phase.closes), "reveal": _moment(phase.reveal)}


def _reference(reference: ReferenceSpec) -> dict[str, Any]:
    return {
        "name": reference.name,
        "scores": {subset: dict(metrics) for subset, metrics in reference.scores.items()},
        "source": reference.source,
        "date": NONE if reference.date is None else reference.date.isoformat(),
    }


def _split(split: SplitSpec) -> dict[str, Any]:
    return {
        "slug": split.slug,
        "name": split.name,
        "hidden": split.hidden,
        "labels": _file(split.labels),
        "annotations": _file(split.annotations),
        "choices": _file(split.choices),
        "subset_field": split.subset_field,
        "subsets": [{"name": subset.name, "ids": _file(subset.ids)} for subset in split.subsets],
        "policy": _policy(split.policy),
        "phase": _phase(split.phase),
        "references": [_reference(reference) for reference in split.references],
    }


def _document(bundle: Bundle) -> dict[str, Any]:
    return {
        "format": bundle.format,
        "slug": bundle.slug,
        "name": bundle.name,
        "description": bundle.description,
        "paper_url": bundle.paper_url,
        # A configured task type's mapping in its own order (its model will give it one).
        "task": bundle.task,
        "default_split": bundle.default_split,
        "columns": bundle.columns,
        "entry_fields": [
            {
                "key": spec.key,
                "label": spec.label,
                "type": spec.type,
                "choices": spec.choices,
                "unit": spec.unit,
                "required": spec.required,
                "column": spec.column,
                "filter": spec.filter,
            }
            for spec in bundle.entry_fields
        ],
        "tracks": [{"name": track.name, "label": track.label, "where": track.where} for track in bundle.tracks],
        "splits": [_split(split) for split in bundle.splits],
    }


def canonical_yaml(bundle: Bundle) -> bytes:
    """benchmark.yaml in the canonical form (UTF-8, LF, a final newline)."""
    lines = [HEADER] + [_entry(key, value, 0) for key, value in _document(bundle).items()]
    return ("\n".join(lines) + "\n").encode("utf-8")


# --- files -----------------------------------------------------------------------------------------------


def _checked(bundle: Bundle, files: dict[str, bytes]) -> dict[str, bytes]:
    """The named files' bytes, each matching its sha256; BundleError naming each that is missing or differs."""
    chosen: dict[str, bytes] = {}
    problems = []
    for path, ref in bundle.file_refs():
        data = files.get(ref.file)
        if data is None:
            problems.append(Problem(path_text((*path, "file")), None, f"no content given for {ref.file!r}"))
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != ref.sha256:
            problems.append(
                Problem(
                    path_text((*path, "sha256")),
                    None,
                    f"the content given for {ref.file!r} has sha256 {digest[:12]}…, not {ref.sha256[:12]}… "
                    "(a .gz read is decompressed: write canonical_files' bundle)",
                )
            )
        chosen[ref.file] = data
    if problems:
        raise BundleError(problems)
    return chosen


def canonical_files(bundle: Bundle, files: dict[str, bytes]) -> tuple[Bundle, dict[str, bytes]]:
    """The bundle with its files where export puts them, uncompressed, each pinned by its content's sha256:
    splits/<slug>/labels.<ext>, annotations.<ext>, choices.json, subsets/<n>.txt (n from 1, so a subset's
    name never reaches a path). `files`: each named file's content, as LoadedBundle.files holds it."""
    renamed: dict[str, bytes] = {}

    def place(ref: FileRef, path: str) -> dict[str, str]:
        content = files[ref.file]
        renamed[path] = content
        return {"file": path, "sha256": hashlib.sha256(content).hexdigest()}

    def suffix(ref: FileRef) -> str:
        name = ref.file.removesuffix(".gz")
        return PurePosixPath(name).suffix or ".txt"

    splits = []
    for split in bundle.splits:
        folder = f"splits/{split.slug}"
        changes: dict[str, Any] = {"labels": place(split.labels, f"{folder}/labels{suffix(split.labels)}")}
        if split.annotations is not None:
            changes["annotations"] = place(split.annotations, f"{folder}/annotations{suffix(split.annotations)}")
        if split.choices is not None:
            changes["choices"] = place(split.choices, f"{folder}/choices.json")
        changes["subsets"] = [
            {"name": subset.name, "ids": place(subset.ids, f"{folder}/subsets/{position}.txt")}
            for position, subset in enumerate(split.subsets, start=1)
        ]
        splits.append(SplitSpec.model_validate({**dict(split), **changes}))
    return Bundle.model_validate({**dict(bundle), "splits": splits}), renamed


def write_bundle(bundle: Bundle, files: dict[str, bytes], folder: Path) -> None:
    """The bundle as a folder: benchmark.yaml in the canonical form and each file it names, from `files` (each
    must match its sha256). The folder is made if missing; a folder that holds anything is refused."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BundleError(
            [Problem("", None, f"{folder} is not an empty folder: a bundle is written into an empty one")]
        )
    chosen = _checked(bundle, files)
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(chosen):
        target = folder.joinpath(*name.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as handle:
            handle.write(chosen[name])
    with open(folder / YAML_NAME, "xb") as handle:
        handle.write(canonical_yaml(bundle))


def bundle_zip(bundle: Bundle, files: dict[str, bytes]) -> bytes:
    """The bundle as a .zip, byte for byte the same for the same bundle: benchmark.yaml and its files at the
    root, sorted by name, with fixed timestamps and permissions."""
    entries = {**_checked(bundle, files), YAML_NAME: canonical_yaml(bundle)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the permissions below are read as such
            info.external_attr = ZIP_MODE << 16
            archive.writestr(info, entries[name], compresslevel=6)
    return buffer.getvalue()
