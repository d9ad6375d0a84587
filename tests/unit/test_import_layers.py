"""The modules of app/ import one another only downward, and never in a circle.

Every import is read from the source with `ast` (function-level imports included, as they run too), so the
test needs no import of the app and names each offending import by file and line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"

# Each module's layer, by the longest matching name; a module may import its own layer or lower ones.
LAYERS: dict[str, tuple[int, str]] = {
    "app.evaluation": (0, "the scoring domain: pure, imports nothing else of app"),
    "app.settings": (1, "the typed settings object: read from the environment, handed to the services"),
    "app.db": (1, "the engine, sessions and transactions the services run in; which errors are a full disk"),
    "app.models": (1, "the tables the services read and write"),
    "app.schema": (1, "the schema's migration state, checked at start-up and by backups (a service)"),
    "app.names": (1, "the rules of names and shown text: invisible characters, look-alike names"),
    "app.synthetic": (1, "synthetic data in each benchmark's format by task name, for the tests and benchmarks"),
    "app.observability": (1, "metric counters the services record into"),
    "app.lru": (1, "the in-memory memo the services' caches (gold sets, snapshots) and the page caches use"),
    "app.bundles": (1, "bundle files: benchmark.yaml and the files it names, read, checked and written (pure)"),
    "app.services": (2, "use cases; each owns its transaction"),
    "app.http": (3, "HTTP plumbing the pages and API share: security, request limits, caching, the error answer"),
    "app.web": (4, "the HTML pages"),
    "app.api": (4, "the JSON API"),
    "app.cli": (4, "the maintainers' command line"),
    "app": (5, "create_app: puts every layer together"),
}
# Siblings of one layer that must not import each other (either way).
SIBLINGS = (("app.web", "app.api"), ("app.web", "app.cli"), ("app.api", "app.cli"))


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path.relative_to(APP.parent)}:{self.line}: {self.source} imports {self.target}"


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(APP.rglob("*.py"))}


def resolve(name: str) -> str | None:
    """The module of ours that `name` (a module, or a name inside one) is, or None for another package."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from package import module` imports that module; `from module import name`, the module.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            target = resolve(name)
            if target is not None and target != module:
                found.append(Import(module, target, path, node.lineno))
    return found


IMPORTS = [edge for module in MODULES for edge in imports_of(module)]


def layer_of(module: str) -> tuple[str, int]:
    owner = max((name for name in LAYERS if module == name or module.startswith(name + ".")), key=len)
    return owner, LAYERS[owner][0]


def test_every_module_has_a_layer():
    assert all(layer_of(module) for module in MODULES)
    assert "app.evaluation.tasks" in MODULES and len(IMPORTS) > 100, "the walk found too little to judge"


def against_layers(edges: list[Import]) -> list[str]:
    offending = []
    for edge in edges:
        (source_owner, source_layer), (target_owner, target_layer) = layer_of(edge.source), layer_of(edge.target)
        if target_layer > source_layer:
            offending.append(f"{edge} (layer {source_layer}, {source_owner}, imports layer {target_layer})")
        elif {source_owner, target_owner} in [set(pair) for pair in SIBLINGS]:
            offending.append(f"{edge} ({source_owner} and {target_owner} are siblings)")
    return offending


def test_no_upward_or_sideways_import():
    offending = against_layers(IMPORTS)
    assert not offending, "imports against the layers:\n" + "\n".join(offending)


def cycles(edges: list[Import]) -> list[list[Import]]:
    """One cycle through each strongly connected component of more than one module (Tarjan)."""
    graph: dict[str, list[Import]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(component, graph) for component in components]


def _cycle_in(component: set[str], graph: dict[str, list[Import]]) -> list[Import]:
    """A shortest way from the component's first module back to itself, as the imports that make it."""
    start = min(component)
    paths: dict[str, list[Import]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph.get(node, []):
                if edge.target == start:
                    return paths[node] + [edge]
                if edge.target in component and edge.target not in paths:
                    paths[edge.target] = paths[node] + [edge]
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def test_no_import_cycle():
    found = cycles(IMPORTS)
    assert not found, "import cycles:\n" + "\n\n".join("\n".join(map(str, cycle)) for cycle in found)


def _edge(source: str, target: str, line: int = 1) -> Import:
    return Import(source, target, APP / "x.py", line)


def test_the_cycle_finder_finds_a_cycle_and_names_its_imports():
    edges = [
        _edge("app.a", "app.b", 3),
        _edge("app.b", "app.c", 5),
        _edge("app.c", "app.a", 7),
        _edge("app.c", "app.d"),
    ]
    (cycle,) = cycles(edges)
    assert [(edge.source, edge.target, edge.line) for edge in cycle] == [
        ("app.a", "app.b", 3),
        ("app.b", "app.c", 5),
        ("app.c", "app.a", 7),
    ]
    assert cycles(edges[:2] + edges[3:]) == []


def test_the_layer_check_names_upward_and_sideways_imports():
    edges = [
        _edge("app.services.boards.listings", "app.web.public", 4),
        _edge("app.api.v1", "app.web.public", 9),
        _edge("app.evaluation.gold", "app.models", 2),
        _edge("app.web.public", "app.services.boards.listings"),
    ]
    assert against_layers(edges) == [
        "app/x.py:4: app.services.boards.listings imports app.web.public (layer 2, app.services, imports layer 4)",
        "app/x.py:9: app.api.v1 imports app.web.public (app.api and app.web are siblings)",
        "app/x.py:2: app.evaluation.gold imports app.models (layer 0, app.evaluation, imports layer 1)",
    ]


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("app.evaluation.gold", "from .text_files import read_text", "app.evaluation.text_files"),
        ("app.evaluation.tasks.base", "from .. import gold as gold_files", "app.evaluation.gold"),
        ("app", "from app import cli", "app.cli"),
        ("app.web.public", "from app.services.boards.leaderboards import Entry", "app.services.boards.leaderboards"),
        ("app.services.maintenance.demo", "def load():\n    from app import synthetic", "app.synthetic"),
    ],
)
def test_the_walk_reads_relative_package_and_function_level_imports(module, source, expected, monkeypatch, tmp_path):
    path = tmp_path / MODULES[module].name  # a package's __init__ anchors relative imports at itself
    path.write_text(source)
    monkeypatch.setitem(MODULES, module, path)
    assert [edge.target for edge in imports_of(module)] == [expected]
