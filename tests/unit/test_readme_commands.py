"""The README's examples run as written against `make run` (issue 24): every local address in it is the one the
Makefile's run target serves on, and the curl and `holdout` walkthroughs write only into the temporary folder
they make (`WORK=$(mktemp -d)`), never into the clone, and publish nothing but clearly labelled examples on a demo
benchmark, taken off the board again before they end."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")
LOCAL = re.compile(r"\b(?:127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):\d+")


def _make_default(name: str) -> str:
    found = re.search(rf"^{name} \?= (\S+)\s*$", MAKEFILE, re.M)
    assert found, f"the Makefile sets no default for {name}"
    return found.group(1)


def _served_on() -> str:
    """host:port of `make run`, read from the Makefile (its defaults and the run target's --bind)."""
    run = re.search(r"^run:.*?(?=^\S)", MAKEFILE, re.M | re.S)
    assert run and "--bind $(HOST):$(PORT)" in run.group(0), "make run no longer binds $(HOST):$(PORT)"
    return f"{_make_default('HOST')}:{_make_default('PORT')}"


def _shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


def _lines(block: str) -> list[str]:
    """The block's command lines: continuation lines joined, comments and blank lines dropped."""
    lines = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        line = line.split(" # ", 1)[0].strip()  # a comment after the command
        if not line or line.startswith("#"):
            continue
        try:
            shlex.split(line)
        except ValueError:  # an unbalanced quote: the README's own problem
            raise AssertionError(f"README: cannot read {line!r} as a shell command") from None
        lines.append(line)
    return lines


def _substituted(line: str) -> tuple[str, list[str]]:
    """The line with each command substitution $(...) replaced by a word, and the commands inside them."""
    out, inner, i = [], [], 0
    while i < len(line):
        if line.startswith("$(", i):
            depth, j, quote = 1, i + 2, None
            while depth:
                ch = line[j]
                if quote:
                    quote = None if ch == quote else quote
                elif ch in "'\"":
                    quote = ch
                elif ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                j += 1
            inner.append(line[i + 2 : j - 1])
            out.append("SUBSTITUTED")
            i = j
        else:
            out.append(line[i])
            i += 1
    return "".join(out), inner


def _simple_commands(line: str) -> list[list[str]]:
    """The line's simple commands (split at &&, ||, ; and |), each as the shell's words, redirections as '>' or
    '>>' followed by their target; commands inside $(...) too."""
    line, inner = _substituted(line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands: list[list[str]] = [[]]
    for word in lexer:
        if word in ("&&", "||", ";", "|", "&"):
            commands.append([])
        else:
            commands[-1].append(word)
    for command in inner:
        commands += _simple_commands(command)
    return [command for command in commands if command]


def _walkthroughs() -> list[str]:
    """The README's shell blocks that talk to the server: curl or the holdout command."""
    found = [
        block for block in _shell_blocks(README) if re.search(r"^\s*(curl|holdout|echo .*\| holdout)\b", block, re.M)
    ]
    assert len(found) >= 2, "the README's API and holdout examples are gone"
    return found


def test_every_local_address_in_the_readme_is_where_make_run_serves():
    served = _served_on()
    addresses = LOCAL.findall(README)
    assert addresses, "the README names no local address"
    wrong = sorted({address for address in addresses if address != served})
    assert not wrong, f"the README uses {wrong}; `make run` serves on {served}"
    for block in _walkthroughs():
        for url in re.findall(r"https?://[^\s\"')]+", block):
            assert LOCAL.match(url.split("://", 1)[1]), f"an example talks to {url}, not to `make run`"


def _targets(words: list[str]) -> list[tuple[str, str]]:
    """(what, path) for every file or folder a simple command writes (as far as the README's examples go)."""
    found = []
    for i, word in enumerate(words[:-1]):
        if word in ("-o", "--output") and words[0] == "curl":
            found.append(("curl output", words[i + 1]))
        if word in (">", ">>"):
            found.append(("redirection", words[i + 1]))
    if words[0] in ("cp", "mv", "tee", "mkdir", "touch"):
        found += [(words[0], words[-1])] if words[0] in ("cp", "mv") else [(words[0], w) for w in words[1:]]
    if Path(words[0]).name.startswith("pip") and "install" in words:
        # pip builds a local project in the folder it is given: a path there is written to.
        found += [("pip build", word) for word in words[words.index("install") + 1 :] if "/" in word]
    return [(what, target) for what, target in found if not target.startswith("-")]


def test_the_examples_write_only_into_their_temporary_folder():
    made = config_in_work = False
    for block in _walkthroughs():
        for line in _lines(block):
            if line == "WORK=$(mktemp -d)":
                made = True
                continue
            assert made or "$WORK" not in line, f"{line!r} uses $WORK before WORK=$(mktemp -d)"
            config_in_work |= bool(re.search(r"\bXDG_CONFIG_HOME=\"?\$WORK/", line))
            if re.search(r"\bholdout login\b", line):
                assert config_in_work, "holdout login would keep the demo's token in ~/.config: set XDG_CONFIG_HOME"
            for words in _simple_commands(line):
                for what, target in _targets(words):
                    assert target.startswith("$WORK/") or target == "/dev/null", (
                        f"README: {what} in {line!r} writes {target!r}, not into $WORK (the clone stays clean)"
                    )
    assert made, "the examples make no temporary folder (WORK=$(mktemp -d))"


def test_an_example_upload_is_labelled_and_leaves_the_board_as_it_found_it():
    for block in _walkthroughs():
        lines = _lines(block)
        words = [word for line in lines for command in _simple_commands(line) for word in command]
        names = [w.split("=", 1)[1] for w in words if w.startswith("model_name=")]
        names += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--model"]
        benchmarks = [w.split("=", 1)[1] for w in words if w.startswith("benchmark=")]
        benchmarks += [words[i + 2] for i, w in enumerate(words[:-2]) if words[i : i + 2] == ["holdout", "submit"]]
        assert names and benchmarks
        for name in names:
            assert "README example" in name, f"an example upload named {name!r} would look like a real entry"
        for benchmark in benchmarks:
            assert benchmark.startswith("demo-"), f"an example uploads to {benchmark}, not to a demo benchmark"
        published = [i for i, line in enumerate(lines) if re.search(r"/publish\b|\bholdout publish\b", line)]
        unpublished = [i for i, line in enumerate(lines) if re.search(r"/unpublish\b|\bholdout unpublish\b", line)]
        assert len(unpublished) == len(published), "every example entry published is unpublished again"
        assert all(u > p for p, u in zip(published, unpublished, strict=True))
        assert "--publish" not in words


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        ("curl -o predictions.csv http://127.0.0.1:8000/x", ["predictions.csv"]),
        ('curl -sS -o "$WORK/p.csv" http://127.0.0.1:8000/x', ["$WORK/p.csv"]),
        ("pip install ./clients/python", ["./clients/python"]),
        ("holdout leaderboard demo-nlvr2 >board.txt", ["board.txt"]),
        ('python3 -m venv "$WORK/v" && cp -R clients/python "$WORK/client"', ["$WORK/client"]),
        ("holdout show 3 2>/dev/null", ["/dev/null"]),
        ("ID=$(holdout submissions --json | tee ids.json | python3 -c 'import sys; print(1)')", ["ids.json"]),
        ("curl -H 'X: a > b' http://127.0.0.1:8000/x", []),
    ],
)
def test_the_checks_see_what_a_command_writes(line, writes):
    assert [target for words in _simple_commands(line) for _, target in _targets(words)] == writes
