"""The maintainers' console under /console: admins only (anonymous visitors are sent to log in, other users get 403).

Importing the package registers every console route on `bp` (app/web/console/blueprint.py); the page modules
import the blueprint from there, never from this package, so no import runs in a circle.

May import: app.services.maintenance, app.services.blind_test, app.services.catalog, app.services.errors,
app.http, app.models.
"""

from __future__ import annotations

from app.web.console import benchmarks, flags, views  # noqa: F401  (they register their routes on bp)
from app.web.console.blueprint import admin_required, bp

__all__ = ["admin_required", "bp"]
