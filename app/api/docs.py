"""The API's documentation page, /api/docs: Swagger UI over /api/v1/openapi.json.

The pinned Swagger UI (4.15.5) reads OpenAPI 3.0 and refuses 3.1: the page is given the same document in
3.0's spelling (openapi.swagger_ui_document, at /api/docs/openapi-3.0.json).

Swagger UI comes from the pinned pip package swagger-ui-bundle (its files under
`swagger_ui_bundle.swagger_ui_path`); the two files the page needs are served from here, under the Swagger UI
version, so the page asks nothing of another site and works offline. The site's Content-Security-Policy allows
scripts from this site only: the page starts Swagger UI from a file (static/api-docs.js), not an inline script.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, render_template, send_file
from swagger_ui_bundle import swagger_ui_path

from app.api import openapi
from app.http import caching

bp = Blueprint("api_docs", __name__, url_prefix="/api/docs")

SWAGGER_UI = Path(swagger_ui_path)  # .../vendor/swagger-ui-<version>
SWAGGER_UI_VERSION = SWAGGER_UI.name.removeprefix("swagger-ui-")  # "4.15.5": part of the files' addresses


@bp.get("")
@caching.public()
def page():
    return render_template("api/docs.html")


@bp.get("/openapi-3.0.json")
@caching.public()
def document():
    """What the page shows: /api/v1/openapi.json in OpenAPI 3.0's spelling, the one this Swagger UI reads."""
    return openapi.swagger_ui_document()


def _vendor(name: str, mimetype: str):
    # No source map is served (the files name one): browsers ask for it only with their developer tools open.
    return send_file(SWAGGER_UI / name, mimetype=mimetype, conditional=True, etag=True)


@bp.get(f"/swagger-ui-{SWAGGER_UI_VERSION}/swagger-ui.css")
@caching.immutable
def stylesheet():
    return _vendor("swagger-ui.css", "text/css")


@bp.get(f"/swagger-ui-{SWAGGER_UI_VERSION}/swagger-ui-bundle.js")
@caching.immutable
def script():
    return _vendor("swagger-ui-bundle.js", "text/javascript")
