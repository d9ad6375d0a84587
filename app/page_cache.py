"""Pages kept in this process's memory: a board's rendered table per board version, sort and page (the
same for every visitor), and whole pages for visitors without a session, reused for a moment."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Response, current_app, g, request
from markupsafe import Markup
from sqlalchemy import event

from app.db import db
from app.lru import LRU
from app.models import Split
from app.services.boards.leaderboards import Board

T = TypeVar("T")

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
