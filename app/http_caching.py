"""HTTP caching: which responses a browser or a shared cache (a CDN, nginx) may keep, and for how long.

Four classes, decided here and nowhere else; the pages (app/web) and the read API (app/api) use the same
decorators, so they live beside both rather than inside either:
- public: the public reads (boards, the models view, exports, sample files, public submission pages, the
  home page, the read API) for a visitor without a login or token. They carry a strong ETag derived from
  what the page depends on (app/services/boards/page_versions.py), the build and the request's path and query, and
  `Cache-Control: public, max-age=<LEADERBOARD_PAGE_TTL>, stale-while-revalidate=60`. A matching
  If-None-Match is answered 304 from that one query (or none, within LEADERBOARD_PAGE_TTL), before the
  page is made.
- private: the same reads for a logged-in visitor (the layout shows who they are), and any response that
  sets a cookie.
- no-store: everything else: the console, account, teams, auth and submit pages, anything sent with an
  Authorization header, every non-GET request and every error or redirect.
- immutable: files whose address names their version (the API docs' Swagger UI files, under the pinned
  swagger-ui version): `Cache-Control: public, max-age=<a year>, immutable`, for everyone; a new version is a
  new address. (Flask's own `static` files are public and answer conditional requests.)
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path

from flask import Flask, Response, current_app, g, request
from flask_login import current_user

from app import page_cache

PUBLIC, PRIVATE, NO_STORE, IMMUTABLE = "public", "private", "no-store", "immutable"
STALE_WHILE_REVALIDATE = 60
A_YEAR = 365 * 24 * 3600
_READS = ("GET", "HEAD")
_SOURCES = Path(__file__).resolve().parent.parent  # the code and templates that make the pages


@functools.cache
def build() -> str:
    """A digest of the code and templates: a new release changes every ETag, as it may change every page.
    The same on every worker and server running the same release."""
    digest = hashlib.sha256()
    for folder in ("app", "templates"):
        for path in sorted((_SOURCES / folder).rglob("*")):
            if path.suffix in (".py", ".html", ".txt", ".md", ".j2") and path.is_file():
                digest.update(str(path.relative_to(_SOURCES)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _logged_in() -> bool:
    # Without a cookie there is no session to resolve (and the session is not touched).
    return bool(request.cookies) and current_user.is_authenticated


def public(depends_on: Callable[..., object] | None = None, *, zips: bool = False):
    """A public read. `depends_on(**view_args)` returns what the response depends on (one query), None
    for a view that depends on the release alone; `zips`: the view gzips its body when `gzipped()`."""

    def decorate(view):
        @functools.wraps(view)
        def answer(**values):
            if request.headers.get("Authorization") or _logged_in():
                g.http_cache = PRIVATE  # no-store with a token: decided in _headers
                return view(**values)
            suffix = "-gz" if zips and page_cache.gzipped() else ""

            def make_tag() -> str:
                state = depends_on(**values) if depends_on is not None else None
                seed = repr((build(), state, request.full_path.rstrip("?")))
                return hashlib.sha256(seed.encode()).hexdigest()[:32] + suffix

            # Like the anonymous pages themselves, the tag may be reused for LEADERBOARD_PAGE_TTL seconds
            # without a query (a change made by this process is seen at once); the page a tag is sent with
            # is always made after the tag, so it is never older than the version the tag names.
            tag = page_cache.recent_page(("etag", request.full_path, suffix), make_tag)
            g.http_cache, g.http_etag = PUBLIC, tag
            if request.if_none_match.contains_weak(tag):
                return Response(status=304)
            return view(**values)

        return answer

    return decorate


def immutable(view):
    """A file at an address that names its version: the same bytes for everyone, for good."""

    @functools.wraps(view)
    def answer(**values):
        g.http_cache = IMMUTABLE
        return view(**values)

    return answer


def _headers(response: Response) -> Response:
    if request.endpoint == "static":
        response.cache_control.public = True  # send_file already answers conditional requests
        return response
    if g.get("http_cache") == IMMUTABLE and response.status_code in (200, 304) and request.method in _READS:
        response.headers["Cache-Control"] = f"public, max-age={A_YEAR}, immutable"
        return response
    kind = g.get("http_cache")
    ok = response.status_code in (200, 304) and request.method in _READS
    if kind is None or not ok or request.headers.get("Authorization"):
        kind = NO_STORE
    elif response.headers.get("Set-Cookie") and kind == PUBLIC:
        kind = PRIVATE  # a cookie is for one visitor: the response is theirs
    if kind == PUBLIC:
        ttl = int(float(current_app.config.get("LEADERBOARD_PAGE_TTL") or 0))
        response.headers["Cache-Control"] = f"public, max-age={ttl}, stale-while-revalidate={STALE_WHILE_REVALIDATE}"
        response.set_etag(g.http_etag)
        # A logged-in visitor gets another page; a zipping view another body per encoding.
        response.vary.update(("Cookie", "Accept-Encoding"))
    elif kind == PRIVATE:
        response.headers["Cache-Control"] = "private, no-cache"
        response.headers.pop("ETag", None)
    else:
        response.headers["Cache-Control"] = "no-store"
        response.headers.pop("ETag", None)
    return response


def init_app(app: Flask) -> None:
    app.after_request(_headers)
