"""Remake tests/module_seconds.json from the JUnit XML of a full run (CI=true, both databases):
`PYTEST_ADDOPTS=--junitxml=run.xml bash .ci/run`, then `python -m tests.module_seconds run.xml`.
tests/conftest.py runs the longest modules first by it."""

from __future__ import annotations

import collections
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def _module_path(classname: str) -> str:
    """tests.web.test_pages.TestX -> tests/web/test_pages.py: JUnit's default family (xunit2) names no file."""
    parts = classname.split(".")
    last = next((i for i, part in enumerate(parts) if part.startswith("test_")), None)
    return "" if last is None else "/".join(parts[: last + 1]) + ".py"


def main(junit: str) -> None:
    seconds: collections.Counter[str] = collections.Counter()
    for case in ET.parse(junit).iter("testcase"):
        seconds[case.get("file") or _module_path(case.get("classname") or "")] += float(case.get("time") or 0)
    found = {name: round(value, 1) for name, value in sorted(seconds.items()) if name}
    (Path(__file__).parent / "module_seconds.json").write_text(json.dumps(found, indent=1) + "\n")
    print(f"{len(found)} modules, {sum(found.values()):.0f} s in all")


if __name__ == "__main__":
    main(sys.argv[1])
