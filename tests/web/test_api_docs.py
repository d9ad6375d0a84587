"""Issue 27: /api/docs shows the OpenAPI document in Swagger UI, whose files this site serves itself (the pinned
swagger-ui-bundle package: no CDN, so the page works offline), under the site's strict Content-Security-Policy."""

from __future__ import annotations

import re
from pathlib import Path

from openapi_spec_validator import OpenAPIV30SpecValidator, validate
from swagger_ui_bundle import swagger_ui_path

from app.http.security import CONTENT_SECURITY_POLICY

ADDRESS = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", re.IGNORECASE)
LOADED = re.compile(r"""<(?:script\b[^>]*\bsrc|link\b[^>]*\bhref)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
A_YEAR = "public, max-age=31536000, immutable"


def test_the_docs_page_loads_only_this_sites_files_and_they_are_served(app):
    visitor = app.test_client(use_cookies=False)
    response = visitor.get("/api/docs")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    addresses = ADDRESS.findall(page)
    assert addresses and all(a.startswith("/") and not a.startswith("//") for a in addresses), addresses
    assert not [a for a in addresses if re.match(r"(?:https?:)?//", a, re.IGNORECASE)]
    # The site's policy, unchanged: Swagger UI is started by a file, not an inline script.
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert not INLINE_SCRIPT.search(page)
    # Swagger UI 4 reads OpenAPI 3.0 alone: the page gets the same document in 3.0's spelling.
    assert 'id="swagger-ui" data-url="/api/docs/openapi-3.0.json"' in page and 'href="/api/v1/openapi.json"' in page
    shown = visitor.get("/api/docs/openapi-3.0.json").json
    validate(shown, cls=OpenAPIV30SpecValidator)
    assert shown["paths"].keys() == visitor.get("/api/v1/openapi.json").json["paths"].keys()

    loaded = LOADED.findall(page)
    vendor = {Path(a).name: a for a in loaded if "/swagger-ui-4.15.5/" in a}
    assert set(vendor) == {"swagger-ui.css", "swagger-ui-bundle.js"}
    for name, address in vendor.items():
        served = visitor.get(address)
        assert served.status_code == 200, address
        assert served.get_data() == (Path(swagger_ui_path) / name).read_bytes()
        assert served.mimetype == ("text/css" if name.endswith(".css") else "text/javascript")
        assert served.headers["Cache-Control"] == A_YEAR  # the address names the version
    starter = next(a for a in loaded if a.endswith("/api-docs.js"))
    script = visitor.get(starter).get_data(as_text=True)
    assert "SwaggerUIBundle" in script and "validatorUrl: null" in script  # no badge fetched from swagger.io
    assert not re.search(r"https?://", script)
    assert visitor.get("/api/docs/swagger-ui-4.15.5/swagger-ui.js.map").status_code == 404  # only what the page needs
    assert 'href="/api/docs"' in visitor.get("/").get_data(as_text=True)  # linked from every page's footer
