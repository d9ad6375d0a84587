"""The command line's package docstring (app/cli/__init__.py) names every command group it registers, each
beside the module that defines it, and nothing else: the list a maintainer reads stays the list `flask` runs."""

from __future__ import annotations

import re

from flask import Flask

from app import cli


def _listed() -> dict[str, set[str]]:
    """{module: command names} from the docstring's lines "    catalog.py      benchmarks, splits, ..."."""
    found: dict[str, set[str]] = {}
    for line in (cli.__doc__ or "").splitlines():
        match = re.fullmatch(r"\s+(\w+)\.py\s+(.+)", line)
        if match and match.group(1) != "errors":
            found[f"app.cli.{match.group(1)}"] = {name.strip() for name in match.group(2).split(",")}
    return found


def _registered() -> dict[str, set[str]]:
    """{module: command names} of what register() adds to an app, by the concept module that holds each."""
    bare = Flask(__name__)  # no configuration, no database: only what register() adds
    cli.register(bare)
    home = {id(command): concept.__name__ for concept in cli.CONCEPTS for command in concept.COMMANDS}
    found: dict[str, set[str]] = {}
    for name, command in bare.cli.commands.items():
        found.setdefault(home.get(id(command), "registered from no concept module"), set()).add(name)
    return found


def test_the_docstring_names_every_registered_group_beside_its_module():
    registered = _registered()
    assert sum(len(names) for names in registered.values()) == 19  # the groups and commands scripts rely on
    assert _listed() == registered
