"""Remake tests/module_seconds.json from the JUnit XML of a full run (CI=true, both databases):
`python -m pytest -n auto --dist loadfile --junitxml=run.xml -o junit_family=xunit1`, then
`python -m tests.module_seconds run.xml`. tests/conftest.py runs the longest modules first by it."""

from __future__ import annotations

import collections
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(junit: str) -> None:
    seconds: collections.Counter[str] = collections.Counter()
    for case in ET.parse(junit).iter("testcase"):
        seconds[case.get("file") or ""] += float(case.get("time") or 0)
    found = {name: round(value, 1) for name, value in sorted(seconds.items()) if name}
    (Path(__file__).parent / "module_seconds.json").write_text(json.dumps(found, indent=1) + "\n")
    print(f"{len(found)} modules, {sum(found.values()):.0f} s in all")


if __name__ == "__main__":
    main(sys.argv[1])
