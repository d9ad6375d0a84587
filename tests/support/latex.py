"""pdflatex for the tests that compile exported tables: one run in a folder, its log, a clear failure."""

from __future__ import annotations

import subprocess
from pathlib import Path


def compile_paper(folder: Path, timeout: float = 300) -> str:
    """Compile folder/paper.tex once (nonstop, halting on the first error); its log. Fails with the log's end
    when pdflatex does."""
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    log = (folder / "paper.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    return log
