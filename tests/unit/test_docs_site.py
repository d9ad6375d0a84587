"""The documentation site's generated parts say what the code says (issue 36): the settings table names every
variable the configuration reads, with the settings object's defaults; the API reference renders every
operation and schema of the served OpenAPI document, `$ref`s followed; every registered family's file format
is shown; `make bench`'s writer replaces only its own table; and the README stays a front page."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import fields
from pathlib import Path

import pytest

from app.evaluation import TASK_TYPES
from app.settings import Settings, settings_table_markdown
from benchmarks import doc_tables

REPO = Path(__file__).resolve().parents[2]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def test_the_readme_is_a_front_page_of_at_most_150_lines():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "make run" in readme and "make test" in readme and "8000" in readme
    assert "](docs/images/board.png)" in readme and (REPO / "docs" / "images" / "board.png").is_file()


def test_the_settings_page_is_the_settings_objects_table():
    """The page as the site builds it holds the table app.settings makes from the Settings fields (every field's
    variable, its one default: tests/unit/test_settings.py checks the table against the fields)."""
    page = (REPO / "docs" / "deployment" / "settings.md").read_text(encoding="utf-8")
    assert hooks.SETTINGS_MARKER in page
    built = hooks.on_page_markdown(page, None, None, None)
    assert settings_table_markdown() in built and hooks.SETTINGS_MARKER not in built
    for field in fields(Settings):
        for variable in field.metadata["env"]:
            assert f"`{variable}`" in built, variable
    assert "| `JOB_MAX_ATTEMPTS` | `4` |" in built and "| `STORAGE_TIMEOUT` | `10.0` |" in built


DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Toy", "version": "2"},
    "servers": [{"url": "/api/v9"}],
    "security": [{"bearer": []}],
    "paths": {
        "/things/{thing_id}": {
            "get": {
                "summary": "One thing",
                "security": [],
                "parameters": [{"$ref": "#/components/parameters/ThingId"}],
                "responses": {
                    "200": {
                        "description": "The thing.",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}},
                    },
                    "202": {
                        "description": "Queued.",
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"job": {"type": "integer"}}}
                            }
                        },
                    },
                    "404": {"$ref": "#/components/responses/NotFound"},
                },
            }
        }
    },
    "components": {
        "parameters": {"ThingId": {"name": "thing_id", "in": "path", "required": True, "schema": {"type": "integer"}}},
        "responses": {"NotFound": {"description": "No such thing | none."}},
        "schemas": {
            "Thing": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "integer", "description": "Its id."},
                    "label": {"type": ["string", "null"]},
                    "old_label": {"type": "string", "nullable": True},
                    "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
                    "kind": {"enum": ["a", "b"]},
                },
            },
            "Part": {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}},
        },
    },
}


def test_the_api_reference_follows_refs_and_writes_every_type():
    text = hooks.api_reference(DOCUMENT)
    assert "### `GET /api/v9/things/{thing_id}`" in text
    assert "Authentication: none." in text  # the operation's own empty security wins over the document's
    assert "| `thing_id` | path | integer | yes |" in text  # a parameter $ref followed
    assert "| 404 | No such thing \\| none. | – |" in text  # a response $ref followed, a pipe escaped
    assert "| 200 | The thing. | [Thing](#schema-thing) |" in text
    assert "### Thing {#schema-thing}" in text and "### Part {#schema-part}" in text
    assert "| `id` | integer | yes | Its id. |" in text
    assert "| `label` | string or null | no |" in text and "| `old_label` | string or null | no |" in text
    assert "| `parts` | array of [Part](#schema-part) | no |" in text
    assert '| `kind` | one of `"a"`, `"b"` | no |' in text
    assert "| `n` | integer or null | no |" in text
    assert "| 202 | Queued. | object |" in text
    assert (
        "The 202 answer's object:\n\n| field | type | required | description |\n|---|---|---|---|\n"
        "| `job` | integer | no |" in text
    )


def test_the_api_reference_renders_every_served_operation_and_schema():
    document = hooks.served_openapi()
    text = hooks.api_reference(document)
    base = document.get("servers", [{"url": ""}])[0]["url"].rstrip("/")  # the paths are whole: no servers
    for path, item in document["paths"].items():
        for method in item.keys() & set(hooks.METHODS):
            assert f"### `{method.upper()} {base}{path}`" in text
    for name in document["components"]["schemas"]:
        assert f"{{#schema-{name.lower()}}}" in text
    assert "$ref" not in text


def test_every_registered_family_shows_its_file_and_example():
    text = hooks.family_formats()
    for task in TASK_TYPES.values():
        assert f"(`{task.name}`)" in text and task.file_format in text and all(line in text for line in task.example)
    page = (REPO / "docs" / "participants" / "families.md").read_text(encoding="utf-8")
    assert hooks.FORMATS_MARKER in page


def test_the_prediction_formats_table_has_a_row_for_every_family():
    """One table, no blank line breaking it (a blank line once turned five families' rows into text)."""
    page = (REPO / "docs" / "participants" / "families.md").read_text(encoding="utf-8")
    section = page.split("## Prediction file formats", 1)[1].lstrip("\n")
    table = section[: section.index("\n\n")].splitlines()
    assert table[:2] == ["| task | file |", "|---|---|"]
    assert [line.split(" | ")[0].strip("| `") for line in table[2:]] == list(TASK_TYPES)


def test_a_bench_page_gets_its_tables_between_its_own_markers(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(doc_tables, "PAGES", tmp_path)
    begin, end = doc_tables.markers("toy.py")
    other = "\n".join(doc_tables.markers("toy.py", "PostgreSQL"))
    (tmp_path / "toy.md").write_text(f"# Toy\n\nbefore\n\n{begin}\nold figures\n{end}\n\n{other}\n\nafter\n")
    page = doc_tables.Page("toy", "toy.py")
    page.table(("case", "measured"), [("a | b", "1 ms")], title="One run:")
    page.write()
    text = (tmp_path / "toy.md").read_text()
    assert "old figures" not in text and text.startswith("# Toy\n\nbefore\n\n") and text.endswith(f"{other}\n\nafter\n")
    assert re.search(
        r"Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC on \d+ cores.*load average [\d.]+, by `benchmarks/toy.py", text
    )
    assert "One run:\n\n| case | measured |\n|---|---|\n| a \\| b | 1 ms |\n" + end in text
    assert "| a \\| b | 1 ms |" in capsys.readouterr().out  # printed too


def test_a_bench_page_without_its_markers_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(doc_tables, "PAGES", tmp_path)
    (tmp_path / "toy.md").write_text("# Toy\n")
    with pytest.raises(SystemExit, match="markers"):
        doc_tables.Page("toy", "toy.py").write()


@pytest.mark.parametrize(
    "script", ["scoring.py", "leaderboard.py", "hostile_uploads.py", "worker_memory.py", "job_queue.py", "scale.py"]
)
def test_every_bench_script_has_its_markers_on_its_page(script):
    source = (REPO / "benchmarks" / script).read_text(encoding="utf-8")
    page = re.search(r'Page\("([a-z-]+)", "' + re.escape(script) + '"', source)
    assert page, f"benchmarks/{script} writes no page"
    text = (REPO / "docs" / "performance" / f"{page.group(1)}.md").read_text(encoding="utf-8")
    begin, end = doc_tables.markers(script)
    assert text.count(begin) == 1 and text.count(end) == 1 and text.index(begin) < text.index(end)


def test_the_serve_benchmark_keeps_a_table_per_database():
    text = (REPO / "docs" / "performance" / "serve.md").read_text(encoding="utf-8")
    for database in ("SQLite", "PostgreSQL"):
        begin, end = doc_tables.markers("serve.py", database)
        assert text.count(begin) == 1 and text.count(end) == 1


def test_the_page_on_adding_a_family_joins_the_nav_once_it_exists(tmp_path):
    def config():
        return {"docs_dir": str(tmp_path), "nav": [{"Home": "index.md"}, {"Development": ["development/index.md"]}]}

    assert hooks.on_config(config())["nav"][1]["Development"] == ["development/index.md"]
    (tmp_path / "development").mkdir()
    (tmp_path / "development" / "adding-a-family.md").write_text("# Adding a task family\n")
    added = hooks.on_config(hooks.on_config(config()))["nav"][1]["Development"]
    assert added == ["development/index.md", {"Adding a task family": "development/adding-a-family.md"}]
