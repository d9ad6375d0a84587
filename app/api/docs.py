"""The API's documentation page, /api/docs: Swagger UI 5 (which reads OpenAPI 3.1) over /api/v1/openapi.json.

Swagger UI comes from the pinned pip package swagger-ui-py (its files under `swagger_ui/static`); the two files
the page needs are served from here, under the package's version, so the page asks nothing of another site and
works offline. The site's Content-Security-Policy allows scripts from this site only: the page starts Swagger
UI from a file (static/api-docs.js), not an inline script.
"""

from __future__ import annotations

from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

from flask import Blueprint, render_template, send_file

from app.http import caching

bp = Blueprint("api_docs", __name__, url_prefix="/api/docs")

# Found without importing swagger_ui (its __init__ loads a handler for every web framework it knows).
_SPEC = find_spec("swagger_ui")
assert _SPEC is not None and _SPEC.origin is not None, "swagger-ui-py is a pinned requirement"
SWAGGER_UI = Path(_SPEC.origin).parent / "static"
SWAGGER_UI_VERSION = version("swagger-ui-py")  # "25.7.1": part of the files' addresses


@bp.get("")
@caching.public()
def page():
    return render_template("api/docs.html")


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
