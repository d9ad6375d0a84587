"""mkdocs hooks (mkdocs.yml's `hooks:`): the pages that are written from the code rather than by hand.

- `<!-- settings-table -->` becomes `app.settings.settings_table_markdown()`, the settings as the code reads them.
- `<!-- api-reference -->` becomes the API reference, rendered from the OpenAPI document the app serves at
  `/api/v1/openapi.json` (the app is built on a throwaway SQLite database, as the tests build it), so the
  reference is whatever generates that document, never a copy of it.
- `<!-- family-formats -->` becomes every registered task family's file format and three-line example, as the
  family declares them for its "How to submit" section.
- `<!-- bundle-schema -->` becomes a table of every key of a bundle's benchmark.yaml, one per mapping, rendered
  from the JSON Schema app/bundles makes from its models (the one `/api/v1/schemas/bundle.json` serves).
- The page on adding a task family joins the Development section of the nav when it exists.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_MARKER = "<!-- settings-table -->"
API_MARKER = "<!-- api-reference -->"
FORMATS_MARKER = "<!-- family-formats -->"
BUNDLE_MARKER = "<!-- bundle-schema -->"
METHODS = ("get", "post", "put", "patch", "delete")
OPTIONAL_PAGES = {"Development": [("Adding a task family", "development/adding-a-family.md")]}


def on_config(config: Any) -> Any:
    sys.path.insert(0, str(ROOT))  # the app's packages, for the generated pages
    for section in config["nav"]:
        for title, children in section.items() if isinstance(section, dict) else ():
            for name, path in OPTIONAL_PAGES.get(title, []):
                if (Path(config["docs_dir"]) / path).is_file() and {name: path} not in children:
                    children.append({name: path})
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if SETTINGS_MARKER in markdown:
        from app.settings import settings_table_markdown

        markdown = markdown.replace(SETTINGS_MARKER, settings_table_markdown())
    if FORMATS_MARKER in markdown:
        markdown = markdown.replace(FORMATS_MARKER, family_formats())
    if BUNDLE_MARKER in markdown:
        markdown = markdown.replace(BUNDLE_MARKER, bundle_keys())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference(served_openapi()))
    return markdown


def family_formats() -> str:
    """Each registered family: its name, its file format in words and its example file."""
    from app.evaluation import TASK_TYPES

    lines = []
    for task in TASK_TYPES.values():
        lines += [f"### {task.label} (`{task.name}`)", "", task.file_format, "", f"```{task.file_suffix}"]
        lines += [*task.example, "```", ""]
    return "\n".join(lines)


def bundle_keys() -> str:
    """The bundle's JSON Schema as tables: the file's top level, then each mapping it holds, key by key."""
    from app.bundles import bundle_schema

    schema = bundle_schema()
    known = schema.get("$defs", {})
    definitions = {"Bundle": schema}  # then each mapping in the order the file first holds it
    queue = [schema]
    while queue:
        for name in re.findall(r'"#/\$defs/([^"]+)"', json.dumps(queue.pop(0).get("properties", {}))):
            if name not in definitions:
                definitions[name] = known[name]
                queue.append(known[name])
    lines = [f"The schema's `$id`: `{schema['$id']}` ({schema['$schema']}).", ""]
    for name, definition in definitions.items():
        lines += [f"### {name} {{#bundle-{name.lower()}}}", ""]
        if definition.get("description"):
            lines += [" ".join(definition["description"].split()), ""]
        lines += ["| key | type | required | default | description |", "|---|---|---|---|---|"]
        required = set(definition.get("required") or ())
        for key, field in definition.get("properties", {}).items():
            default = f"`{json.dumps(field['default'])}`" if "default" in field else "–"
            kind = type_text(field).replace("(#schema-", "(#bundle-")
            lines.append(
                f"| `{key}` | {_cell(kind)} | {'yes' if key in required else 'no'} | {_cell(default)} | "
                f"{_cell(field.get('description'))} |"
            )
        lines.append("")
    return "\n".join(lines)


def served_openapi() -> dict[str, Any]:
    """The OpenAPI document as `GET /api/v1/openapi.json` answers it."""
    from app import create_app

    with tempfile.TemporaryDirectory(prefix="holdout-docs-") as folder:
        app = create_app(
            {
                "TESTING": True,
                "SECRET_KEY": "documentation",
                "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder}/docs.sqlite3",
                "HIDDEN_LABELS_DIR": f"{folder}/labels",
                "SUBMISSIONS_DIR": f"{folder}/uploads",
            }
        )
        answer = app.test_client().get("/api/v1/openapi.json")
        if answer.status_code != 200:
            raise RuntimeError(f"/api/v1/openapi.json answered {answer.status_code}")
        document: dict[str, Any] = json.loads(answer.get_data(as_text=True))
        return document


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _anchor(name: str) -> str:
    return "schema-" + name.lower()


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A `$ref` into the document (components/responses, parameters, ...) followed to what it names."""
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def type_text(schema: dict[str, Any]) -> str:
    """A schema in a few words: `[Benchmark](#schema-benchmark)`, `array of string`, `integer or null`."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{_anchor(name)})"
    for combiner in ("oneOf", "anyOf"):
        if combiner in schema:
            return " or ".join(type_text(option) for option in schema[combiner])
    if "allOf" in schema:
        return " and ".join(type_text(part) for part in schema["allOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    kinds = schema.get("type", "any")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    if schema.get("nullable"):  # how OpenAPI 3.0 wrote a type that may be null (3.1 lists "null" among the types)
        kinds.append("null")
    words = []
    for kind in kinds:
        if kind == "array":
            words.append("array of " + type_text(schema.get("items", {})))
        elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            words.append("object of " + type_text(schema["additionalProperties"]))
        else:
            words.append(str(kind))
    return " or ".join(words)


def _properties_table(schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties") or {}
    if not properties:
        return [f"A {type_text(schema)}." if schema else "Any JSON value."]
    required = set(schema.get("required") or ())
    lines = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, field in properties.items():
        lines.append(
            f"| `{name}` | {_cell(type_text(field))} | {'yes' if name in required else 'no'} | "
            f"{_cell(field.get('description'))} |"
        )
    return lines


def _operation(document: dict[str, Any], path: str, method: str, operation: dict[str, Any]) -> list[str]:
    base = (document.get("servers") or [{"url": ""}])[0]["url"].rstrip("/")
    lines = [f"### `{method.upper()} {base}{path}`", ""]
    if operation.get("summary"):
        lines += [operation["summary"] + ".", ""]
    if operation.get("description"):
        lines += [operation["description"], ""]
    security = operation.get("security", document.get("security"))
    lines += [f"Authentication: {'a bearer token' if security else 'none'}.", ""]
    parameters = [_resolve(document, parameter) for parameter in operation.get("parameters", [])]
    if parameters:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for parameter in parameters:
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} | {_cell(type_text(parameter.get('schema', {})))} | "
                f"{'yes' if parameter.get('required') else 'no'} | {_cell(parameter.get('description'))} |"
            )
        lines.append("")
    body = operation.get("requestBody")
    if body:
        body = _resolve(document, body)
        for media_type, content in body.get("content", {}).items():
            lines += [f"Request body (`{media_type}`):", ""]
            lines += _properties_table(_resolve(document, content.get("schema", {}))) + [""]
    lines += ["| status | answer | body |", "|---|---|---|"]
    inline = []  # answers whose body is described here rather than named in the schemas
    for status, response in operation.get("responses", {}).items():
        response = _resolve(document, response)
        schemas = [content.get("schema", {}) for content in (response.get("content") or {}).values()]
        lines.append(
            f"| {status} | {_cell(response.get('description'))} | "
            f"{_cell(', '.join(type_text(schema) for schema in schemas)) or '–'} |"
        )
        inline += [(status, schema) for schema in schemas if schema.get("properties")]
    lines.append("")
    for status, schema in inline:
        lines += [f"The {status} answer's object:", "", *_properties_table(schema), ""]
    return lines


def api_reference(document: dict[str, Any]) -> str:
    """The document as Markdown: every operation (parameters, body, answers), then every named schema."""
    info = document.get("info", {})
    lines = [
        f"Generated from the served OpenAPI {document.get('openapi', '')} document ({info.get('title', '')}, "
        f"version {info.get('version', '')}).",
        "",
        "## Operations",
        "",
    ]
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                lines += _operation(document, path, method, item[method])
    lines += ["## Schemas", ""]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name} {{#{_anchor(name)}}}", ""]
        if schema.get("description"):
            lines += [schema["description"], ""]
        lines += _properties_table(schema) + [""]
    return "\n".join(lines)
