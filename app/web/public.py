"""Public pages: the benchmark list, leaderboards, health."""
from __future__ import annotations

from flask import Blueprint, render_template

from app.evaluation import get_task
from app.services import catalog, leaderboards

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
    board = leaderboards.board(benchmark, split)
    return render_template("public/leaderboard.html", board=board, task=get_task(board.benchmark.task_type))
