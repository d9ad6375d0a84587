"""The JSON Schema (2020-12) of benchmark.yaml, made from the models (app/bundles/model.py) so it cannot drift
from what reading accepts: served by the API at SCHEMA_PATH and shown in the maintainers' documentation.
It describes the file's values as YAML 1.2 reads them (dates are text; quotas a number or "none"); the model's
rules between keys (unique slugs, a default split that exists, closes after opens) are the reader's alone."""

from __future__ import annotations

from typing import Any

from app.evaluation import configured

from .model import Bundle

SCHEMA_PATH = "/api/v1/schemas/bundle.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def bundle_schema(site_url: str = "") -> dict[str, Any]:
    """The schema, its `$id` the address it is served at: SCHEMA_PATH under `site_url` (without one, the path
    alone, a reference resolved against wherever the schema was fetched from)."""
    body = Bundle.model_json_schema(mode="validation")
    _with_task_config(body)
    return {
        "$schema": DIALECT,
        "$id": site_url.rstrip("/") + SCHEMA_PATH,
        "title": "Holdout bundle: benchmark.yaml (format 1)",
        **{key: value for key, value in body.items() if key != "title"},
    }


def _with_task_config(body: dict[str, Any]) -> None:
    """`task`'s mapping as app/evaluation/configured declares it (its own schema, its definitions beside the
    bundle's), in place of a bare object: one source for what a configured task type may say."""
    task = configured.task_config_schema()
    definitions = body.setdefault("$defs", {})
    definitions.update(task.pop("$defs", {}))
    definitions["TaskConfig"] = task
    options = body["properties"]["task"]["anyOf"]
    body["properties"]["task"]["anyOf"] = [
        option if option.get("type") != "object" else {"$ref": "#/$defs/TaskConfig"} for option in options
    ]
