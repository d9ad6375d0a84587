"""Public pages: the benchmark list, leaderboards and their exports, health."""
from __future__ import annotations

import gzip

from flask import Blueprint, Response, render_template, request

from app.evaluation import get_task
from app.services import catalog, exports, leaderboards

bp = Blueprint("public", __name__)


@bp.get("/")
def index():
    return render_template("public/index.html", benchmarks=catalog.list_benchmarks())


@bp.get("/healthz")
def healthz():
    return {"status": "ok"}


@bp.get("/leaderboards/<benchmark>")
@bp.get("/leaderboards/<benchmark>/<split>")
def leaderboard(benchmark: str, split: str | None = None):
    board = leaderboards.board(benchmark, split, sort=request.args.get("sort"), order=request.args.get("order"),
                               page=request.args.get("page"))
    task = get_task(board.benchmark.task_type)

    def page() -> str:
        # The table is the same for every visitor: rendered once per board version, sort and page.
        table = leaderboards.rendered(board, lambda: render_template("public/_board.html", board=board, task=task))
        return render_template("public/leaderboard.html", board=board, task=task, table=table)

    if request.cookies:
        return page()  # a session: the layout shows who is logged in
    # Without cookies every visitor gets the same page: keep its bytes (it is read far more than it changes),
    # gzipped once for browsers that accept it (a page of 100 rows and its chart is about 160 kB, 20 kB zipped).
    zipped = request.accept_encodings["gzip"] > 0
    body = leaderboards.rendered(
        board, lambda: gzip.compress(page().encode(), 6, mtime=0) if zipped else page().encode(),
        extra=(request.full_path, zipped),
    )
    response = Response(body, content_type="text/html; charset=utf-8")
    if zipped:
        response.headers["Content-Encoding"] = "gzip"
    response.vary.update(("Cookie", "Accept-Encoding"))  # a shared cache must tell these apart
    return response


@bp.get("/leaderboards/<benchmark>/<split>/export.<fmt>")
def export(benchmark: str, split: str, fmt: str):
    result = exports.export(benchmark, split, fmt)
    return Response(result.body, mimetype=None, content_type=result.mimetype,
                    headers={"Content-Disposition": f'attachment; filename="{result.filename}"'})
