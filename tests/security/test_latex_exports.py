"""The LaTeX exports with names written to attack pdflatex: escaped, so nothing is read and nothing is run, and
the table still compiles."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from app import synthetic
from app.db import db
from app.services import catalog
from app.services.catalog import references
from app.services.intake import submissions
from app.services.people import teams

ATTACKS = [
    r"\input{/etc/passwd}",
    r"\immediate\write18{touch PWNED}",
    r"\catcode`\@=0 @input{/etc/hostname}",
    r"}}}\end{tabularx}\end{table}\input{/etc/passwd}{{{",
    r"{{{ unbalanced",
    r"100% # ~ ^^5cinput{/etc/passwd} ^^M $x$ & _",
    "ctrl\x01\x07\x1b[31m\x7f\u202e\u200b\ufeffname",
    "\uff3cinput\uff5b/etc/passwd\uff5d \uff05 \uff03",  # full-width \ { } % #: folded to ASCII
    r"\def\x{\x}\x \loop\iftrue\repeat",
    "[" + r"\input{/etc/passwd}" + "]",
    "--`` '' ?` !` <> | \\\\ \\",
    ("\\input{/etc/passwd}%" * 200)[:2000],
]


def _set_names(app, names: list[str]) -> None:
    """nlvr2 with a public Dev split: one published entry per name (the name as model and team name), a
    reference row per name; the names are written to the rows directly, past the intake's checks, to test the
    export's escaping alone."""
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(200, seed=3)
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        split = catalog.get_split("nlvr2", "dev")
        for i, name in enumerate(names):
            team = teams.create_team(f"Team {i}")
            submission = submissions.store_scored(
                split,
                team,
                synthetic.predictions("nlvr2", gold, 0.6 + 0.3 * i / len(names), seed=100 + i, split="dev"),
                model_name=f"model {i}",
                description="d",
                publish=True,
            )
            submission.model_name = name
            team.name = name[:200] + f" {i}"
            reference = references.add_reference("nlvr2", "dev", f"ref {i}", '{"all": {"accuracy": 70.0}}')
            reference.name = name
        # The maintainers' names too: the benchmark's and the split's go into the caption and a comment line.
        split.benchmark.name = "Bench\n\\input{/etc/passwd} % # ~ ^^5c }{"
        split.name = "Dev }\\write18{touch PWNED}\n\\end{table}"
        split.board_version += 1
        db.session.commit()


def _compile(table: str, folder) -> tuple[int, str]:
    folder.mkdir()
    packages = re.findall(r"^% (\\usepackage(?:\[[^]]*\])?\{[^}]*\})", table, re.M)
    (folder / "board.tex").write_text(table, encoding="ascii")
    (folder / "paper.tex").write_text(
        "\\documentclass[twocolumn]{article}\n"
        + "\n".join(packages)
        + "\n\\begin{document}\nText.\n\n\\input{board.tex}\n\\end{document}\n"
    )
    done = subprocess.run(
        # Shell escape on: were anything to reach \write18, it would run.
        ["pdflatex", "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, (folder / "paper.log").read_text(errors="replace")


@pytest.mark.parametrize("path", ["/leaderboards/nlvr2/dev/export.tex", "/leaderboards/nlvr2/models/export.tex"])
def test_hostile_names_are_escaped_and_the_table_compiles(app, client, tmp_path, path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    _set_names(app, ATTACKS)
    response = client.get(path)
    assert response.status_code == 200
    table = response.get_data(as_text=True)
    assert table.isascii()
    # No attacking command survives as a command, and no control character reaches the file.
    for command in ("\\input{", "\\write18", "\\catcode", "\\immediate", "\\def\\", "\\loop", "^^"):
        assert command not in table, command
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", table)
    # Only the table's own comment lines hold a % not escaped (a bare % would swallow the rest of a row).
    for line in table.splitlines():
        if not line.startswith("% ") and line != "\\resizebox{\\textwidth}{!}{%":
            assert not re.search(r"(?<!\\)%", line), line[:200]
    returncode, log = _compile(table, tmp_path / "paper")
    assert returncode == 0, log[-3000:]
    assert "(/etc/passwd" not in log and "(/etc/hostname" not in log
    assert not (tmp_path / "paper" / "PWNED").exists()
    assert "runsystem" not in log
