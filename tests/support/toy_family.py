"""The toy family of docs/development/adding-a-family.md, written into a folder on the tasks package's path: what
a test needs to show that adding a family is adding a folder. The page's code is the code run, so it stays true."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.evaluation import TASK_TYPES, TaskType, get_task, tasks

ROOT = Path(__file__).resolve().parents[2]
DOCS_PAGE = ROOT / "docs" / "development" / "adding-a-family.md"
FOLDER = "toy_choice"
NAME = "toy-choice"
DEMO_SLUG = "demo-toy-choice"
# A fenced block of the page titled with a file of the toy's folder: its name, its text.
_FILE = re.compile(r'```python title="app/evaluation/tasks/toy_choice/([a-z_]+\.py)"\n(.*?)```', re.DOTALL)


def toy_files() -> dict[str, str]:
    """The toy folder's files as the docs page writes them, by name."""
    return dict(_FILE.findall(DOCS_PAGE.read_text(encoding="utf-8")))


@contextmanager
def toy_family(root: Path) -> Iterator[TaskType]:
    """The toy folder written under ``root``, ``root`` put on the tasks package's path and the registry's
    discovery run again; afterwards the path, the registry and the demo benchmarks are as they were."""
    folder = root / FOLDER
    folder.mkdir()
    for name, text in toy_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    path = tasks.__path__
    before = list(path)
    path.append(str(root))
    importlib.invalidate_caches()
    try:
        tasks.discover()
        yield get_task(NAME)
    finally:
        path[:] = before
        TASK_TYPES.pop(NAME, None)
        tasks._DEMO_BENCHMARKS.pop(DEMO_SLUG, None)
        for module in [module for module in sys.modules if module.startswith(f"{tasks.__name__}.{FOLDER}")]:
            del sys.modules[module]
