"""Public pages: the benchmark list, leaderboards and their exports, health."""
from __future__ import annotations

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
    # The table is the same for every visitor: rendered once per board version, sort and page.
    table = leaderboards.rendered(board, lambda: render_template("public/_board.html", board=board, task=task))
    return render_template("public/leaderboard.html", board=board, task=task, table=table)


@bp.get("/leaderboards/<benchmark>/<split>/export.<fmt>")
def export(benchmark: str, split: str, fmt: str):
    result = exports.export(benchmark, split, fmt)
    return Response(result.body, mimetype=None, content_type=result.mimetype,
                    headers={"Content-Disposition": f'attachment; filename="{result.filename}"'})
