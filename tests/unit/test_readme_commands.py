"""The examples of the README and of every page of the documentation site (docs/**/*.md) run as written against
`make run` (issue 24; the site since issue 36): every local address in them is the one the Makefile's run target
serves on (or, beside `make docs`, where that serves the site), every `make` target and `flask --app wsgi` command
they show exists with the options they give it, and the curl and `holdout` walkthroughs write only into the
temporary folder their page makes (`WORK=$(mktemp -d)`), never into the clone, and publish nothing but clearly
labelled examples on a demo benchmark, taken off the board again before they end."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = {
    path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
}
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")
LOCAL = re.compile(r"\b(?:127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):\d+")


def _make_default(name: str) -> str:
    found = re.search(rf"^{name} \?= (\S+)\s*$", MAKEFILE, re.M)
    assert found, f"the Makefile sets no default for {name}"
    return found.group(1)


def _target(name: str) -> str:
    found = re.search(rf"^{name}:.*?(?=^\S)", MAKEFILE, re.M | re.S)
    assert found, f"the Makefile has no {name} target"
    return found.group(0)


def _served_on() -> str:
    """host:port of `make run`, read from the Makefile (its defaults and the run target's --bind)."""
    assert "--bind $(HOST):$(PORT)" in _target("run"), "make run no longer binds $(HOST):$(PORT)"
    return f"{_make_default('HOST')}:{_make_default('PORT')}"


def _docs_served_on() -> str:
    """host:port of `make docs` (mkdocs serve), which must not be make run's."""
    assert "--dev-addr $(HOST):$(DOCS_PORT)" in _target("docs"), "make docs no longer serves on $(HOST):$(DOCS_PORT)"
    return f"{_make_default('HOST')}:{_make_default('DOCS_PORT')}"


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
        except ValueError:  # an unbalanced quote: the page's own problem
            raise AssertionError(f"cannot read {line!r} as a shell command") from None
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


def _page_walkthroughs(text: str) -> list[str]:
    """A page's shell blocks that talk to the server: curl or the holdout command."""
    return [block for block in _shell_blocks(text) if re.search(r"^\s*(curl|holdout|echo .*\| holdout)\b", block, re.M)]


def _walkthroughs() -> list[tuple[str, list[str]]]:
    """(page, its walkthroughs) for every page that has any."""
    found = [(page, _page_walkthroughs(text)) for page, text in PAGES.items()]
    found = [(page, blocks) for page, blocks in found if blocks]
    pages = {page for page, _ in found}
    assert {"docs/api/index.md", "docs/participants/client.md"} <= pages, "the API and holdout examples are gone"
    return found


def test_every_local_address_in_the_docs_is_where_make_run_serves():
    served, site = _served_on(), _docs_served_on()
    assert site != served, "make docs would serve on make run's port"
    seen = False
    for page, text in PAGES.items():
        for line in text.splitlines():
            for address in LOCAL.findall(line):
                seen = True
                beside_make_docs = address == site and re.search(r"\bmake docs\b|\bmkdocs\b", line)
                assert address == served or beside_make_docs, f"{page} uses {address}; `make run` serves on {served}"
    assert seen, "the documentation names no local address"
    for page, blocks in _walkthroughs():
        for block in blocks:
            for url in re.findall(r"https?://[^\s\"')]+", block):
                assert url.split("://", 1)[1].startswith(served), f"{page}: an example talks to {url}, not `make run`"


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


@pytest.mark.parametrize("page", [page for page, text in PAGES.items() if _page_walkthroughs(text)])
def test_the_examples_write_only_into_their_temporary_folder(page):
    """Each page on its own: a reader may start from any of them."""
    made = config_in_work = False
    for block in _page_walkthroughs(PAGES[page]):
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
                        f"{page}: {what} in {line!r} writes {target!r}, not into $WORK (the clone stays clean)"
                    )
    assert made, f"{page}: the examples make no temporary folder (WORK=$(mktemp -d))"


def test_an_example_upload_is_labelled_and_leaves_the_board_as_it_found_it():
    for block in [block for _, blocks in _walkthroughs() for block in blocks]:
        lines = _lines(block)
        words = [word for line in lines for command in _simple_commands(line) for word in command]
        names = [w.split("=", 1)[1] for w in words if w.startswith("model_name=")]
        names += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--model"]
        benchmarks = [w.split("=", 1)[1] for w in words if w.startswith("benchmark=")]
        benchmarks += [words[i + 2] for i, w in enumerate(words[:-2]) if words[i : i + 2] == ["holdout", "submit"]]
        assert names and benchmarks
        for name in names:
            assert "Docs example" in name, f"an example upload named {name!r} would look like a real entry"
        for benchmark in benchmarks:
            assert benchmark.startswith("demo-"), f"an example uploads to {benchmark}, not to a demo benchmark"
        published = [i for i, line in enumerate(lines) if re.search(r"/publish\b|\bholdout publish\b", line)]
        unpublished = [i for i, line in enumerate(lines) if re.search(r"/unpublish\b|\bholdout unpublish\b", line)]
        assert len(unpublished) == len(published), "every example entry published is unpublished again"
        assert all(u > p for p, u in zip(published, unpublished, strict=True))
        assert "--publish" not in words


def _all_lines() -> list[tuple[str, str]]:
    """(page, line) for every command line of every shell block of every page."""
    return [(page, line) for page, text in PAGES.items() for block in _shell_blocks(text) for line in _lines(block)]


def test_every_make_target_the_docs_run_exists():
    targets = set(re.findall(r"^([a-z][\w-]*):", MAKEFILE, re.M))
    shown = [(page, m) for page, line in _all_lines() for m in re.findall(r"(?:^|[;&|(] *)make ([a-z][\w-]*)", line)]
    assert shown, "the documentation runs no make target"
    for page, target in shown:
        assert target in targets, f"{page}: `make {target}` is no target of the Makefile"


def _flask_invocations() -> list[tuple[str, list[str]]]:
    """(page, words after `flask --app wsgi`) for every such command of every shell block, placeholders' brackets
    dropped (`[--hidden]` is the option --hidden)."""
    found = []
    for page, line in _all_lines():
        for rest in re.findall(r"flask --app wsgi (.*)", line):
            words = []
            for word in shlex.split(rest.replace("[", " ").replace("]", " "), comments=True):
                if word in ("|", "||", "&&", ";") or word.endswith(")"):
                    break  # the next command, or the end of a $(...)
                words.append(word)
            found.append((page, words))
    return found


def _option_names(command) -> set[str]:
    return {name for parameter in command.params for name in (*parameter.opts, *parameter.secondary_opts)}


def test_every_flask_command_the_docs_run_exists_with_its_options(app):
    invocations = _flask_invocations()
    assert len(invocations) > 20, "the maintainers' command line is gone from the documentation"
    for page, words in invocations:
        command, path = app.cli, ["flask"]
        for word in words:
            if word.startswith("-") or not hasattr(command, "get_command"):
                break
            path.append(word)
            command = command.get_command(None, word)
            assert command is not None, f"{page}: `{' '.join(path)}` is no command"
        assert not hasattr(command, "get_command"), f"{page}: `{' '.join(path)}` names a group, not a command"
        names = _option_names(command) | {"--help"}
        for word in words:
            for option in word.split("=", 1)[0].split("/"):  # --open/--closed: a flag and its opposite
                if option.startswith("--"):
                    assert option in names, f"{page}: `{' '.join(path)}` has no option {option}"


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
