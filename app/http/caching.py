"""HTTP caching, in one place: which responses a browser or a shared cache (a CDN, nginx) may keep, and for
how long (Cache-Control and ETags), and the pages this process keeps in memory to answer them cheaply.

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

Kept in this process's memory: a board's rendered table per board version, sort and page (the same for
every visitor), and whole pages (and ETags) for visitors without a session, reused for a moment.
(What a page depends on is read by a service, app/services/boards/page_versions.py, since it reads tables;
the validators made from it are decided here.)
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from flask import Flask, Response, current_app, g, request
from flask_login import current_user
from markupsafe import Markup
from sqlalchemy import event

from app.db import db
from app.lru import LRU
from app.models import Split
from app.services.boards.leaderboards import Board

T = TypeVar("T")

PUBLIC, PRIVATE, NO_STORE, IMMUTABLE = "public", "private", "no-store", "immutable"
STALE_WHILE_REVALIDATE = 60
A_YEAR = 365 * 24 * 3600
_READS = ("GET", "HEAD")
_SOURCES = Path(__file__).resolve().parents[2]  # the code and templates that make the pages

# --- pages kept in memory -----------------------------------------------------------------------------------
_SIZE = 128  # pages per memo; a rendered page of 100 rows is about 200 kB
_rendered: LRU[Markup | bytes] = LRU(_SIZE)
_recent: LRU[Any] = LRU(_SIZE, ttl=lambda: float(current_app.config.get("LEADERBOARD_PAGE_TTL") or 0))
_changes = 0  # boards this process has changed: part of recent_page's key, so its own changes show at once


@event.listens_for(Split.board_version, "set")
def _board_changed(_target, _value, _old, _initiator) -> None:
    global _changes
    _changes += 1


def rendered(board: Board, render: Callable[[], str | bytes], *, extra: tuple = ()):
    """What `render()` (a view's template) makes of a board, made once per board version, sort, page and
    `extra` (the view's own distinctions): 100 rows of a table are most of a page's cost, and they are
    the same for every visitor. A str result comes back as Markup; bytes as they are."""

    def make():
        result = render()
        return Markup(result) if isinstance(result, str) else result

    if board.cache_key is None:
        return make()
    return _rendered.get_or_make((*board.cache_key, board.benchmark, *extra), make)


def recent_page(key: tuple, make: Callable[[], T]) -> T:
    """A page (or an ETag) for visitors without a session, reused for LEADERBOARD_PAGE_TTL seconds without
    asking the database: a popular board is read far more often than it changes, and a page up to that old
    is as good as current. (Each worker keeps its own; a change made in this worker is seen here at once.)"""
    if float(current_app.config.get("LEADERBOARD_PAGE_TTL") or 0) <= 0:
        return make()
    return _recent.get_or_make((str(db.engine.url), _changes, *key), make)


def gzipped() -> bool:
    """Whether a shared page is sent zipped: for visitors without cookies (the page every one of them gets)
    whose browser accepts gzip."""
    return not request.cookies and request.accept_encodings["gzip"] > 0


def shared_page(make_board: Callable[[], Board], render: Callable[[Board], str]) -> Response:
    """The page every visitor without cookies gets: its bytes kept per board version (it is read far more
    than it changes), gzipped once for browsers that accept it (100 rows and the chart: ~160 kB, 20 kB
    zipped), and reused for a moment (LEADERBOARD_PAGE_TTL) once its ETag's query confirmed the version."""
    zipped = gzipped()

    def make() -> bytes:
        board = make_board()

        def body() -> bytes:
            page = render(board).encode()
            return gzip.compress(page, 6, mtime=0) if zipped else page

        return rendered(board, body, extra=(request.full_path, zipped))

    # Keyed by the ETag too: a page reused for a moment is never older than the version its ETag names.
    response = Response(
        recent_page((g.get("http_etag"), request.full_path, zipped), make), content_type="text/html; charset=utf-8"
    )
    if zipped:
        response.headers["Content-Encoding"] = "gzip"
    response.vary.update(("Cookie", "Accept-Encoding"))  # a shared cache must tell these apart
    return response


# --- Cache-Control and ETags --------------------------------------------------------------------------------


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
            suffix = "-gz" if zips and gzipped() else ""

            def make_tag() -> str:
                state = depends_on(**values) if depends_on is not None else None
                seed = repr((build(), state, request.full_path.rstrip("?")))
                return hashlib.sha256(seed.encode()).hexdigest()[:32] + suffix

            # Like the anonymous pages themselves, the tag may be reused for LEADERBOARD_PAGE_TTL seconds
            # without a query (a change made by this process is seen at once); the page a tag is sent with
            # is always made after the tag, so it is never older than the version the tag names.
            tag = recent_page(("etag", request.full_path, suffix), make_tag)
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
