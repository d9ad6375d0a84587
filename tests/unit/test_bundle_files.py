"""Bundle files (issue 37, app/bundles): the spec's example reads; an honest bundle's every mistake is named at
once by key path and line; every hostile input (a 50 MB benchmark.yaml, an alias bomb, YAML 1.1's surprises, a
path leaving the folder, a symlink, a sha256 that differs, a gzip or zip bomb) is refused with its problem and
cheaply (work counted, never timed); the canonical form is written the same way every time and reads back as
itself; the JSON Schema describes what the reader takes."""

from __future__ import annotations

import gzip
import importlib.util
import io
import os
import tracemalloc
import warnings
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path

import jsonschema
import pytest

from app.bundles import (
    Bundle,
    BundleError,
    bundle_schema,
    bundle_zip,
    canonical_files,
    canonical_yaml,
    read_bundle,
    read_bundle_zip,
    reading,
    write_bundle,
)
from app.bundles.model import HIDDEN_POLICY
from tests.support.bundle_files import EXAMPLE, FILES, sha
from tests.support.work import python_lines, raised

MB = 2**20
REPO = Path(__file__).resolve().parents[2]
LABELS = FILES["splits/dev/labels.jsonl"]
MINIMAL = f"""\
format: 1
slug: toy
name: Toy
task: nlvr2
splits:
  - slug: test
    hidden: true
    labels: {{file: labels.jsonl, sha256: {sha(LABELS)}}}
"""


def make(folder: Path, text: str | bytes, files: dict[str, bytes] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (FILES if files is None else files).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (folder / "benchmark.yaml").write_bytes(text if isinstance(text, bytes) else text.encode())
    return folder


def problems(call) -> list[str]:
    with pytest.raises(BundleError) as caught:
        call()
    assert str(caught.value) == "\n".join(str(problem) for problem in caught.value.problems)
    return [str(problem) for problem in caught.value.problems]


def refused(folder: Path, **options) -> list[str]:
    return problems(lambda: read_bundle(folder, **options))


# --- the example and the defaults --------------------------------------------------------------------------


def test_the_specs_example_reads_as_it_says(tmp_path):
    loaded = read_bundle(make(tmp_path, EXAMPLE))
    bundle = loaded.bundle
    assert (bundle.slug, bundle.name, bundle.task, bundle.default_split) == ("nli3", "Three-way NLI", "nlvr2", "dev")
    assert bundle.description == "One or two sentences.\n" and bundle.paper_url == "https://example.org/paper"
    (split,) = bundle.splits
    assert (split.slug, split.name, split.hidden, split.subset_field) == ("dev", "Dev", False, "region")
    assert split.subsets[0].name == "hard" and split.subsets[0].ids.file == "splits/dev/subsets/hard.txt"
    policy = split.policy
    assert (policy.per_day, policy.per_month, policy.total, policy.rejected_per_day) == (5, 20, None, 50)
    assert (policy.feedback, policy.open, policy.sealed) == ("ladder", True, 0.0)
    assert split.phase.opens == datetime(2026, 12, 1, tzinfo=UTC)
    assert split.phase.closes == datetime(2027, 3, 1, 23, 59, tzinfo=UTC)
    assert split.phase.reveal == datetime(2027, 3, 15, tzinfo=UTC)
    (reference,) = split.references
    assert reference.scores == {"all": {"accuracy": 96.2}} and reference.date == date(2019, 7, 28)
    assert loaded.files == FILES and loaded.yaml_bytes == EXAMPLE.encode()


def test_left_out_keys_take_their_defaults_a_hidden_splits_policy_the_safe_one(tmp_path):
    text = (
        MINIMAL
        + f"""\
  - slug: dev
    labels: {{file: labels.jsonl, sha256: {sha(LABELS)}}}
    policy: {{per_day: 3}}
    phase: {{opens: 2026-12-01, closes: "2027-01-01T12:00+02:00"}}
"""
    )
    bundle = read_bundle(make(tmp_path, text, {"labels.jsonl": LABELS})).bundle
    hidden, public = bundle.splits
    assert hidden.name == "test" and bundle.description == "" and bundle.paper_url is None
    assert {key: getattr(hidden.policy, key) for key in HIDDEN_POLICY} == HIDDEN_POLICY
    assert (public.policy.per_day, public.policy.per_month, public.policy.feedback) == (3, None, "full")
    assert public.phase.opens == datetime(2026, 12, 1, tzinfo=UTC)
    assert public.phase.closes == datetime(2027, 1, 1, 10, 0, tzinfo=UTC)
    assert hidden.phase.opens is None and hidden.subsets == [] and hidden.references == []


# --- honest mistakes: every one at once, with key path and line ---------------------------------------------


def test_every_mistake_is_named_at_once_with_its_key_path_and_line(tmp_path):
    labels = f"{{file: labels.jsonl, sha256: {sha(LABELS)}}}"
    text = f"""\
format: 2
slug: Toy
name: ""
task: nope
colour: blue
splits:
  - slug: a
    labels: {labels}
  - slug: b
    labels: {labels}
  - slug: c
    labels: {labels}
    policy:
      per_day: ten
      feedback: some
      per_days: 3
    phase: {{opens: 2027-01-01, closes: 2026-12-31T00:00Z}}
    subsets:
      - name: hard
      - name: hard
        ids: {{file: missing.txt, sha256: {"a" * 64}}}
"""
    assert refused(make(tmp_path, text, {"labels.jsonl": LABELS})) == [
        "format: expected 1, got 2 (benchmark.yaml:1)",
        'slug: expected a slug (lower-case letters, digits and dashes, at most 64), got "Toy" (benchmark.yaml:2)',
        "name: must not be empty (benchmark.yaml:3)",
        'task: unknown task family "nope"; the built-in ones: nlvr2, nlvr-structured, nlvr-images, vcr, vqa-v2, '
        "gqa, a-okvqa, winoground, nlvr2-contrast (benchmark.yaml:4)",
        "colour: unknown key (expected one of: format, slug, name, description, paper_url, task, default_split, "
        "columns, entry_fields, tracks, splits) (benchmark.yaml:5)",
        'splits[2].policy.per_day: expected an integer or "none", got "ten" (benchmark.yaml:14)',
        'splits[2].policy.feedback: expected "full", "ladder" or "none", got "some" (benchmark.yaml:15)',
        "splits[2].policy.per_days: unknown key (expected one of: per_day, per_month, total, rejected_per_day, "
        "feedback, open, sealed) (benchmark.yaml:16)",
        "splits[2].phase.closes: must be after opens (2027-01-01 00:00 UTC) (benchmark.yaml:17)",
        "splits[2].subsets[0].ids: required, but missing (benchmark.yaml:19)",  # the line of its mapping
        'splits[2].subsets[1].ids.file: "missing.txt" is missing from the bundle (benchmark.yaml:21)',
    ]


def test_rules_between_keys_name_the_key_they_are_about(tmp_path):
    labels = f"{{file: labels.jsonl, sha256: {sha(LABELS)}}}"
    task = (
        "{type: classification, labels: [a, b], gold: {format: jsonl, id: id, label: label}, "
        "predictions: {format: csv, id: id, label: label}}"
    )
    text = f"""\
format: 1
slug: toy
name: Toy
task: {task}
default_split: nowhere
splits:
  - slug: a
    labels: {labels}
    references:
      - {{name: Human, scores: {{all: {{accuracy: 101}}}}, date: 2019-02-30}}
  - slug: a
    name: Again
    name: Twice
    labels: {labels}
"""
    # A split's own problems first keep the bundle's rules from being judged (they need valid splits).
    assert refused(make(tmp_path / "one", text, {"labels.jsonl": LABELS})) == [
        "splits[0].references[0].scores.all.accuracy: expected a percentage from 0 to 100, got 101 (benchmark.yaml:10)",
        'splits[0].references[0].date: expected a date like 2019-07-28 or "none", got "2019-02-30" (benchmark.yaml:10)',
        'splits[1].name: the key "name" appears twice in this mapping (benchmark.yaml:13)',
    ]
    text = text.replace("accuracy: 101", "accuracy: 100").replace("2019-02-30", "2019-02-28")
    assert refused(make(tmp_path / "two", text, {"labels.jsonl": LABELS})) == [
        'default_split: names no split of this bundle: "nowhere" (benchmark.yaml:5)',
        'splits[1].slug: "a" is also splits[0] (benchmark.yaml:11)',
        'splits[1].name: the key "name" appears twice in this mapping (benchmark.yaml:13)',
    ]
    text = text.replace("  - slug: a\n    name: Again", "  - slug: b\n    hidden: true\n    policy: {sealed: 0.9}")
    text = text.replace("    references:", "    policy: {sealed: 0.2}\n    references:").replace("nowhere", "b")
    text = text.replace(
        "    name: Twice\n", "    subsets: [{name: x, ids: " + labels + "}, {name: x, ids: " + labels + "}]\n"
    )
    assert refused(make(tmp_path / "three", text, {"labels.jsonl": LABELS})) == [
        "splits[0].policy.sealed: only a hidden split has a sealed part (this one is public) (benchmark.yaml:9)",
        'splits[1].subsets[1].name: "x" is also subsets[0] (benchmark.yaml:15)',
    ]


def test_tracks_are_read_named_once_each_with_one_to_eight_conditions_and_written_in_order(tmp_path):
    tracks = """\
entry_fields: [{key: zero_shot, label: Zero-shot, type: yesno, filter: true}]
tracks:
  - {name: zero-shot, label: Zero-shot, where: [zero_shot:yes]}
  - {name: Zero Shot, label: "", where: []}
  - {name: zero-shot, label: Again, where: [zero_shot:no]}
  - {name: many, label: Many, where: [a:1, a:2, a:3, a:4, a:5, a:6, a:7, a:8, a:9], colour: red}
"""
    text = MINIMAL.replace("splits:\n", tracks + "splits:\n")
    assert refused(make(tmp_path / "bad", text, {"labels.jsonl": LABELS})) == [
        "tracks[1].name: expected a track name (a lower-case letter, then letters, digits or hyphens; at most 40), "
        'got "Zero Shot" (benchmark.yaml:8)',
        "tracks[1].label: must not be empty (benchmark.yaml:8)",
        "tracks[1].where: must hold at least one entry (benchmark.yaml:8)",
        "tracks[3].where: must hold at most 8 entries, got 9 (benchmark.yaml:10)",
        "tracks[3].colour: unknown key (expected one of: name, label, where) (benchmark.yaml:10)",
    ]
    text = text.replace('  - {name: Zero Shot, label: "", where: []}\n', "").replace(", a:9], colour: red", "]")
    assert refused(make(tmp_path / "twice", text, {"labels.jsonl": LABELS})) == [
        'tracks[1].name: "zero-shot" is also tracks[0] (benchmark.yaml:8)'
    ]
    text = text.replace("name: zero-shot, label: Again", "name: not-zero-shot, label: Again")
    bundle = read_bundle(make(tmp_path / "ok", text, {"labels.jsonl": LABELS})).bundle
    assert [(track.name, track.label, track.where) for track in bundle.tracks][:2] == [
        ("zero-shot", "Zero-shot", ["zero_shot:yes"]),
        ("not-zero-shot", "Again", ["zero_shot:no"]),
    ]
    written = canonical_yaml(bundle).decode()
    assert "\ntracks:\n  - name: zero-shot\n    label: Zero-shot\n    where:\n      - zero_shot:yes\n" in written
    assert read_bundle(make(tmp_path / "again", written, {"labels.jsonl": LABELS})).bundle == bundle


def test_yaml_1_1s_surprises_mean_nothing_but_what_is_written(tmp_path):
    """`yes`, `on`, `1:20` and `0o17`-looking text are not booleans or sexagesimal numbers: a key that wants
    true/false or an integer refuses them; where text is wanted, they are text."""
    text = f"""\
format: 1
slug: toy
name: no
description: 2019-07-28
task: nlvr2
splits:
  - slug: test
    name: on
    hidden: yes
    labels: {{file: labels.jsonl, sha256: {sha(LABELS)}}}
    policy: {{per_day: 1:20, open: off, rejected_per_day: 1.0}}
"""
    assert refused(make(tmp_path, text, {"labels.jsonl": LABELS})) == [
        'splits[0].hidden: expected true or false, got "yes" (benchmark.yaml:9)',
        'splits[0].policy.per_day: expected an integer or "none", got "1:20" (benchmark.yaml:11)',
        "splits[0].policy.rejected_per_day: expected an integer >= 0, got 1.0 (benchmark.yaml:11)",
        'splits[0].policy.open: expected true or false, got "off" (benchmark.yaml:11)',
    ]
    fixed = text.replace("yes", "true").replace("1:20", "0x10").replace("off", "false").replace("1.0", "0")
    bundle = read_bundle(make(tmp_path / "fixed", fixed, {"labels.jsonl": LABELS})).bundle
    assert (bundle.name, bundle.description, bundle.splits[0].name) == ("no", "2019-07-28", "on")
    assert bundle.splits[0].policy.per_day == 16 and bundle.splits[0].policy.open is False


def test_the_top_level_must_be_a_mapping_and_the_yaml_valid(tmp_path):
    assert refused(make(tmp_path / "a", "- 1\n- 2\n", {})) == [
        "benchmark.yaml: expected a mapping of keys (format, slug, ...), got a list (benchmark.yaml:1)"
    ]
    assert refused(make(tmp_path / "b", "format: 1\nslug: a\n  name: x\n", {})) == [
        "benchmark.yaml: not valid YAML: mapping values are not allowed in this context (benchmark.yaml:3)"
    ]
    assert refused(make(tmp_path / "c", "", {})) == [
        "benchmark.yaml: the file is empty: a bundle's benchmark.yaml describes a benchmark"
    ]
    assert refused(tmp_path / "d") == [f"benchmark.yaml: {tmp_path / 'd'} is not a folder"]
    (tmp_path / "e").mkdir()
    assert refused(tmp_path / "e") == ["benchmark.yaml: the file is missing from the bundle"]


# --- hostile benchmark.yaml --------------------------------------------------------------------------------


def test_a_50_mb_benchmark_yaml_is_refused_reading_at_most_a_megabyte(tmp_path):
    folder = make(tmp_path, "", {})
    with open(folder / "benchmark.yaml", "wb") as handle:
        handle.truncate(50 * MB)  # sparse: costs no disk
    tracemalloc.start()
    try:
        found = refused(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == ["benchmark.yaml: the file is over 1 MiB (52,428,800 bytes)"]
    assert peak < MB // 4, peak  # nothing of it was read
    # One byte over is refused too; exactly 1 MiB is read (and found to be no mapping).
    (folder / "benchmark.yaml").write_bytes(b"#" * (MB + 1))
    assert refused(folder) == ["benchmark.yaml: the file is over 1 MiB (1,048,577 bytes)"]
    (folder / "benchmark.yaml").write_bytes(b"a: 1\n" + b"#" * (MB - 5))
    assert refused(folder)[0].startswith("format: required, but missing")


def billion_laughs(depth: int) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, depth)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_its_first_anchor_for_the_same_small_work_at_any_depth(tmp_path):
    lines = {}
    for depth in (3, 30):
        folder = make(tmp_path / str(depth), billion_laughs(depth), {})
        error, lines[depth] = python_lines(raised(lambda folder=folder: read_bundle(folder), BundleError), 50_000)
        assert [str(p) for p in error.problems] == [
            "benchmark.yaml: YAML anchors and aliases (& and *) are not allowed: write each value out "
            "(benchmark.yaml:1)"
        ]
    assert lines[30] <= lines[3] + 500, lines  # the depth is never reached


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "format: 1\nslug: &s toy\n",
            "YAML anchors and aliases (& and *) are not allowed: write each value out (benchmark.yaml:2)",
        ),
        (
            "format: 1\nslug: !!str toy\n",
            "YAML tags (tag:yaml.org,2002:str) are not allowed: write plain values (benchmark.yaml:2)",
        ),
        (
            "format: !!python/object:os.system 1\n",
            "YAML tags (tag:yaml.org,2002:python/object:os.system) are not allowed: write plain values "
            "(benchmark.yaml:1)",
        ),
        (
            "format: 1\nsplits:\n  - <<: {slug: a}\n",
            "YAML merge keys (<<) are not allowed: write each key out (benchmark.yaml:3)",
        ),
        (
            "format: 1\n---\nformat: 1\n",
            "more than one YAML document (---): a bundle's file holds one (benchmark.yaml:2)",
        ),
        ("a: " + "[" * 40 + "]" * 40 + "\n", "nested more than 32 levels deep (benchmark.yaml:1)"),
        ("? [a]\n: 1\n", "a mapping's key must be text, not a list or a mapping (benchmark.yaml:1)"),
    ],
    ids=["anchor", "tag", "python-tag", "merge-key", "two-documents", "deep", "complex-key"],
)
def test_hostile_yaml_is_refused_at_the_event_before_any_node_is_built(tmp_path, text, words):
    assert refused(make(tmp_path, text, {})) == [f"benchmark.yaml: {words}"]


def test_a_benchmark_yaml_not_in_utf8_is_refused_naming_its_line(tmp_path):
    text = MINIMAL.replace("name: Toy", "name: Caf\xe9").encode("latin-1")
    assert refused(make(tmp_path, text, {})) == ["benchmark.yaml: not UTF-8 text: byte 0xe9 (benchmark.yaml:3)"]
    bom = b"\xef\xbb\xbf" + MINIMAL.encode()  # a byte-order mark is allowed
    assert read_bundle(make(tmp_path / "bom", bom, {"labels.jsonl": LABELS})).bundle.slug == "toy"


# --- hostile files ------------------------------------------------------------------------------------------


def with_labels(name: str) -> str:
    return MINIMAL.replace("file: labels.jsonl", f"file: {name}")


@pytest.mark.parametrize(
    "name",
    ["/etc/passwd", "../outside.jsonl", "a/../../x", "a\\\\b.jsonl", '"a\\0b"', "C:/x", "./labels.jsonl", "a//b"],
    ids=["absolute", "dotdot", "inner-dotdot", "backslash", "nul", "drive", "dot", "empty-part"],
)
def test_a_file_path_that_could_leave_the_folder_is_refused_unread(tmp_path, name):
    (tmp_path / "outside.jsonl").write_bytes(LABELS)
    found = refused(make(tmp_path / "bundle", with_labels(name), {}))
    assert len(found) == 1 and found[0].startswith("splits[0].labels.file: expected a path inside the bundle folder")
    assert found[0].endswith("(benchmark.yaml:8)")


def test_a_symlink_anywhere_on_a_files_path_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "labels.jsonl").write_bytes(LABELS)
    folder = make(tmp_path / "bundle", with_labels("gold/labels.jsonl"), {})
    (folder / "gold").symlink_to(outside)  # a folder on the path
    assert refused(folder) == [
        'splits[0].labels.file: "gold/labels.jsonl" is or passes through a symbolic link: refused (benchmark.yaml:8)'
    ]
    folder = make(tmp_path / "bundle2", MINIMAL, {})
    (folder / "labels.jsonl").symlink_to(outside / "labels.jsonl")  # the file itself, its target outside
    assert refused(folder) == [
        'splits[0].labels.file: "labels.jsonl" is or passes through a symbolic link: refused (benchmark.yaml:8)'
    ]
    folder = make(tmp_path / "bundle3", "", {"labels.jsonl": LABELS})
    (folder / "benchmark.yaml").unlink()
    (folder / "benchmark.yaml").symlink_to(tmp_path / "bundle" / "benchmark.yaml")
    assert refused(folder) == ["benchmark.yaml: the file is or passes through a symbolic link: refused"]


def test_a_missing_file_a_folder_or_a_fifo_is_refused(tmp_path):
    folder = make(tmp_path, with_labels("gold/labels.jsonl"), {})
    assert refused(folder) == [
        'splits[0].labels.file: "gold/labels.jsonl" is missing from the bundle (benchmark.yaml:8)'
    ]
    (folder / "gold").write_bytes(b"")
    assert refused(folder) == [
        'splits[0].labels.file: "gold/labels.jsonl" is missing from the bundle (gold is not a folder) '
        "(benchmark.yaml:8)"
    ]
    (folder / "gold").unlink()
    (folder / "gold").mkdir()
    (folder / "gold" / "labels.jsonl").mkdir()
    assert refused(folder) == ['splits[0].labels.file: "gold/labels.jsonl" is not a regular file (benchmark.yaml:8)']
    (folder / "gold" / "labels.jsonl").rmdir()
    os.mkfifo(folder / "gold" / "labels.jsonl")  # reading it would wait for a writer forever
    assert refused(folder) == ['splits[0].labels.file: "gold/labels.jsonl" is not a regular file (benchmark.yaml:8)']


def test_a_sha256_that_differs_names_the_key_its_line_and_both_digests(tmp_path):
    changed = LABELS + b"\n"
    folder = make(tmp_path, MINIMAL, {"labels.jsonl": changed})
    assert refused(folder) == [
        f'splits[0].labels.sha256: "labels.jsonl" has sha256 {sha(changed)[:12]}…, benchmark.yaml says '
        f"{sha(LABELS)[:12]}… (benchmark.yaml:8)"
    ]


def test_files_over_the_size_cap_are_refused_by_their_size(tmp_path):
    folder = make(tmp_path, MINIMAL, {"labels.jsonl": LABELS})
    assert refused(folder, max_file_bytes=len(LABELS) - 1) == [
        f'splits[0].labels.file: "labels.jsonl" is over {len(LABELS) - 1:,} bytes ({len(LABELS):,} bytes) '
        "(benchmark.yaml:8)"
    ]
    assert read_bundle(folder, max_file_bytes=len(LABELS)).files == {"labels.jsonl": LABELS}


def test_a_gz_is_pinned_by_its_bytes_and_read_decompressed_within_its_bounds(tmp_path):
    content = LABELS * 20
    packed = gzip.compress(content, mtime=0)
    text = with_labels("labels.jsonl.gz").replace(sha(LABELS), sha(packed))
    loaded = read_bundle(make(tmp_path / "ok", text, {"labels.jsonl.gz": packed}))
    assert loaded.files == {"labels.jsonl.gz": content}
    # More than the cap once decompressed; a bomb (16 MiB of zeros in 16 kB); not gzip at all.
    assert refused(make(tmp_path / "cap", text, {"labels.jsonl.gz": packed}), max_file_bytes=len(content) - 1) == [
        f'splits[0].labels.file: "labels.jsonl.gz" decompresses to over {len(content) - 1:,} bytes (benchmark.yaml:8)'
    ]
    bomb = gzip.compress(b"\0" * (16 * MB), mtime=0)
    tracemalloc.start()
    try:
        found = refused(make(tmp_path / "bomb", text.replace(sha(packed), sha(bomb)), {"labels.jsonl.gz": bomb}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == [
        f'splits[0].labels.file: "labels.jsonl.gz" expands over 100 times its {len(bomb):,} bytes: refused as a '
        "compression bomb (benchmark.yaml:8)"
    ]
    # Never the whole of it: what is decompressed stops at MAX_RATIO times the .gz's size (here 1.6 MiB) + 1 MiB.
    assert peak < 16 * MB / 3, peak
    found = refused(make(tmp_path / "bad", text.replace(sha(packed), sha(LABELS)), {"labels.jsonl.gz": LABELS}))
    assert len(found) == 1 and found[0].startswith('splits[0].labels.file: "labels.jsonl.gz" is not a valid gzip file')


def test_a_file_named_by_many_keys_is_read_and_decompressed_once(tmp_path, monkeypatch):
    bomb = gzip.compress(b"\0" * (4 * MB), mtime=0)
    ids = f"{{file: same.gz, sha256: {sha(bomb)}}}"
    text = MINIMAL + "    subsets:\n" + "".join(f"      - {{name: s{n}, ids: {ids}}}\n" for n in range(300))
    folder = make(tmp_path, text, {"labels.jsonl": LABELS, "same.gz": bomb})
    reads, unpacks = [], []
    read_file, gunzip = reading._Folder.file, reading._gunzip

    def counted_read(self, name):
        reads.append(name)
        return read_file(self, name)

    def counted_gunzip(name, *args):
        unpacks.append(name)
        return gunzip(name, *args)

    monkeypatch.setattr(reading._Folder, "file", counted_read)
    monkeypatch.setattr(reading, "_gunzip", counted_gunzip)
    found = refused(folder)
    assert len(found) == 300 and all("refused as a compression bomb" in problem for problem in found)
    assert sorted(reads) == ["labels.jsonl", "same.gz"] and unpacks == ["same.gz"]


def test_files_the_yaml_does_not_name_are_ignored(tmp_path):
    folder = make(tmp_path, MINIMAL, {"labels.jsonl": LABELS, "notes.txt": b"x"})
    os.symlink("/etc/passwd", folder / "elsewhere")
    assert read_bundle(folder).files == {"labels.jsonl": LABELS}


# --- zips ----------------------------------------------------------------------------------------------------


def zipped(entries: dict[str, bytes], *, mode: int = 0o100644, compress: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in entries.items():
                info = zipfile.ZipInfo(name.removesuffix("#again"))
                info.external_attr = mode << 16 if name != "link" else 0o120777 << 16
                info.compress_type = compress
                archive.writestr(info, data)
    return buffer.getvalue()


def test_a_zip_reads_with_its_yaml_at_the_root_or_in_one_top_folder():
    flat = zipped({"benchmark.yaml": EXAMPLE.encode(), **FILES})
    nested = zipped(
        {f"nli3/{name}": data for name, data in {"benchmark.yaml": EXAMPLE.encode(), **FILES}.items()}
        | {"__MACOSX/nli3/._benchmark.yaml": b"resource fork"}
    )
    assert read_bundle_zip(flat).files == read_bundle_zip(nested).files == FILES
    assert read_bundle_zip(flat).bundle == read_bundle_zip(nested).bundle
    two_tops = zipped({"a/benchmark.yaml": EXAMPLE.encode(), "b/x": b""})
    assert problems(lambda: read_bundle_zip(two_tops)) == [
        "benchmark.yaml: the .zip holds no benchmark.yaml at its root or in one top folder"
    ]
    assert problems(lambda: read_bundle_zip(b"PK not a zip")) == [
        "benchmark.yaml: not a valid .zip file (File is not a zip file)"
    ]


def encrypted(data: bytes) -> bytes:
    """The zip with each entry's "encrypted" flag set in the central directory."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        out[at + 8] |= 1
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ({"../benchmark.yaml": b""}, 'the .zip entry "../benchmark.yaml" is not a plain relative path: refused'),
        ({"/benchmark.yaml": b""}, 'the .zip entry "/benchmark.yaml" is not a plain relative path: refused'),
        ({"a\\b": b""}, 'the .zip entry "a\\\\b" is not a plain relative path: refused'),
        ({"link": b"/etc/passwd"}, 'the .zip entry "link" is a symbolic link: refused'),
        ({"benchmark.yaml": b"", "benchmark.yaml#again": b""}, 'the .zip holds "benchmark.yaml" twice: refused'),
        ({"zeros": b"\0" * (2 * MB)}, 'the .zip entry "zeros" expands 2,097,152 bytes from '),
    ],
    ids=["dotdot", "absolute", "backslash", "symlink", "duplicate", "bomb"],
)
def test_a_hostile_zip_is_refused_before_any_entry_is_read(entries, words):
    (found,) = problems(lambda: read_bundle_zip(zipped(entries)))
    assert found.startswith(f"benchmark.yaml: {words}"), found


def test_an_encrypted_too_big_or_too_crowded_zip_is_refused(monkeypatch):
    data = zipped({"benchmark.yaml": MINIMAL.encode(), "labels.jsonl": LABELS})
    assert problems(lambda: read_bundle_zip(encrypted(data))) == [
        'benchmark.yaml: the .zip entry "benchmark.yaml" is encrypted: refused'
    ]
    assert problems(lambda: read_bundle_zip(data, max_file_bytes=len(MINIMAL))) == [
        f"benchmark.yaml: the .zip's files add up to over {len(MINIMAL):,} bytes uncompressed: refused"
    ]
    monkeypatch.setattr(reading, "MAX_ZIP_ENTRIES", 1)
    assert problems(lambda: read_bundle_zip(data)) == ["benchmark.yaml: the .zip holds 2 entries, over the limit of 1"]


def test_a_zips_big_benchmark_yaml_is_refused_by_its_declared_size():
    data = zipped({"benchmark.yaml": b"#" * (3 * MB)}, compress=zipfile.ZIP_STORED)
    assert problems(lambda: read_bundle_zip(data)) == ["benchmark.yaml: the file is over 1 MiB (3,145,728 bytes)"]


# --- the canonical form --------------------------------------------------------------------------------------


def test_the_canonical_form_reads_back_as_itself_and_writes_the_same_bytes(tmp_path):
    read = read_bundle(make(tmp_path / "example", EXAMPLE))
    write_bundle(read.bundle, read.files, tmp_path / "one")
    again = read_bundle(tmp_path / "one")
    assert again.bundle == read.bundle and again.files == read.files
    write_bundle(again.bundle, again.files, tmp_path / "two")
    for name in ("benchmark.yaml", *FILES):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    text = again.yaml_bytes.decode()
    assert text == canonical_yaml(read.bundle).decode() and text.endswith("\n") and "\r" not in text
    assert text.startswith("# A Holdout bundle (format 1): one benchmark, whole.")
    for line in (
        "description: |",
        "    policy:",
        "      total: none",
        "      sealed: 0",
        "      opens: 2026-12-01T00:00Z",
    ):
        assert line in text.splitlines() or line + "\n" in text, line


def test_every_key_is_written_out_in_the_specs_order(tmp_path):
    bundle = read_bundle(make(tmp_path, MINIMAL, {"labels.jsonl": LABELS})).bundle
    text = canonical_yaml(bundle).decode()
    keys = [line.strip().lstrip("- ").split(":")[0] for line in text.splitlines()[1:]]
    assert keys == [
        "format", "slug", "name", "description", "paper_url", "task", "default_split", "columns", "entry_fields",
        "tracks", "splits",
        "slug", "name", "hidden", "labels", "file", "sha256", "annotations", "choices", "subset_field", "subsets",
        "policy", "per_day", "per_month", "total", "rejected_per_day", "feedback", "open", "sealed",
        "phase", "opens", "closes", "reveal", "references",
    ]  # fmt: skip
    assert '\ndescription: ""\n' in text and "\npaper_url: null\n" in text and "      per_day: 5\n" in text
    assert "      reveal: none\n" in text and "    subsets: []\n" in text


ODD_TEXT = [
    "yes", "no", "null", "~", "123", "1.5", "0x1F", ".inf", "- dash", "a: b", "a #b", "ends:", "[x]", "{y}", "'q'",
    '"dq"', " lead", "trail ", "tab\there", "back\\slash", "line\nbreak\n", "two\nlines", "Zürich ☃", "\u2028",
    "bell\a", "", "%x", "@at", "`tick", "!bang", "&amp", "*star", "|pipe", ">fold", "?q", "none", "True",
]  # fmt: skip


def test_odd_text_is_quoted_where_needed_and_reads_back_the_same(tmp_path):
    base = read_bundle(make(tmp_path / "example", EXAMPLE)).bundle
    split = base.splits[0]
    for index, odd in enumerate(ODD_TEXT):
        subsets = [{"name": odd or "x", "ids": split.subsets[0].ids}]
        references = [{"name": odd or "x", "scores": {odd: {odd: 50}}, "source": None, "date": None}]
        changed = Bundle.model_validate(
            {
                **dict(base),
                "description": odd,
                "task": {
                    "type": "classification",
                    "label": odd or "x",
                    "labels": ["a", "b"],
                    "gold": {"format": "jsonl", "id": "id", "label": "label"},
                    "predictions": {"format": "csv", "id": "id", "label": "label"},
                },
                "splits": [{**dict(split), "subsets": subsets, "references": references, "subset_field": odd or None}],
            }
        )
        folder = tmp_path / f"odd{index}"
        write_bundle(changed, FILES, folder)
        again = read_bundle(folder)
        assert again.bundle == changed, odd
        assert again.yaml_bytes == canonical_yaml(again.bundle)


def test_the_zip_is_the_same_bytes_every_time_and_reads_back(tmp_path):
    read = read_bundle(make(tmp_path, EXAMPLE))
    data = bundle_zip(read.bundle, read.files)
    assert data == bundle_zip(read.bundle, dict(reversed(list(read.files.items()))))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
    assert [info.filename for info in infos] == sorted(["benchmark.yaml", *FILES])
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    again = read_bundle_zip(data)
    assert again.bundle == read.bundle and again.files == read.files
    assert again.yaml_bytes == canonical_yaml(read.bundle)


def test_canonical_files_put_every_file_where_export_does_uncompressed(tmp_path):
    packed = gzip.compress(LABELS, mtime=0)
    text = MINIMAL.replace("file: labels.jsonl", "file: gold/x.jsonl.gz").replace(sha(LABELS), sha(packed))
    text += f"    subsets:\n      - {{name: 'odd/../name', ids: {{file: ids.txt, sha256: {sha(b'a')}}}}}\n"
    read = read_bundle(make(tmp_path, text, {"gold/x.jsonl.gz": packed, "ids.txt": b"a"}))
    bundle, files = canonical_files(read.bundle, read.files)
    assert files == {"splits/test/labels.jsonl": LABELS, "splits/test/subsets/1.txt": b"a"}
    assert bundle.splits[0].labels.sha256 == sha(LABELS) and bundle.splits[0].subsets[0].name == "odd/../name"
    with pytest.raises(BundleError, match="has sha256"):  # the .gz's digest does not pin its content
        write_bundle(read.bundle, read.files, tmp_path / "raw")
    write_bundle(bundle, files, tmp_path / "out")
    assert read_bundle(tmp_path / "out").bundle == bundle


def test_writing_refuses_a_folder_that_holds_anything_and_content_that_differs(tmp_path):
    read = read_bundle(make(tmp_path / "in", EXAMPLE))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_bytes(b"")
    assert problems(lambda: write_bundle(read.bundle, read.files, tmp_path / "full")) == [
        f"benchmark.yaml: {tmp_path / 'full'} is not an empty folder: a bundle is written into an empty one"
    ]
    files = {**read.files, "splits/dev/choices.json": b"[]"}
    found = problems(lambda: bundle_zip(read.bundle, files))
    assert len(found) == 1 and found[0].startswith("splits[0].choices.sha256: the content given for")
    del files["splits/dev/choices.json"]
    assert problems(lambda: write_bundle(read.bundle, files, tmp_path / "new")) == [
        "splits[0].choices.file: no content given for 'splits/dev/choices.json'"
    ]
    assert not (tmp_path / "new").exists()


def test_a_bundle_built_in_python_equals_the_one_read(tmp_path):
    """What a service builds from its tables (dates as objects, "none" as None) is the bundle the file gives."""
    read = read_bundle(make(tmp_path, EXAMPLE)).bundle
    split = read.splits[0]
    built = Bundle(
        format=1,
        slug="nli3",
        name="Three-way NLI",
        description="One or two sentences.\n",
        paper_url="https://example.org/paper",
        task="nlvr2",
        default_split="dev",
        splits=[
            {
                **dict(split),
                "policy": {"per_day": 5, "per_month": 20, "total": None, "feedback": "ladder"},
                "phase": {
                    "opens": date(2026, 12, 1),
                    "closes": "2027-03-01T23:59:00+00:00",
                    "reveal": split.phase.reveal,
                },
            }
        ],
    )
    assert built == read
    with pytest.raises(ValueError, match="sealed"):
        Bundle.model_validate({**dict(read), "splits": [{**dict(split), "policy": {"sealed": 0.5}}]})


# --- the JSON Schema ------------------------------------------------------------------------------------------


def test_the_schema_is_2020_12_and_takes_the_example_as_the_reader_does(tmp_path):
    schema = bundle_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "/api/v1/schemas/bundle.json"
    assert (
        bundle_schema("https://holdout.example.org/")["$id"] == "https://holdout.example.org/api/v1/schemas/bundle.json"
    )
    validator = jsonschema.Draft202012Validator(schema)
    for text in (EXAMPLE, MINIMAL, canonical_yaml(read_bundle(make(tmp_path, EXAMPLE)).bundle).decode()):
        document = reading.compose(text).value
        assert not list(validator.iter_errors(document)), text
    wrong = reading.compose(
        EXAMPLE.replace(" per_day: 5 ", " per_day: ten ").replace("feedback: ladder", "feedback: x")
    ).value
    messages = sorted(error.json_path for error in validator.iter_errors(wrong))
    assert messages == ["$.splits[0].policy.feedback", "$.splits[0].policy.per_day"]


def test_the_maintainers_page_shows_the_schema_generated_from_the_models():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (REPO / "docs" / "maintainers" / "bundles.md").read_text(encoding="utf-8")
    assert hooks.BUNDLE_MARKER in page
    built = hooks.on_page_markdown(page, None, None, None)
    assert hooks.BUNDLE_MARKER not in built
    for model in ("Bundle", "EntryFieldSpec", "SplitSpec", "Policy", "Phase", "FileRef", "SubsetSpec", "ReferenceSpec"):
        assert f"{{#bundle-{model.lower()}}}" in built, model
    assert "| `per_day` |" in built and "| `rejected_per_day` |" in built
    assert "/api/v1/schemas/bundle.json" in built and "## Applying and exporting" in built
