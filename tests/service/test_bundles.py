"""Bundles applied, dry-run, refused and exported (issue 37): a benchmark hosted from one reviewed folder, every
change audited in one transaction, a dry run that says what applying would do (rescoring and moved positions of a
gold change too) and changes nothing, the refusals that keep stored submissions safe, and export -> apply on a
fresh server -> export giving the same bytes for every demo benchmark."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app import create_app
from app.bundles import canonical_yaml, read_bundle, write_bundle
from app.db import db
from app.evaluation import get_task
from app.evaluation.tasks import demo_benchmarks
from app.models import AuditEvent, Benchmark, GoldVersion, Reference, Split
from app.services import catalog
from app.services.boards import leaderboards
from app.services.catalog import entry_fields, label_files, tracks
from app.services.errors import Conflict, InvalidInput
from app.services.intake import submissions
from app.services.maintenance import bundles
from app.services.maintenance.demo import demo_bundle
from app.services.people import teams
from app.services.storage import checksums
from tests.conftest import make_config

pytestmark = pytest.mark.postgres(
    reason="one transaction for a whole bundle: flushes, savepoint-free rollbacks and unique slugs under each dialect"
)

N = 120


def _gold(seed: int = 1, flip: tuple[int, ...] = ()) -> bytes:
    data = get_task("nlvr2").synthetic_gold(N, seed=seed)
    if not flip:
        return data
    rows = [json.loads(line) for line in data.decode().splitlines()]
    for i in flip:
        rows[i]["label"] = "False" if rows[i]["label"] == "True" else "True"
    return ("\n".join(json.dumps(row) for row in rows) + "\n").encode()


YAML = """\
format: 1
slug: bb
name: Bundle bench
description: A benchmark from one file.
paper_url: https://example.org/bb
task: nlvr2
default_split: dev
splits:
  - slug: dev
    name: Dev
    labels: {{file: dev.jsonl, sha256: {dev}}}
    subsets:
      - name: hard
        ids: {{file: hard.txt, sha256: {hard}}}
    references:
      - name: Human
        scores: {{all: {{accuracy: 96.2}}}}
        source: https://example.org/bb
        date: 2019-07-28
  - slug: test-u
    name: Test-U
    hidden: true
    labels: {{file: test.jsonl, sha256: {test}}}
    policy: {{per_day: 3, per_month: 10, total: none, rejected_per_day: 20, feedback: ladder, open: true}}
    phase: {{opens: 2026-12-01T00:00Z, closes: 2027-03-01T23:59Z, reveal: 2027-03-15}}
"""


def _sha(data: bytes) -> str:
    return checksums.sha256(data)


def _bundle(folder: Path, *, dev: bytes | None = None, yaml_edit=None) -> Path:
    """Write the test bundle into ``folder`` (its dev gold ``dev``, its YAML passed through ``yaml_edit``)."""
    folder.mkdir(parents=True, exist_ok=True)
    dev = dev if dev is not None else _gold(1)
    test = _gold(2)
    ids = [json.loads(line)["identifier"] for line in dev.decode().splitlines()]
    hard = "".join(f"{identifier}\n" for identifier in ids[:30]).encode()
    for name, data in (("dev.jsonl", dev), ("test.jsonl", test), ("hard.txt", hard)):
        (folder / name).write_bytes(data)
    text = YAML.format(dev=_sha(dev), test=_sha(test), hard=_sha(hard))
    (folder / "benchmark.yaml").write_text(yaml_edit(text) if yaml_edit else text)
    return folder


def _state() -> tuple:
    """What the catalog holds, in numbers: benchmarks, splits, references, gold versions, audit events."""
    counts = [
        db.session.scalar(select(func.count()).select_from(model))
        for model in (Benchmark, Split, Reference, GoldVersion, AuditEvent)
    ]
    return tuple(counts)


def _label_files() -> set[Path]:
    return {path for path in label_files.labels_dir().rglob("*") if path.is_file()}


def _publish(split: Split, n: int) -> None:
    team = teams.create_team("Entrants")
    gold = label_files.gold_bytes(split)
    for i in range(n):
        data = get_task("nlvr2").synthetic_predictions(gold, 0.6 + 0.03 * i, seed=i)
        submissions.store_scored(split, team, data, model_name=f"m{i}", publish=True)


def test_a_bundle_hosts_a_benchmark_whole_audited_and_applying_it_again_changes_nothing(ctx, tmp_path):
    loaded = read_bundle(_bundle(tmp_path / "bb"))
    outcome = bundles.apply_bundle(None, loaded)
    assert outcome.applied and len(outcome.changes) >= 4
    dev, test = catalog.get_split("bb", "dev"), catalog.get_split("bb", "test-u")
    assert (dev.example_count, dev.hidden, test.hidden) == (N, False, True)
    assert [s.name for s in dev.subsets if s.source == "ids"] == ["hard"]
    assert (test.per_day, test.per_month, test.total, test.rejected_per_day, test.feedback) == (
        3,
        10,
        None,
        20,
        "ladder",
    )
    assert test.closes_at is not None and test.reveal_planned_at is not None
    assert dev.benchmark.default_split_id == dev.id
    (reference,) = db.session.scalars(select(Reference).where(Reference.split_id == dev.id))
    assert (reference.name, json.loads(reference.scores), str(reference.published_on)) == (
        "Human",
        {"all": {"accuracy": 96.2}},
        "2019-07-28",
    )
    vias = set(db.session.scalars(select(AuditEvent.details)))
    assert vias and all("bundle-cli" in details for details in vias)
    before = _state()
    again = bundles.apply_bundle(None, read_bundle(tmp_path / "bb"))
    assert again.changes == [] and _state() == before


def test_a_dry_run_says_what_would_change_and_changes_nothing_not_even_a_file(ctx, tmp_path):
    before, files = _state(), _label_files()
    outcome = bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "bb")), dry_run=True)
    assert not outcome.applied
    said = "\n".join(f"{change.target}: {change.summary}" for change in outcome.changes)
    assert "bb: benchmark added (nlvr2)" in said and "bb/test-u: split added: 120 examples, hidden" in said
    assert "subset 'hard' added (30 examples)" in said and "reference 'Human' added" in said
    assert _state() == before and _label_files() == files


def test_a_changed_gold_file_is_a_versioned_correction_and_its_dry_run_counts_what_moves(ctx, tmp_path):
    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1")))
    _publish(catalog.get_split("bb", "dev"), 6)
    corrected = _bundle(tmp_path / "v2", dev=_gold(1, flip=(0, 1, 2, 3, 4)))
    before, files = _state(), _label_files()

    dry = bundles.apply_bundle(None, read_bundle(corrected), dry_run=True)
    (said,) = [change.summary for change in dry.changes if "gold file" in change.summary]
    assert "5 labels changed; 6 stored submissions to rescore;" in said and "board position" in said
    assert _state() == before and _label_files() == files

    with pytest.raises(InvalidInput) as refused:
        bundles.apply_bundle(None, read_bundle(corrected))
    assert "splits[0].labels: the gold file of bb/dev changed: a label correction needs a reason" in str(
        [p.message for p in refused.value.problems]
    )
    assert _state() == before

    done = bundles.apply_bundle(None, read_bundle(corrected), reason="five flipped labels fixed")
    assert any("version 2" in change.summary for change in done.changes)
    (version,) = db.session.scalars(select(GoldVersion))
    assert (version.version, version.labels_changed, version.note) == (2, 5, "five flipped labels fixed")


def test_what_would_harm_stored_submissions_is_refused_whole_with_every_reason(ctx, tmp_path):
    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1")))
    _publish(catalog.get_split("bb", "dev"), 2)
    before = _state()

    def hostile(text: str) -> str:
        text = text.replace("task: nlvr2", "task: nlvr-structured").replace("    hidden: true\n", "")
        text = text.replace("default_split: dev", "default_split: test-u")
        # dev (with its 2 submissions) left out: the split list keeps test-u only
        start, end = text.index("  - slug: dev"), text.index("  - slug: test-u")
        return text[:start] + text[end:]

    with pytest.raises(Conflict) as refused:
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v2", yaml_edit=hostile)), dry_run=True)
    messages = [problem.message for problem in refused.value.problems]
    assert any(m.startswith("task: bb is a nlvr2 benchmark") for m in messages)
    assert any("splits[0].hidden: bb/test-u is hidden" in m for m in messages)
    assert any("bb/dev is not in the bundle and has 2 stored submissions" in m for m in messages)
    assert _state() == before


def test_a_split_nobody_uploaded_to_may_go_and_the_landing_split_follows(ctx, tmp_path):
    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1")))

    def without_test(text: str) -> str:
        return text[: text.index("  - slug: test-u")]

    outcome = bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v2", yaml_edit=without_test)))
    assert any(change.summary == "split removed (no submissions)" for change in outcome.changes)
    assert [split.slug for split in catalog.get_benchmark("bb").splits] == ["dev"]


def test_export_writes_the_bundle_it_was_hosted_from_byte_for_byte(ctx, tmp_path):
    source = tmp_path / "source"
    loaded = read_bundle(_bundle(tmp_path / "draft"))
    bundles.apply_bundle(None, loaded)
    bundle, files = bundles.export_bundle("bb")
    # The console's benchmark.yaml, made without reading the files, is the export's.
    assert bundles.bundle_text("bb") == canonical_yaml(bundle).decode()
    write_bundle(bundle, files, source)
    # The canonical form: applying it changes nothing, and exporting again writes the same bytes.
    assert bundles.apply_bundle(None, read_bundle(source)).changes == []
    again, again_files = bundles.export_bundle("bb")
    assert canonical_yaml(again) == (source / "benchmark.yaml").read_bytes()
    assert again_files == {path: (source / path).read_bytes() for path in again_files}


def _fresh_app(tmp_path: Path, name: str, backend, template):
    folder = tmp_path / name
    folder.mkdir()
    return create_app(make_config(folder, backend.new_database(folder, template=template, name=name)))


def test_every_demo_benchmark_survives_export_apply_export_on_a_fresh_server(
    ctx, tmp_path, database_backend, migrated_database
):
    """The demo's bundles, small (200 examples a split, the same shapes: annotations, choices, references,
    hidden splits, policies), applied here; exported, applied on a fresh server, exported again: same bytes."""
    exported = {}
    for seed, spec in enumerate(demo_benchmarks()):
        small = dataclasses.replace(spec, splits=tuple(dataclasses.replace(s, size=200) for s in spec.splits))
        bundle, files = demo_bundle(small, seed)
        write_bundle(bundle, files, tmp_path / "demo" / spec.slug)
        bundles.apply_bundle(None, read_bundle(tmp_path / "demo" / spec.slug), via="demo")
        first, first_files = bundles.export_bundle(spec.slug)
        write_bundle(first, first_files, tmp_path / "first" / spec.slug)
        exported[spec.slug] = (canonical_yaml(first), first_files)
    fresh = _fresh_app(tmp_path, "fresh", database_backend, migrated_database)
    with fresh.app_context():
        for slug, (yaml_bytes, files) in exported.items():
            bundles.apply_bundle(None, read_bundle(tmp_path / "first" / slug))
            second, second_files = bundles.export_bundle(slug)
            assert canonical_yaml(second) == yaml_bytes == bundles.bundle_text(slug).encode(), slug
            assert second_files == files, slug
        db.engine.dispose()
    assert len(exported) == len(demo_benchmarks()) >= 9


def test_the_command_line_dry_runs_applies_and_exports_and_a_bad_bundle_exits_2_naming_every_problem(app, tmp_path):
    runner = app.test_cli_runner()
    folder = _bundle(tmp_path / "bb")
    dry = runner.invoke(args=["bundle", "apply", str(folder), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "bb: would change (" in dry.output and "  bb/test-u: split added: 120 examples, hidden" in dry.output
    assert dry.output.rstrip().endswith("dry run: nothing was changed")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Benchmark)) == 0

    done = runner.invoke(args=["bundle", "apply", str(folder)])
    assert done.exit_code == 0 and "bb: changed (" in done.output
    again = runner.invoke(args=["bundle", "apply", str(folder)])
    assert "nothing to change" in again.output

    out = tmp_path / "exported"
    exported = runner.invoke(args=["bundle", "export", "bb", str(out)])
    assert exported.exit_code == 0 and (out / "benchmark.yaml").is_file()
    assert runner.invoke(args=["bundle", "export", "bb", str(out)]).exit_code == 2  # not into a full folder

    def broken(text: str) -> str:
        return text.replace("per_day: 3", 'per_day: "ten"').replace("name: Dev\n", "name: Dev\n    colour: red\n")

    bad = _bundle(tmp_path / "bad", yaml_edit=broken)
    (bad / "test.jsonl").write_bytes(b"tampered\n")
    with app.app_context():
        before, files = _state(), _label_files()
    refused = runner.invoke(args=["bundle", "apply", str(bad)])
    assert refused.exit_code == 2
    lines = refused.output.splitlines()
    assert any(line.startswith("splits[0].colour: ") and "(benchmark.yaml:11)" in line for line in lines), lines
    assert any(line.startswith('splits[1].policy.per_day: expected an integer or "none", got "ten"') for line in lines)
    assert any(line.startswith('splits[1].labels.sha256: "test.jsonl" has sha256 ') for line in lines)
    with app.app_context():
        assert (_state(), _label_files()) == (before, files)


def _hostile(folder: Path, kind: str) -> Path:
    """The test bundle made hostile one way."""
    _bundle(folder)
    yaml_path = folder / "benchmark.yaml"
    text = yaml_path.read_text()
    if kind == "50 MB of YAML":
        with yaml_path.open("a") as handle:
            handle.write(("# " + "x" * 1022 + "\n") * 50 * 1024)
    elif kind == "anchors that expand exponentially":
        laughs = "".join(f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}, *l{i - 1}, *l{i - 1}]\n" for i in range(1, 30))
        yaml_path.write_text("l0: &l0 [lol]\n" + laughs + text)
    elif kind == "a path that leaves the folder":
        yaml_path.write_text(text.replace("file: dev.jsonl", "file: ../dev.jsonl"))
        (folder.parent / "dev.jsonl").write_bytes((folder / "dev.jsonl").read_bytes())
    elif kind == "a symlink":
        outside = folder.parent / "elsewhere.jsonl"
        outside.write_bytes((folder / "dev.jsonl").read_bytes())
        (folder / "dev.jsonl").unlink()
        (folder / "dev.jsonl").symlink_to(outside)
    elif kind == "a gold file whose sha256 differs":
        (folder / "dev.jsonl").write_bytes(_gold(7))
    return folder


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("50 MB of YAML", "benchmark.yaml: the file is over 1 MiB"),
        ("anchors that expand exponentially", "anchor"),
        ("a path that leaves the folder", "splits[0].labels.file"),
        ("a symlink", "symbolic link"),
        ("a gold file whose sha256 differs", 'splits[0].labels.sha256: "dev.jsonl" has sha256'),
    ],
)
def test_a_hostile_bundle_exits_2_with_a_clear_error_and_nothing_stored(app, tmp_path, kind, said):
    folder = _hostile(tmp_path / "bb", kind)
    with app.app_context():
        before, files = _state(), _label_files()
    refused = app.test_cli_runner().invoke(args=["bundle", "apply", str(folder)])
    assert refused.exit_code == 2 and said in refused.output, refused.output
    assert "Traceback" not in refused.output and len(refused.output) < 2000
    with app.app_context():
        assert (_state(), _label_files()) == (before, files)


def test_the_boards_default_columns_are_the_bundles_choice_and_a_column_no_board_has_is_refused(ctx, tmp_path):
    def chosen(columns: str):
        return lambda text: text.replace("default_split: dev\n", f"default_split: dev\ncolumns: {columns}\n")

    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1", yaml_edit=chosen("[hard:accuracy, all:accuracy]"))))
    dev = catalog.get_split("bb", "dev")
    assert [column.key for column in leaderboards.columns(dev)] == ["hard:accuracy", "all:accuracy"]
    before = _state()
    for columns, said in (
        ("[all:accuracy, easy:accuracy]", "columns[1]: no board of bb has a column 'easy:accuracy'"),
        ("[all:consistency]", "columns: must include all:accuracy (the metric boards rank on)"),
    ):
        with pytest.raises(InvalidInput) as refused:
            bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / columns[1:6], yaml_edit=chosen(columns))))
        assert said in [problem.message for problem in refused.value.problems]
        assert _state() == before
    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v2")))  # none: the task type's own choice again
    assert [column.key for column in leaderboards.columns(catalog.get_split("bb", "dev"))][:2] == [
        "all:accuracy",
        "all:consistency",
    ]


def test_a_new_order_of_the_splits_is_said_and_the_app_lists_them_so(ctx, tmp_path):
    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1")))

    def swapped(text: str) -> str:
        head, dev, test = (
            text[: text.index("  - slug: dev")],
            text[text.index("  - slug: dev") : text.index("  - slug: test-u")],
            text[text.index("  - slug: test-u") :],
        )
        return head + test + dev

    outcome = bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v2", yaml_edit=swapped)))
    assert [change.summary for change in outcome.changes] == ["split order: test-u, dev"]
    listed = sorted(catalog.get_benchmark("bb").splits, key=lambda split: split.position)
    assert [split.slug for split in listed] == ["test-u", "dev"]


def test_an_identifier_subset_named_as_one_the_task_derives_is_refused_not_dropped(ctx, tmp_path):
    """nlvr2 derives 'balanced' on every split: an identifier list under that name was skipped silently (the apply
    said nothing of it and the export lacked it)."""
    before, files = _state(), _label_files()
    clash = _bundle(tmp_path / "bb", yaml_edit=lambda text: text.replace("name: hard", "name: balanced"))
    with pytest.raises(Conflict) as refused:
        bundles.apply_bundle(None, read_bundle(clash))
    assert "splits[0].subsets[0] (hard.txt): subset 'balanced' of bb/dev already exists" in refused.value.message
    assert (_state(), _label_files()) == (before, files)


def test_a_refusal_found_while_applying_names_the_key_path_it_is_about(ctx, tmp_path):
    """A service's refusal in the middle of an apply (a reference's metric, an identifier list's ids) says which
    split, reference or subset of the bundle it is about, as the bundle's own checks do."""

    def bad_reference(text: str) -> str:
        return text + "    references:\n      - name: X\n        scores: {all: {bogus: 1}}\n"

    with pytest.raises(InvalidInput) as refused:
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "ref", yaml_edit=bad_reference)), dry_run=True)
    assert refused.value.message.startswith("splits[1].references[0]: scores['all']: unknown metric 'bogus'")
    unknown = b"nope-1\nnope-2\n"

    def bad_ids(text: str) -> str:
        return text.replace(_sha(_ids_of(_gold(1))), _sha(unknown))

    folder = _bundle(tmp_path / "ids", yaml_edit=bad_ids)
    (folder / "hard.txt").write_bytes(unknown)
    with pytest.raises(InvalidInput) as refused:
        bundles.apply_bundle(None, read_bundle(folder))
    assert refused.value.message.startswith("splits[0].subsets[0] (hard.txt): invalid identifier file")
    assert "splits[0].subsets[0] (hard.txt): line 2: unknown identifier 'nope-2'" in [
        problem.message for problem in refused.value.problems
    ]
    assert _state() == (0, 0, 0, 0, 0)


def _ids_of(dev: bytes) -> bytes:
    ids = [json.loads(line)["identifier"] for line in dev.decode().splitlines()]
    return "".join(f"{identifier}\n" for identifier in ids[:30]).encode()


def test_entry_fields_are_added_changed_reordered_and_exported_and_one_entries_hold_is_never_removed(ctx, tmp_path):
    def with_fields(*lines: str):
        block = "entry_fields:\n" + "".join(f"  - {line}\n" for line in lines)
        return lambda text: text.replace("splits:\n", block + "splits:\n", 1)

    zero = "{key: zero_shot, label: Zero-shot, type: yesno, filter: true}"
    size = "{key: parameters, label: Parameters, type: integer, unit: parameters, column: true}"
    outcome = bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1", yaml_edit=with_fields(zero, size))))
    said = [change.summary for change in outcome.changes]
    assert "entry field added: zero_shot (yesno)" in said and "entry field added: parameters (integer)" in said
    assert [spec.key for spec in entry_fields.list_fields("bb")] == ["zero_shot", "parameters"]
    required = size.replace("column: true", "column: true, required: true")
    outcome = bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v2", yaml_edit=with_fields(required, zero))))
    assert [change.summary for change in outcome.changes] == [
        "entry field changed: parameters (integer)",
        "entry field order: parameters, zero_shot",
    ]
    specs = entry_fields.list_fields("bb")
    assert [(spec.key, spec.required) for spec in specs] == [("parameters", True), ("zero_shot", False)]
    bundle, _ = bundles.export_bundle("bb")
    assert [(f.key, f.unit, f.required, f.column, f.filter) for f in bundle.entry_fields] == [
        ("parameters", "parameters", True, True, False),
        ("zero_shot", None, False, False, True),
    ]
    team = teams.create_team("Entrants")
    dev = catalog.get_split("bb", "dev")
    data = get_task("nlvr2").synthetic_predictions(label_files.gold_bytes(dev), 0.7, seed=1)
    submissions.store_scored(dev, team, data, model_name="m", fields={"zero_shot": True})
    before = _state()
    with pytest.raises(Conflict) as refused:
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v3", yaml_edit=with_fields(required))))
    assert "hold a value of 'zero_shot'" in refused.value.message and _state() == before
    retyped = zero.replace("type: yesno", "type: integer")
    with pytest.raises(Conflict) as refused:
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v4", yaml_edit=with_fields(required, retyped))))
    assert "entries hold values of 'zero_shot' that the new definition refuses" in refused.value.message
    assert [spec.key for spec in entry_fields.list_fields("bb")] == ["parameters", "zero_shot"]


ZERO = "{key: zero_shot, label: Zero-shot, type: yesno, filter: true}"
SIZE = "{key: parameters, label: Parameters, type: integer, unit: parameters, filter: true}"
CODE = "{key: code, label: Code, type: url}"


def _with(fields: tuple[str, ...], tracks: tuple[str, ...]):
    """A YAML edit giving the bundle these entry fields and tracks (flow mappings, one a line)."""
    block = "entry_fields:\n" + "".join(f"  - {line}\n" for line in fields) if fields else "entry_fields: []\n"
    block += "tracks:\n" + "".join(f"  - {line}\n" for line in tracks) if tracks else ""
    return lambda text: text.replace("splits:\n", block + "splits:\n", 1)


def test_tracks_are_added_changed_reordered_removed_and_exported_each_after_its_field(ctx, tmp_path):
    zero_track = "{name: zero-shot, label: Zero-shot, where: [zero_shot:yes]}"
    small = "{name: small, label: Under 1B parameters, where: [parameters<=1e9]}"
    v1 = _bundle(tmp_path / "v1", yaml_edit=_with((ZERO, SIZE), (zero_track, small)))
    before = _state()
    dry = bundles.apply_bundle(None, read_bundle(v1), dry_run=True)
    said = [change.summary for change in dry.changes]
    assert said[-2:] == ["track added: zero-shot (zero_shot:yes)", "track added: small (parameters<=1000000000)"]
    assert _state() == before
    bundles.apply_bundle(None, read_bundle(v1))
    assert [spec.as_dict() for spec in tracks.list_tracks("bb")] == [
        {"name": "zero-shot", "label": "Zero-shot", "where": ["zero_shot:yes"]},
        {"name": "small", "label": "Under 1B parameters", "where": ["parameters<=1000000000"]},
    ]
    added = db.session.scalars(select(AuditEvent.details).where(AuditEvent.action == "track.add")).all()
    assert len(added) == 2 and all(json.loads(details)["via"] == "bundle-cli" for details in added)
    assert bundles.apply_bundle(None, read_bundle(v1)).changes == []
    # The export writes each condition in its canonical form; applying it changes nothing.
    bundle, files = bundles.export_bundle("bb")
    assert [(track.name, track.where) for track in bundle.tracks] == [
        ("zero-shot", ["zero_shot:yes"]),
        ("small", ["parameters<=1000000000"]),
    ]
    write_bundle(bundle, files, tmp_path / "exported")
    assert bundles.apply_bundle(None, read_bundle(tmp_path / "exported")).changes == []
    smaller = small.replace("1e9", "100_000_000")
    v2 = _bundle(tmp_path / "v2", yaml_edit=_with((ZERO, SIZE), (smaller, zero_track)))
    assert [change.summary for change in bundles.apply_bundle(None, read_bundle(v2)).changes] == [
        "track changed: small (parameters<=100000000)",
        "track order: small, zero-shot",
    ]
    assert [spec.name for spec in tracks.list_tracks("bb")] == ["small", "zero-shot"]
    # A field goes with the track that used it (the track first), or with the track changed off it.
    moved = small.replace("parameters<=1e9", "zero_shot:no")
    v3 = _bundle(tmp_path / "v3", yaml_edit=_with((ZERO,), (moved, zero_track)))
    assert [change.summary for change in bundles.apply_bundle(None, read_bundle(v3)).changes] == [
        "entry field removed: parameters",
        "track changed: small (zero_shot:no)",
    ]
    v4 = _bundle(tmp_path / "v4", yaml_edit=_with((), ()))
    assert [change.summary for change in bundles.apply_bundle(None, read_bundle(v4)).changes] == [
        "track removed: small",
        "track removed: zero-shot",
        "entry field removed: zero_shot",
    ]
    assert tracks.list_tracks("bb") == [] and entry_fields.list_fields("bb") == []


def test_a_track_on_a_field_the_bundle_does_not_make_filterable_is_refused_naming_its_key_path(ctx, tmp_path):
    ok = "{name: zero-shot, label: Zero-shot, where: [zero_shot:yes]}"
    wrong = (
        ok,
        "{name: coded, label: Coded, where: [zero_shot:yes, code:x]}",
        "{name: big, label: Big, where: [size>=10]}",
        "{name: sized, label: Sized, where: [zero_shot<=3]}",
    )
    before = _state()
    with pytest.raises(InvalidInput) as refused:
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "bad", yaml_edit=_with((ZERO, CODE), wrong))))
    assert [problem.message for problem in refused.value.problems] == [
        "tracks[1].where[1]: the field 'code' is not one a board filters by; those it does: zero_shot",
        "tracks[2].where[0]: unknown field 'size'; the fields a board filters by: zero_shot",
        "tracks[3].where[0]: 'zero_shot' is yesno, compared only with field:value",
    ]
    assert _state() == before
    with pytest.raises(InvalidInput) as refused:
        reserved = "{name: verified, label: Mine, where: [zero_shot:yes]}"
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v", yaml_edit=_with((ZERO,), (reserved,)))))
    assert refused.value.message.startswith("tracks[0]: 'verified' is the built-in track of verified entries")
    assert _state() == before
    # A field the bundle removes while one of its tracks still filters by it: both are named.
    bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v1", yaml_edit=_with((ZERO, CODE), (ok,)))))
    before = _state()
    with pytest.raises(InvalidInput) as refused:
        bundles.apply_bundle(None, read_bundle(_bundle(tmp_path / "v2", yaml_edit=_with((CODE,), (ok,)))))
    assert [problem.message for problem in refused.value.problems] == [
        "tracks[0].where[0]: the track 'zero-shot' filters by the field 'zero_shot', which this bundle removes "
        "from entry_fields; keep the field or change the track"
    ]
    assert _state() == before and [spec.key for spec in entry_fields.list_fields("bb")] == ["zero_shot", "code"]
