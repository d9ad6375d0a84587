"""Where `make bench` puts its tables: each script prints them and writes them into its page of the documentation,
docs/performance/<page>.md, between the page's two markers, under a line saying when, where and how they were
measured. So the site shows the last run, and no figure is copied by hand."""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

PAGES = Path(__file__).resolve().parent.parent / "docs" / "performance"
LOAD_AT_START = os.getloadavg()[0]


def markers(script: str, part: str = "") -> tuple[str, str]:
    """The page's markers around the tables of `script` (of one `part`, where a page keeps several runs' tables:
    serve.py's SQLite and PostgreSQL)."""
    name = f"benchmarks/{script}" + (f" ({part})" if part else "")
    return f"<!-- table written by {name} -->", f"<!-- end of the table written by {name} -->"


def machine() -> str:
    """The machine in a few words: cores, CPU model, Python, its load when the script started."""
    model = ""
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        model = f", {found.group(1).strip()}" if found else ""
    except OSError:
        pass
    # The load when the run began: a machine shared with other work measures slower, and the page should say so.
    return f"{os.cpu_count()} cores{model}, Python {platform.python_version()}, load average {LOAD_AT_START:.1f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


class Page:
    """The tables of one run of a script: printed as they come, written into the page by `write`."""

    def __init__(self, page: str, script: str, part: str = "") -> None:
        self.path = PAGES / f"{page}.md"
        self.script, self.part = script, part
        self.parts: list[str] = []

    def add(self, markdown: str) -> None:
        print(markdown + "\n", flush=True)
        self.parts.append(markdown)

    def table(self, header: Sequence[str], rows: Iterable[Sequence[object]], title: str = "") -> None:
        self.add((f"{title}\n\n" if title else "") + markdown_table(header, rows))

    def write(self) -> Path:
        begin, end = markers(self.script, self.part)
        text = self.path.read_text(encoding="utf-8")
        if text.count(begin) != 1 or text.count(end) != 1:
            raise SystemExit(f"{self.path} needs one pair of markers {begin} ... {end}")
        command = " ".join([f"benchmarks/{self.script}", *sys.argv[1:]])
        run = f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}, by `{command}`:"
        body = "\n\n".join([run, *self.parts])
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        self.path.write_text(f"{head}{begin}\n{body}\n{end}{tail}", encoding="utf-8")
        print(f"written into {self.path.relative_to(PAGES.parent.parent)}", file=sys.stderr)
        return self.path
