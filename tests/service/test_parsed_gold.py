"""A split's gold parsed once and shared (label_files with app/evaluation/mapped_gold.py): the folder of arrays is
written when the split is added or corrected, mapped by a process that starts afresh without parsing the file
again, made again from the checked gold file when it is deleted or damaged, and measured for /metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app import observability, synthetic
from app.evaluation import get_task, mapped_gold
from app.services import catalog
from app.services.catalog import label_files
from app.services.maintenance import label_audits


@pytest.fixture
def counted(monkeypatch):
    """How often a gold file is parsed and a folder written (every split shared: these splits are small)."""
    monkeypatch.setattr(label_files, "SHARE_FROM", 0)
    counts = {"parsed": 0, "written": 0}
    write = mapped_gold.write

    def counting_write(gold, folder):
        counts["written"] += 1
        return write(gold, folder)

    monkeypatch.setattr(mapped_gold, "write", counting_write)
    for name in ("vqa-v2", "nlvr2"):
        task = get_task(name)
        read_gold = task.read_gold

        def counting_read(data, read_gold=read_gold):
            counts["parsed"] += 1
            return read_gold(data)

        monkeypatch.setattr(task, "read_gold", counting_read)
    return counts


def _restart() -> None:
    """What a new process has: none of the gold sets this one holds."""
    label_files._cache.clear()


def _folders(split) -> list:
    return sorted((label_files.labels_dir() / split.benchmark.slug).glob("*.parsed"))


def test_a_split_is_parsed_once_and_a_new_process_maps_it(ctx, counted):
    task = get_task("vqa-v2")
    data = task.synthetic_gold(2000, seed=1)
    catalog.add_benchmark("vqa", "vqa-v2", "VQA v2")
    split = catalog.add_split("vqa", "test-std", data, hidden=True)
    assert counted == {"parsed": 1, "written": 1}
    (folder,) = _folders(split)
    assert folder == label_files.parsed_folder(split, "vqa-v2") and folder.name.startswith(split.gold_sha256)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {path.stat().st_mode & 0o777 for path in folder.iterdir()} == {0o600}

    _restart()
    gold = label_files.load_gold(split)
    assert counted == {"parsed": 1, "written": 1}
    assert mapped_gold.mapped_bytes(gold.labels)
    predictions = task.parse(task.synthetic_predictions(data, 0.7, seed=3), gold)
    scores = task.score(gold, predictions, task.derive_subsets(gold))
    assert scores == task.score(task.read_gold(data), predictions, task.derive_subsets(task.read_gold(data)))
    label_files.load_gold(split)  # measures what the upload worked out
    private, mapped = label_files.cache_bytes()
    assert mapped >= gold.labels.nbytes and private < mapped / 4  # the gold is not this process's own again
    exposed = observability.exposition().decode()
    assert f'holdout_gold_cache_bytes{{memory="mapped"}} {float(mapped)}' in exposed
    assert f'holdout_gold_cache_bytes{{memory="private"}} {float(private)}' in exposed


def test_a_deleted_or_damaged_folder_is_made_again_from_the_checked_gold_file(ctx, counted):
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    split = catalog.add_split("nlvr2", "dev", synthetic.nlvr2_gold(300, seed=2))
    expected = get_task("nlvr2").read_gold(synthetic.nlvr2_gold(300, seed=2)).labels.tolist()
    counted.update(parsed=0, written=0)
    (folder,) = _folders(split)
    mapped_gold.remove(folder)
    _restart()
    assert label_files.load_gold(split).labels.tolist() == expected
    assert counted == {"parsed": 1, "written": 1} and _folders(split) == [folder]

    labels = folder / "labels.npy"
    damaged = bytearray(labels.read_bytes())
    damaged[-1] ^= 1
    labels.write_bytes(bytes(damaged))
    _restart()
    assert label_files.load_gold(split).labels.tolist() == expected
    assert counted == {"parsed": 2, "written": 2}
    _restart()
    label_files.load_gold(split)
    assert counted == {"parsed": 2, "written": 2}  # mended: mapped again

    # The gold file itself is checked as ever: a folder is never made from a file that changed.
    mapped_gold.remove(folder)
    gold_file = label_files.labels_dir() / split.gold_path
    gold_file.write_bytes(gold_file.read_bytes().replace(b"True", b"False", 1))
    _restart()
    with pytest.raises(label_files.GoldFileError, match="sha256"):
        label_files.load_gold(split)
    assert _folders(split) == []


def test_a_corrected_gold_file_is_parsed_once_into_a_folder_of_its_own(ctx, counted):
    gold = synthetic.nlvr2_gold(200, seed=5)
    catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
    split = catalog.add_split("nlvr2", "dev", gold)
    rows = [json.loads(line) for line in gold.decode().splitlines()]
    rows[3]["label"] = "False" if rows[3]["label"] == "True" else "True"
    corrected = ("\n".join(json.dumps(row) for row in rows) + "\n").encode()
    old = _folders(split)
    label_audits.correct_labels(None, "nlvr2", "dev", corrected, "row 3 was wrong")
    new = [folder for folder in _folders(split) if folder not in old]
    assert len(new) == 1 and new[0].name.startswith(split.gold_sha256)
    parsed = counted["parsed"]
    _restart()
    labels = label_files.load_gold(split).labels
    assert counted["parsed"] == parsed and labels[3] == (rows[3]["label"] == "True")
    assert np.array_equal(labels, get_task("nlvr2").read_gold(corrected).labels)


def test_a_small_split_is_parsed_by_each_process_and_kept_in_no_folder(ctx):
    """Under SHARE_FROM examples a folder costs more than the parse it saves: none is written."""
    gold = synthetic.nlvr2_gold(300, split="dev", seed=2)
    catalog.add_benchmark("small", "nlvr2", "Small", "x")
    split = catalog.add_split("small", "dev", gold)
    assert label_files.load_gold(split).n == 300
    assert not list(label_files.labels_dir().rglob("*.parsed"))
