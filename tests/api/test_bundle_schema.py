"""The bundle's JSON Schema at its stable address (issue 37): GET /api/v1/schemas/bundle.json answers the schema
app/bundles makes from its models, as application/schema+json, cacheable by anyone, documented in the OpenAPI
document; and the bundle spec's example validates against it with the jsonschema library."""

from __future__ import annotations

from pathlib import Path

import jsonschema

from app.bundles import SCHEMA_PATH, bundle_schema, reading
from tests.support.bundle_files import EXAMPLE

CONFIGURED = Path(__file__).resolve().parents[1] / "support" / "bundles" / "nli3"


def test_the_schema_is_served_at_its_stable_address_and_takes_the_specs_example(client):
    answer = client.get(SCHEMA_PATH)
    assert answer.status_code == 200
    assert answer.mimetype == "application/schema+json"
    assert answer.headers["Cache-Control"].startswith("public, max-age=") and answer.headers["ETag"]
    schema = answer.get_json(force=True)
    assert schema == bundle_schema() and schema["$id"] == SCHEMA_PATH
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    validator.check_schema(schema)
    assert not list(validator.iter_errors(reading.compose(EXAMPLE).value))
    wrong = reading.compose(EXAMPLE.replace("open: true", "open: yes").replace("task: nlvr2", "task: 7")).value
    assert sorted(error.json_path for error in validator.iter_errors(wrong)) == ["$.splits[0].policy.open", "$.task"]
    # A configured task type's mapping is checked by its own schema (app/evaluation/configured's).
    configured = reading.compose((CONFIGURED / "benchmark.yaml").read_text()).value
    assert not list(validator.iter_errors(configured))
    configured["task"]["labels"] = "entailment"
    assert [error.json_path for error in validator.iter_errors(configured)] == ["$.task"]
    # A conditional request with the answer's tag is answered 304, without the schema.
    again = client.get(SCHEMA_PATH, headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status_code == 304 and not again.data


def test_the_openapi_document_describes_it_as_a_public_json_schema(client):
    operation = client.get("/api/v1/openapi.json").json["paths"][SCHEMA_PATH]["get"]
    assert operation["operationId"] == "getBundleSchema" and operation["security"] == []
    assert list(operation["responses"]["200"]["content"]) == ["application/schema+json"]
