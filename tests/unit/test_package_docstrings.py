"""Words that stay true (issue 36): a package's docstring says what it may import, in a paragraph that begins
`May import:` and lists dotted names of the app, comma-separated (`May import: nothing of the app` if none),
and that paragraph cannot drift from either side:

- each name it lists is a module or package of the app that pyproject.toml's import-linter contracts let the
  package import (layers: only layers below, or a sibling the layer does not keep independent; forbidden and
  protected modules: not at all);
- each module of the app that the package's code imports (directly, from any module inside it: the grimp graph
  that lint-imports checks) is listed, itself or a package holding it.

Required of every top-level package (app.<pkg>) and service package (app.services.<pkg>); checked in any other
package whose docstring has the paragraph."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
NAME = re.compile(r"app(\.[A-Za-z_]\w*)*")
NOTHING = "nothing of the app"


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _packages() -> list[str]:
    return sorted(".".join(path.parent.relative_to(ROOT).parts) for path in APP.rglob("__init__.py"))


def _required(package: str) -> bool:
    parts = package.split(".")
    return len(parts) == 2 or (len(parts) == 3 and parts[1] == "services")


def may_import(docstring: str) -> list[str] | None:
    """The names of the docstring's `May import:` paragraph (to its first blank line), None without one."""
    paragraphs = re.split(r"\n\s*\n", docstring)
    found = [p for p in paragraphs if re.search(r"(^|\n)\s*May import:", p)]
    if not found:
        return None
    assert len(found) == 1, f"more than one `May import:` paragraph: {found}"
    text = " ".join(found[0].split("May import:", 1)[1].split()).rstrip(".")
    if text == NOTHING:
        return []
    names = [name.strip().strip("`") for name in text.split(",")]
    wrong = [name for name in names if not NAME.fullmatch(name)]
    assert not wrong, f"not dotted names of the app (write `May import: {NOTHING}` if none): {wrong}"
    return names


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("app")


@cache
def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


@dataclass(frozen=True)
class _Place:
    layer: int
    entry: str
    shared: bool  # a layer of ":"-separated entries, which may import each other ("|": independent)


def _place(layers: list[str], containers: list[str], module: str) -> _Place | None:
    for index, layer in enumerate(layers):
        shared = "|" not in layer
        for entry in re.split(r"[|:]", layer):
            for container in containers or [""]:
                name = f"{container}.{entry.strip()}" if container else entry.strip()
                if _inside(module, name):
                    return _Place(index, name, shared)
    return None


def refusal(package: str, target: str) -> str | None:
    """The contract that forbids ``package`` to import ``target``, None if none does."""
    for contract in _contracts():
        kind = contract["type"]
        if kind == "layers":
            importer = _place(contract["layers"], contract.get("containers", []), package)
            imported = _place(contract["layers"], contract.get("containers", []), target)
            if importer is None or imported is None or importer.entry == imported.entry:
                continue
            if imported.layer < importer.layer or (imported.layer == importer.layer and not importer.shared):
                return contract["name"]
        elif kind == "forbidden":
            sources, forbidden = contract["source_modules"], contract["forbidden_modules"]
            if any(_inside(package, s) for s in sources) and any(_inside(target, f) for f in forbidden):
                return contract["name"]
        elif kind == "protected":
            allowed = contract["allowed_importers"]
            if any(_inside(target, p) for p in contract["protected_modules"]) and not any(
                _inside(package, a) for a in allowed
            ):
                return contract["name"]
        elif kind != "acyclic_siblings":  # forbids circles, not an import of its own
            pytest.fail(f"a contract of type {kind!r}: teach this test what it allows")
    return None


def imported_by(package: str) -> set[str]:
    """The app's modules that the package's modules import directly, outside the package."""
    graph = _graph()
    inner = [m for m in graph.modules if _inside(m, package)]
    return {t for m in inner for t in graph.find_modules_directly_imported_by(m) if not _inside(t, package)}


def unlisted(package: str, names: list[str]) -> list[str]:
    """The app's modules the package imports that none of ``names`` holds."""
    return sorted(t for t in imported_by(package) if not any(_inside(t, name) for name in names))


def _docstring(package: str) -> str:
    path = ROOT.joinpath(*package.split("."), "__init__.py")
    return ast.get_docstring(ast.parse(path.read_text())) or ""


PACKAGES = _packages()


@pytest.mark.parametrize("package", PACKAGES)
def test_a_packages_may_import_line_is_allowed_and_names_what_it_imports(package):
    names = may_import(_docstring(package))
    if names is None:
        assert not _required(package), f"{package}'s docstring has no `May import:` line"
        return
    modules = _graph().modules
    unknown = [name for name in names if name not in modules]
    assert not unknown, f"{package} says it may import what the app does not have: {unknown}"
    refused = {name: refusal(package, name) for name in names if refusal(package, name)}
    assert not refused, f"{package} says it may import what the contracts forbid: {refused}"
    missing = unlisted(package, names)
    assert not missing, f"{package} imports what its `May import:` line does not list: {missing}"


def test_the_rules_above_see_a_drift():
    """The checks themselves: a line that omits an import, lists a layer above, or names a forbidden module."""
    assert may_import("Owns x.\n\nMay import: nothing of the app.") == []
    assert may_import("Owns x.\n\nMay import: app.db, `app.models`,\n    app.settings.\n\nMore.") == [
        "app.db",
        "app.models",
        "app.settings",
    ]
    assert may_import("Owns x.") is None
    # The example: people's docstring said it imported nothing of the services but errors.
    said = ["app.services.errors", "app.settings", "app.db", "app.models", "app.names"]
    assert any(_inside(module, "app.services.mail") for module in unlisted("app.services.people", said))
    assert refusal("app.services.people", "app.services.intake")  # a layer above
    assert refusal("app.services.intake", "app.web")  # services know nothing of HTTP
    assert refusal("app.evaluation", "app.db")  # the scoring domain is pure
    assert refusal("app.web", "app.api")  # independent siblings
    assert refusal("app.services.boards", "app.services.jobs") is None
    assert refusal("app.services.storage", "app.services.audit")  # "storage | audit | jobs": independent
    assert refusal("app.security", "app.page_cache") is None  # "app.security : app.http_caching : ...": not
