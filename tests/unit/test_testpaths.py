"""Every folder of tests is collected: `testpaths` in pyproject.toml lists folders one by one (longest modules
first, for the parallel run), so a new folder missing from it would never run."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_folder_with_tests_is_in_testpaths():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"])
    folders = {"/".join(path.relative_to(ROOT).parts[:2]) for path in (ROOT / "tests").rglob("test_*.py")}
    assert folders <= listed, sorted(folders - listed)
