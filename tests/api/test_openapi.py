"""The OpenAPI document: generated from the models of app/api/shapes.py, valid 3.1, in step with the routes,
and true of the running app (schemathesis)."""

from __future__ import annotations

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from pydantic import ValidationError
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.api import openapi, shapes, v1
from tests.support.api_world import build_world, stored_submission

pytestmark = pytest.mark.postgres(
    reason=(
        "fuzzed inputs (huge integers, NUL bytes, long strings) reach the database, where PostgreSQL's "
        "INTEGER/VARCHAR/text checks differ from SQLite's"
    )
)


def test_document_is_valid_openapi_31(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    spec = response.json
    assert spec["openapi"].startswith("3.1")
    validate(spec, cls=OpenAPIV31SpecValidator)


def test_document_describes_every_route(app, client):
    spec = client.get("/api/v1/openapi.json").json
    documented = {(method.upper(), path) for path, operations in spec["paths"].items() for method in operations}
    routed = {
        (
            method,
            rule.rule.replace("<int:submission_id>", "{submission_id}")
            .replace("<benchmark>", "{benchmark}")
            .replace("<split>", "{split}"),
        )
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("api_v1.")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert documented == routed
    # One operation id each (the default board and a split's board are two views, not one under two routes).
    ids = [operation["operationId"] for operations in spec["paths"].values() for operation in operations.values()]
    assert len(ids) == len(set(ids)) == len(routed)


def test_every_error_response_uses_the_error_schema(client):
    spec = client.get("/api/v1/openapi.json").json
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema["$ref"].endswith(("/Error", "/QuotaError")), (method, path, status)
            if operation.get("security") != []:
                assert "401" in operation["responses"], (method, path)
                assert "WWW-Authenticate" in operation["responses"]["401"]["headers"], (method, path)


def test_the_schemas_are_the_models(client):
    """The document's schemas are generated from the shapes the views answer with, not written beside them."""
    schemas = client.get("/api/v1/openapi.json").json["components"]["schemas"]
    for name in ("Submission", "SubmissionCreated", "Leaderboard", "LeaderboardEntry", "Me", "Models", "Error"):
        model = getattr(shapes, name)
        assert schemas[name]["properties"].keys() == model.model_fields.keys(), name
    # A key the answer holds only sometimes is documented but not required (a leaderboard entry's gap).
    assert "gap" in schemas["LeaderboardEntry"]["properties"]
    assert "gap" not in schemas["LeaderboardEntry"]["required"]
    # An empty publish body is accepted: its body is documented as optional.
    publish = client.get("/api/v1/openapi.json").json["paths"]["/api/v1/submissions/{submission_id}/publish"]
    assert publish["post"]["requestBody"]["required"] is False


def test_a_shape_refuses_a_key_it_does_not_declare():
    """A service that adds a key to a document the API passes on fails here until the shape declares it, so
    the document cannot fall behind an answer."""
    figure = {"value": 50.0, "text": "50.0"}
    assert shapes.Figure.model_validate(figure).model_dump() == figure
    with pytest.raises(ValidationError, match="extra"):
        shapes.Figure.model_validate(figure | {"unit": "percent"})


def _has_constrained_input(operation: dict) -> bool:
    """Negative data needs something to violate: a request body or a typed (integer) parameter."""
    return "requestBody" in operation or any(
        p["schema"].get("type") == "integer" for p in operation.get("parameters", [])
    )


def _files_for_the_real_split(operation, world):
    valid = world.predictions().decode()
    files = st.one_of(
        st.binary(max_size=2000),
        st.text(max_size=2000).map(str.encode),
        # A valid file with some lines replaced by arbitrary text.
        st.lists(st.tuples(st.integers(0, 159), st.text(max_size=40)), max_size=5).map(
            lambda edits: _edit(valid, edits)
        ),
    )
    return files.map(
        lambda data: operation.Case(
            body={"file": data, "benchmark": "nlvr2", "split": "dev", "model_name": "fuzz"},
            media_type="multipart/form-data",
        )
    )


def _edit(text: str, edits: list[tuple[int, str]]) -> bytes:
    lines = text.splitlines()
    for index, replacement in edits:
        lines[index] = replacement
    return ("\n".join(lines) + "\n").encode()


def _documented_paths() -> dict:
    """The document's operations, read at collection from an app holding the API alone (the document is made
    from its views and their models, nothing else)."""
    api_alone = Flask(__name__)
    api_alone.register_blueprint(v1.bp)
    with api_alone.app_context():
        return openapi.document()["paths"]


FUZZ_CASES = [
    pytest.param(method.upper(), path, mode, id=f"{method.upper()} {path} {mode.value}")
    for path, operations in _documented_paths().items()
    for method, operation in operations.items()
    for mode in GenerationMode
    if mode is GenerationMode.POSITIVE or _has_constrained_input(operation)
]


@pytest.fixture(scope="module")
def schema(module_app):
    """The document as schemathesis reads it, loaded once: every app of the run serves the same one."""
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", module_app)


@pytest.fixture(scope="module")
def reading_world(module_app):
    """One world for the operations that only read (their fuzzing changes nothing another one reads)."""
    world = build_world(module_app)
    return module_app, world, stored_submission(module_app, world, description="d", publish=True)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "mode"), FUZZ_CASES)
def test_fuzzing_finds_no_server_errors_and_responses_match_the_document(request, schema, method, path, mode):
    """Schemathesis over every operation, as a real member on a database like the demo's, with data that
    fits the document (positive) and, where there is input to violate, data that does not (negative).
    Operations that write get a world of their own; those that read share one.

    The operations are driven through hypothesis here rather than with `schemathesis.pytest.from_fixture`,
    whose lazy loader fails under pytest 9 (it sets the private `Function._nodeid`).
    """
    if method == "GET":
        app, world, submission_id = request.getfixturevalue("reading_world")
    else:
        app = request.getfixturevalue("app")
        world = build_world(app)
        submission_id = stored_submission(app, world, description="d", publish=True)
    headers = {"Authorization": f"Bearer {world.tokens['member']}"}
    operation = schema[path][method]
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    strategy = operation.as_strategy(mode)
    if "{submission_id}" in path and mode is GenerationMode.POSITIVE:
        # Random ids mostly miss; half the examples go to the member's real submission.
        strategy = strategy | operation.as_strategy(mode, path_parameters={"submission_id": submission_id})
    if path == "/api/v1/submissions" and method == "POST" and mode is GenerationMode.POSITIVE:
        # Random slugs mostly miss; half the examples send arbitrary files to the real public split.
        strategy = strategy | _files_for_the_real_split(operation, world)

    @given(case=strategy)
    @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def run(case):
        case.call_and_validate(headers=headers, checks=checks, app=app)

    run()
