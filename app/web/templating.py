"""What templates may call beyond their context: the board's links (sort, page, view, keeping the visitor's
other choices in the query), the one way a score is written, and the visibility predicates of a split
(services/blind_test/visibility.py), so that no template decides what may be shown by itself."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Flask

from app.evaluation.display import score_text
from app.services.blind_test import visibility
from app.services.boards.leaderboards import Board, Column
from app.services.catalog import phases
from app.services.catalog.tracks import VERIFIED


def _query(board: Board, **params) -> str:
    base = {
        "view": board.view if board.view != "entries" else None,
        "columns": board.chosen,
        "q": board.q,
        **board.selection_params,
    }
    if board.sort is not None:
        base.update(sort=board.sort.key, order=board.order)
    base.update(params)
    return "?" + urlencode({k: v for k, v in base.items() if v is not None}, doseq=True, safe=":,")


def sort_link(board: Board, column: Column) -> str:
    """?sort=<subset>:<metric>&order=desc|asc: best first (descending; ascending where less is better, as the
    family declares the metric), toggled when already sorted that way."""
    first = "asc" if column.direction == "lower is better" else "desc"
    then = "desc" if first == "asc" else "asc"
    order = then if board.sort == column and board.order == first else first
    return _query(board, sort=column.key, order=order)


def verified_link(board: Board, only: bool) -> str:
    """The board with only its verified entries (ranked among themselves), or with every entry again."""
    return track_link(board, VERIFIED if only else None)


def track_link(board: Board, track: str | None) -> str:
    """The board of a named track (its entries ranked among themselves; None: every entry), from its first page
    in its default order (a rank sort of another set of entries)."""
    return _query(board, track=track, where=None, verified=None, page=None, sort=None, order=None)


def page_link(board: Board, page: int) -> str:
    return _query(board, page=page)


def view_link(board: Board, view: str) -> str:
    return _query(board, view=view if view != "entries" else None, page=None)


def split_phase(split) -> phases.Phase:
    """A split's phase: the one a board's page was asked with (leaderboards.SplitInfo.phase, part of its cache
    keys), else now."""
    return getattr(split, "phase", None) or phases.of(split)


def search_link(board: Board, q: str | None) -> str:
    """The board with another search (None: none), from its first page."""
    return _query(board, q=q, page=None)


def init_app(app: Flask) -> None:
    for function in (
        sort_link,
        page_link,
        view_link,
        verified_link,
        track_link,
        split_phase,
        phases.moment_text,
        search_link,
        visibility.scores_are_public,
        visibility.counts_only,
        visibility.release_policy,
    ):
        app.add_template_global(function)
    app.jinja_env.filters["score"] = score_text
