"""Issue 27: /api/docs shows the OpenAPI document in Swagger UI, whose files this site serves itself (the pinned
swagger-ui-py package: no CDN, so the page works offline), under the site's strict Content-Security-Policy.
Issue 36: Swagger UI 5, which reads the OpenAPI 3.1 document as it is served (no 3.0 copy)."""

from __future__ import annotations

import re
from pathlib import Path

from app.api.docs import SWAGGER_UI, SWAGGER_UI_VERSION
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
    # Swagger UI 5 reads OpenAPI 3.1: the page shows the API's own document, and no 3.0 copy is made.
    assert 'id="swagger-ui" data-url="/api/v1/openapi.json"' in page
    assert visitor.get("/api/v1/openapi.json").json["openapi"].startswith("3.1")
    assert visitor.get("/api/docs/openapi-3.0.json").status_code == 404

    loaded = LOADED.findall(page)
    vendor = {Path(a).name: a for a in loaded if f"/swagger-ui-{SWAGGER_UI_VERSION}/" in a}
    assert set(vendor) == {"swagger-ui.css", "swagger-ui-bundle.js"}
    for name, address in vendor.items():
        served = visitor.get(address)
        assert served.status_code == 200, address
        assert served.get_data() == (SWAGGER_UI / name).read_bytes()
        assert served.mimetype == ("text/css" if name.endswith(".css") else "text/javascript")
        assert served.headers["Cache-Control"] == A_YEAR  # the address names the version
    starter = next(a for a in loaded if a.endswith("/api-docs.js"))
    script = visitor.get(starter).get_data(as_text=True)
    assert "SwaggerUIBundle" in script and "validatorUrl: null" in script  # no badge fetched from swagger.io
    assert not re.search(r"https?://", script)
    bundle = visitor.get(vendor["swagger-ui-bundle.js"]).get_data(as_text=True)
    assert int(re.search(r'PACKAGE_VERSION:"(\d+)\.', bundle).group(1)) >= 5  # Swagger UI 5 reads OpenAPI 3.1
    # Only what the page needs.
    assert visitor.get(f"/api/docs/swagger-ui-{SWAGGER_UI_VERSION}/swagger-ui.css.map").status_code == 404
    assert 'href="/api/docs"' in visitor.get("/").get_data(as_text=True)  # linked from every page's footer
