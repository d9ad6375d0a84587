"""Public pages: the benchmark list, leaderboards and their exports, health."""

from __future__ import annotations

from flask import Blueprint, Response, render_template, request

from app.http import caching
from app.services import catalog
from app.services.boards import comparisons, exports, leaderboards, models_view, page_versions
from app.services.maintenance import health
from app.web import progress_chart

bp = Blueprint("public", __name__)


def _benchmark(benchmark: str, **_) -> object:
    return page_versions.benchmark(benchmark, request.args.get("track"), request.args.get("verified"))


@bp.get("/")
@caching.public(page_versions.catalog)
def index():
    return render_template("public/index.html", summaries=leaderboards.summaries())


@bp.get("/about/blind-test")
@caching.public()
def blind_test():
    return render_template("public/blind_test.html")


@bp.get("/healthz")
def healthz():
    """200 while the server answers. A full or failing store, or failed or stuck jobs, are reported
    ("degraded", with the reasons) but do not take the server out of a load balancer: boards are still read."""
    return health.report()


@bp.get("/leaderboards/<benchmark>")
@bp.get("/leaderboards/<benchmark>/<split>")
@caching.public(_benchmark, zips=True)
def leaderboard(benchmark: str, split: str | None = None):
    if request.cookies:
        return _leaderboard_page(_board(benchmark, split))  # a session: who is logged in, the board as it is now
    return caching.shared_page(lambda: _board(benchmark, split), _leaderboard_page)


def _board(benchmark: str, split: str | None) -> leaderboards.Board:
    return leaderboards.board(
        benchmark,
        split,
        sort=request.args.get("sort"),
        order=request.args.get("order"),
        page=request.args.get("page"),
        view=request.args.get("view"),
        chosen=_columns(),
        q=request.args.get("q"),
        verified=request.args.get("verified"),
        track=request.args.get("track"),
        where=request.args.getlist("where"),
    )


def _leaderboard_page(board: leaderboards.Board) -> str:
    task = catalog.task_of(board.benchmark)
    # The table is the same for every visitor: rendered once per board version, sort and page.
    table = (
        caching.rendered(
            board,
            lambda: render_template(
                "public/_board.html",
                board=board,
                task=task,
                chart=progress_chart.for_board(board),
            ),
        )
        if board.split
        else ""
    )
    return render_template("public/leaderboard.html", board=board, task=task, table=table)


def _columns() -> tuple[str, ...] | None:
    """?columns=a,b or ?columns=a&columns=b (the chooser's checkboxes), as given."""
    given = tuple(value for value in request.args.getlist("columns") if value)
    return given or None


def _download(result: exports.Export) -> Response:
    return Response(
        result.body,
        mimetype=None,
        content_type=result.mimetype,
        headers={"Content-Disposition": f'attachment; filename="{result.filename}"'},
    )


@bp.get("/leaderboards/<benchmark>/<split>/sample.<ext>")
@caching.public(_benchmark)
def sample_file(benchmark: str, split: str, ext: str):
    name, body, media_type = catalog.sample_file(benchmark, split, ext)
    return Response(
        body,
        content_type=f"{media_type}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@bp.get("/leaderboards/<benchmark>/<split>/export.<fmt>")
@caching.public(_benchmark)
def export(benchmark: str, split: str, fmt: str):
    return _download(
        exports.export(
            benchmark,
            split,
            fmt,
            view=request.args.get("view"),
            chosen=_columns(),
            intervals=request.args.get("ci") != "0",
            verified=request.args.get("verified"),
            track=request.args.get("track"),
            where=request.args.getlist("where"),
        )
    )


@bp.get("/leaderboards/<benchmark>/models")
@caching.public(_benchmark)
def models(benchmark: str):
    table = models_view.models_table(benchmark, **_selection_args())
    return render_template("public/models.html", table=table, task=catalog.task_of(table.benchmark))


@bp.get("/leaderboards/<benchmark>/models/export.<fmt>")
@caching.public(_benchmark)
def models_export(benchmark: str, fmt: str):
    return _download(
        exports.export_models(benchmark, fmt, intervals=request.args.get("ci") != "0", **_selection_args())
    )


def _selection_args() -> dict:
    """?track=, ?where= (repeated) and ?verified=, as given (the service checks them)."""
    args = request.args
    return {"track": args.get("track"), "where": args.getlist("where"), "verified": args.get("verified")}


@bp.get("/compare")
def compare():
    """Two published entries of one split compared (?a=ID&b=ID): the same page for every viewer."""
    found = comparisons.compare(request.args.get("a"), request.args.get("b"))
    task = catalog.task_of(found.split.benchmark)
    return render_template("public/compare.html", comparison=found, task=task)


@bp.get("/compare.csv")
def compare_csv():
    """The discordant examples of two entries as CSV (id, a_correct, b_correct): public splits only."""
    filename, body = comparisons.compare_csv(request.args.get("a"), request.args.get("b"))
    return Response(
        body,
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
