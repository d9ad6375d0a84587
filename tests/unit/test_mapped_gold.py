"""Parsed gold kept as a folder of arrays (app/evaluation/mapped_gold.py): every family's gold set comes back from
its folder the same as parsed, scores and refuses every file the same, holds its arrays mapped (not in the
process's own memory) and makes Python strings only when asked; a damaged folder is refused. And the annotations
reader that feeds it streams its file a chunk at a time."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.evaluation import TASK_TYPES, ValidationError, get_task, json_files, mapped_gold
from app.evaluation.gold import GoldSet
from tests.differential import cases


def _kept(gold: GoldSet, tmp_path) -> GoldSet:
    folder = tmp_path / "gold.parsed"
    mapped_gold.write(gold, folder)
    return mapped_gold.read(folder)


def _problems(task, data: bytes, gold: GoldSet) -> list[tuple[int | None, str]] | bytes:
    """The problems a file is refused for, or what it parses to."""
    try:
        return bytes(task.parse(data, gold).tobytes())
    except ValidationError as refused:
        return [(problem.line, problem.message) for problem in refused.problems]


def _same_gold(fresh: GoldSet, mapped: GoldSet) -> None:
    assert type(mapped) is type(fresh)
    assert mapped.ids.tolist() == fresh.ids.tolist()
    assert mapped.labels.dtype == fresh.labels.dtype and mapped.labels.tobytes() == fresh.labels.tobytes()
    assert mapped.groups.tolist() == fresh.groups.tolist()
    assert list(mapped.fields) == list(fresh.fields)
    assert {k: v.tolist() for k, v in mapped.fields.items()} == {k: v.tolist() for k, v in fresh.fields.items()}
    assert (mapped.n, mapped.n_images, mapped.numeric_ids) == (fresh.n, fresh.n_images, fresh.numeric_ids)
    for name in set(vars(fresh)) - {"ids", "labels", "groups", "fields"}:
        value = getattr(fresh, name)
        if isinstance(value, np.ndarray):  # GQA's entailment pairs
            assert getattr(mapped, name).tolist() == value.tolist(), name


@pytest.mark.parametrize("name", sorted(TASK_TYPES))
def test_every_family_scores_and_refuses_the_same_from_its_folder(name, tmp_path):
    task = get_task(name)
    data = task.synthetic_gold(24, seed=3)
    fresh = task.read_gold(data)
    mapped = _kept(fresh, tmp_path)
    _same_gold(fresh, mapped)
    files = [task.synthetic_predictions(data, accuracy, seed=5) for accuracy in (0.3, 0.9)]
    stacked = [np.stack([task.parse(file, gold) for file in files]) for gold in (fresh, mapped)]
    assert stacked[0].tobytes() == stacked[1].tobytes()
    subsets = task.derive_subsets(fresh)
    assert {k: v.tolist() for k, v in task.derive_subsets(mapped).items()} == {
        k: v.tolist() for k, v in subsets.items()
    }
    assert task.score_batch(mapped, stacked[1], subsets) == task.score_batch(fresh, stacked[0], subsets)
    assert task.sample(mapped) == task.sample(fresh)
    # A file missing its last examples, and one whose first id is another: the same answer from both.
    short = task.sample(fresh)[:-40]
    assert isinstance(_problems(task, short, fresh), list)
    for bad in (short, files[0].replace(fresh.ids[0].encode(), b"9" + fresh.ids[0].encode(), 1)):
        assert _problems(task, bad, mapped) == _problems(task, bad, fresh)


@pytest.mark.parametrize("family", cases.FAMILIES)
def test_the_official_formats_bad_files_are_refused_the_same_from_the_folder(family, tmp_path):
    task = get_task(family)
    data, files = cases.make_case(family, 2, 40)
    fresh = task.read_gold(data)
    mapped = _kept(fresh, tmp_path)
    _same_gold(fresh, mapped)
    for file in files:
        assert task.parse(file, mapped).tobytes() == task.parse(file, fresh).tobytes()
    for label, bad in cases.make_bad_files(family, data):
        assert _problems(task, bad, mapped) == _problems(task, bad, fresh), label


def test_a_mapped_gold_set_holds_its_arrays_mapped_and_makes_strings_only_when_asked(tmp_path):
    task = get_task("vqa-v2")
    data = task.synthetic_gold(3000, seed=1)
    mapped = _kept(task.read_gold(data), tmp_path)
    private, shared = mapped_gold.held_bytes(mapped)
    assert private == 0 and shared > mapped.labels.nbytes
    predictions = task.parse(task.synthetic_predictions(data, 0.5, seed=2, shuffle=True), mapped)
    task.score(mapped, predictions, task.derive_subsets(mapped))
    assert "ids" not in vars(mapped)  # scored without a string made of any id
    after, _ = mapped_gold.held_bytes(mapped)
    assert after < shared / 4  # what scoring worked out (two fields' codes as objects), not the gold again
    assert mapped.ids.tolist()[:2] == [str(mapped.int_ids[0]), str(mapped.int_ids[1])]
    assert mapped_gold.held_bytes(mapped)[0] > after  # the ids made on request are counted


def test_a_damaged_or_foreign_folder_is_refused(tmp_path):
    task = get_task("nlvr2")
    folder = tmp_path / "gold.parsed"
    mapped_gold.write(task.read_gold(task.synthetic_gold(20, seed=1)), folder)
    mapped_gold.read(folder)
    labels = folder / "labels.npy"
    content = bytearray(labels.read_bytes())
    content[-1] ^= 1
    labels.write_bytes(bytes(content))
    with pytest.raises(mapped_gold.Unreadable, match="sha256"):
        mapped_gold.read(folder)
    labels.unlink()
    with pytest.raises(mapped_gold.Unreadable):
        mapped_gold.read(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "class": "builtins:object"}))
    with pytest.raises(mapped_gold.Unreadable, match="no gold set class"):
        mapped_gold.read(folder)
    mapped_gold.remove(folder)
    assert not folder.exists()
    with pytest.raises(mapped_gold.Unreadable):
        mapped_gold.read(folder)


def test_the_folder_is_private_and_named_by_reader(tmp_path):
    task = get_task("nlvr2")
    folder = tmp_path / "gold.parsed"
    mapped_gold.write(task.read_gold(task.synthetic_gold(20, seed=1)), folder)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {path.stat().st_mode & 0o777 for path in folder.iterdir()} == {0o600}
    assert mapped_gold.folder_tag("nlvr2") != mapped_gold.folder_tag("vqa-v2")


def test_a_gold_set_holding_what_no_array_can_stays_in_memory(tmp_path):
    gold = get_task("nlvr2").read_gold(get_task("nlvr2").synthetic_gold(8, seed=1))
    odd = GoldSet(gold.task, gold.ids, gold.labels, gold.groups, {"mixed": np.array([1, "a"] * 4, dtype=object)})
    with pytest.raises(mapped_gold.NotCompactable):
        mapped_gold.write(odd, tmp_path / "odd.parsed")
    assert not (tmp_path / "odd.parsed").exists()


def test_integer_ids_are_found_as_integers():
    gold = get_task("vqa-v2").read_gold(get_task("vqa-v2").synthetic_gold(50, seed=2))
    ints = gold.int_ids
    assert ints is not None and [str(value) for value in ints.tolist()] == gold.ids.tolist()
    wanted = np.array([ints[7], 5, ints[0], ints[49], -1], dtype=np.int64)
    assert gold.positions_of_ints(wanted).tolist() == [7, -1, 0, 49, -1]
    assert gold.positions_of_ints(ints).tolist() == list(range(50))
    assert get_task("nlvr2").read_gold(get_task("nlvr2").synthetic_gold(8, seed=1)).int_ids is None
    padded = GoldSet("x", np.array(["7", "07"], dtype=object), np.zeros(2, bool), np.arange(2, dtype=np.int32), {})
    assert padded.int_ids is None  # "07" is no integer as Python writes one: looked up as text


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_annotations_stream_a_few_bytes_at_a_time(chunk):
    """Numbers, keys and characters of several bytes cut at every place by the chunks come out whole."""
    document = {
        "info": {"note": "é ✓ 😀", "n": [1, 2.5e3, -17]},
        "annotations": [{"question_id": 1234567, "answers": [{"answer": "naïve 😀"}]}, 98765, "x", [], {}],
        "after": 3,
    }
    data = json.dumps(document, ensure_ascii=False, indent=1).encode()
    assert list(json_files.stream_array(data, "annotations", chunk=chunk)) == document["annotations"]
    for bad in (data[:-2], data.replace(b'"after"', b'"annotations"'), data + b"x"):
        with pytest.raises(json_files.NotStreamable):
            list(json_files.stream_array(bad, "annotations", chunk=chunk))


@pytest.mark.parametrize("config", ["NLVR2_CONFIG", "VQA_V2_CONFIG"])
def test_a_configured_type_scores_the_same_from_its_folder(config, tmp_path):
    from app.evaluation.configured import configured_task
    from tests.unit import test_configured_tasks

    task = configured_task(getattr(test_configured_tasks, config))
    builtin = get_task("vqa-v2" if config == "VQA_V2_CONFIG" else "nlvr2")
    data = builtin.synthetic_gold(30, seed=4)
    fresh = task.read_gold(data)
    mapped = _kept(fresh, tmp_path)
    _same_gold(fresh, mapped)
    for file in (builtin.synthetic_predictions(data, 0.6, seed=1), builtin.sample(builtin.read_gold(data))[:-30]):
        assert _problems(task, file, mapped) == _problems(task, file, fresh)


@pytest.mark.parametrize("name", ["vqa-v2", "gqa", "nlvr2"])
def test_a_part_of_a_mapped_gold_set_is_the_part_of_the_parsed_one(name, tmp_path):
    """A blind test's queried part (sealed.restrict): the same gold set, and of a mapped VQA v2 split made without
    a string of any id or field value."""
    from app.evaluation import sealed

    task = get_task(name)
    data = task.synthetic_gold(40, seed=6)
    fresh = task.read_gold(data)
    mapped = _kept(fresh, tmp_path)
    part = np.flatnonzero(sealed.sealed_mask(fresh.groups, 0.5, "seed"))
    _same_gold(sealed.restrict(fresh, part), sealed.restrict(mapped, part))
    (tmp_path / "again").mkdir()
    restricted = sealed.restrict(_kept(fresh, tmp_path / "again"), part)
    predictions = task.parse(task.synthetic_predictions(data, 0.5, seed=1), fresh)[part]
    subsets = sealed.restrict_subsets(task.derive_subsets(fresh), part)
    assert task.score(restricted, predictions, subsets) == task.score(
        sealed.restrict(fresh, part), predictions, subsets
    )
    if name == "vqa-v2":
        assert "ids" not in vars(restricted) and not restricted.fields.made()
