"""A task family is one folder (issue 36): the registry finds a new folder by itself, scores its files and lists
its demo benchmark; every family's folder has the same files; nothing of one family (a reader, its columns, its
metrics) is left in the shared modules; the synthetic options are one dataclass, checked once for every family;
a JSON value's type is named one way in every family's messages."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from app.evaluation import TASK_TYPES, ValidationError, get_task, tasks
from app.evaluation.json_files import json_type
from app.evaluation.tasks import demo_benchmarks
from tests.support.toy_family import DEMO_SLUG, NAME, toy_family, toy_files
from tests.unit import test_task_families as interface

TASKS = Path(tasks.__file__).parent
FOLDER_FILES = {"__init__.py", "family.py", "formats.py", "synthetic.py", "demo.py"}


def _family_folders() -> list[Path]:
    return sorted(path.parent for path in TASKS.glob("*/family.py"))


def test_a_new_folder_is_found_scored_and_listed_with_its_demo_benchmark(tmp_path):
    assert set(toy_files()) == FOLDER_FILES  # the docs page shows the whole folder
    assert NAME not in TASK_TYPES
    with toy_family(tmp_path) as toy:
        names = list(TASK_TYPES)
        assert names.index(NAME) == names.index("winoground") + 1  # its list_position, 65: between 60 and 70
        data = toy.synthetic_gold(300, seed=1)
        gold = toy.read_gold(data)
        upload = toy.synthetic_predictions(data, 0.7, seed=2)
        lines = dict(line.split(",") for line in upload.decode().splitlines())
        answers = {row["qid"]: row["answer"] for row in map(json.loads, data.decode().splitlines())}
        right = sum(int(lines[qid]) == answer for qid, answer in answers.items())
        assert toy.score(gold, toy.parse(upload, gold))["all"]["accuracy"] == pytest.approx(100 * right / 300)
        assert 60 < 100 * right / 300 < 80
        with pytest.raises(ValidationError, match="line 1: expected qid,choice"):
            toy.parse(b"q0,7\n", gold)
        interface.test_every_registered_family_implements_the_whole_interface(NAME)
        slugs = [spec.slug for spec in demo_benchmarks()]
        assert slugs.index(DEMO_SLUG) == slugs.index("demo-winoground") + 1
    assert NAME not in TASK_TYPES and DEMO_SLUG not in [spec.slug for spec in demo_benchmarks()]


def test_the_discovered_order_is_the_order_the_app_has_always_listed():
    assert list(TASK_TYPES) == [
        "nlvr2",
        "nlvr-structured",
        "nlvr-images",
        "vcr",
        "vqa-v2",
        "gqa",
        "a-okvqa",
        "winoground",
        "nlvr2-contrast",
    ]
    assert [spec.task for spec in demo_benchmarks()] == list(TASK_TYPES)


def test_every_family_is_a_folder_with_the_same_files_and_nothing_else_registers_one():
    folders = _family_folders()
    assert len(folders) == 7
    for folder in folders:
        assert not FOLDER_FILES - {path.name for path in folder.glob("*.py")}, folder.name
    # Beside the folders, only what families share: no family module left loose.
    assert {path.name for path in TASKS.glob("*.py")} == {"__init__.py", "base.py", "demo.py", "synthetic_files.py"}
    homes = {type(task).__module__.split(".")[-2] for task in TASK_TYPES.values()}
    assert homes == {folder.name for folder in folders}


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }


def test_no_family_reader_or_rule_is_left_in_the_shared_modules():
    """What belongs to one family (its readers, its columns, its metrics) is in its folder: the modules beside the
    folders, the tasks package's and the scoring domain's, name no family in code, only in docstrings and comments
    as examples ("a VCR-size gold file")."""
    family = re.compile("|".join(sorted({folder.name.split("_")[0] for folder in _family_folders()})), re.IGNORECASE)
    found = []
    for path in [*sorted(TASKS.glob("*.py")), *sorted(TASKS.parent.glob("*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            named = [getattr(node, field, None) for field in ("id", "name", "attr", "arg", "asname")]
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                named.append(node.value)
            found += [
                f"{path.relative_to(TASKS.parent)}:{node.lineno}: {name!r}"
                for name in named
                if isinstance(name, str) and family.search(name)
            ]
    assert family.pattern.count("|") == 6  # aokvqa, gqa, nlvr, nlvr2, vcr, vqa, winoground
    assert found == []


def test_the_synthetic_signature_is_written_once():
    """Families make a file from SyntheticOptions (synthetic_file); the keywords are read in base.py alone."""
    defined = [
        path.relative_to(TASKS).as_posix()
        for path in sorted(TASKS.rglob("*.py"))
        if re.search(r"^\s*def synthetic_predictions\(", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert defined == ["base.py"]


@pytest.mark.parametrize("name", list(TASK_TYPES))
def test_every_family_checks_the_synthetic_options_the_same_way(name):
    task = get_task(name)
    gold = task.synthetic_gold(12, seed=1)
    with pytest.raises(ValueError, match=r"^accuracy must be within \[0, 1\], got 1.5$"):
        task.synthetic_predictions(gold, 1.5)
    with pytest.raises(ValueError, match=r"^group_correlation must be within \[0, 1\], got -0.1$"):
        task.synthetic_predictions(gold, 0.5, group_correlation=-0.1)


def test_json_types_are_named_one_way_in_every_family():
    assert [json_type(value) for value in ([], {}, "x", 1, 1.5, True, None)] == [
        "an array",
        "an object",
        "a string",
        "a number",
        "a number",
        "a boolean",
        "null",
    ]
    gqa, aokvqa = get_task("gqa"), get_task("a-okvqa")
    gqa_gold = gqa.read_gold(gqa.synthetic_gold(10, seed=1))
    aokvqa_gold = aokvqa.read_gold(aokvqa.synthetic_gold(10, seed=1))
    messages = []
    for task, gold, data in (
        (gqa, gqa_gold, b"{}"),  # a whole file of the wrong type
        (aokvqa, aokvqa_gold, b"[]"),
        (gqa, gqa_gold, b"[[]]"),  # an entry of the wrong type
        (aokvqa, aokvqa_gold, json.dumps({str(aokvqa_gold.ids[0]): []}).encode()),
    ):
        with pytest.raises(ValidationError) as refused:
            task.parse(data, gold)
        messages.append(str(refused.value))
    assert "found an object" in messages[0] and "found an array" in messages[1]
    assert "found an array" in messages[2] and "is an array, not an object" in messages[3]
    assert not any("a list" in message for message in messages)


def test_no_family_message_calls_a_json_array_a_list():
    """JSON's word is "array": a message (a string that is not a docstring) saying "a list" is the old wording."""
    found = []
    for path in [*TASKS.rglob("*.py"), TASKS.parent / "json_files.py", TASKS.parent / "gold.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        found += [
            f"{path.relative_to(TASKS.parent)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and ("a list" in node.value or "JSON list" in node.value)
        ]
    assert found == []
