"""Exports of a leaderboard for papers and scripts: CSV, JSON, Markdown and LaTeX (a booktabs table float).

Every row has the rank (and its 95% rank interval), model, team ("Anonymous" for anonymous entries), date,
each chosen column's value with its 95% interval (ci_low, ci_high) and the paper and code links; reference
rows follow, unranked. The models view (one row per model across splits) exports through the same
functions: its rows answer value(column) and interval(column) like a board's entries. Scores are written
as text by app.evaluation.display.score_text, the one rounding every page uses; JSON (and the API) carry each
score's value and, beside it, that text. A released figure of a blind test (display.Figure) is its own value:
CSV writes it as the board does ("51", "81.25"), where other values get six decimals.
Everything a team wrote is escaped for the format: CSV cells that a spreadsheet would run as a formula
are defused, Markdown punctuation is backslash-escaped, and LaTeX special characters are replaced.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.evaluation.display import Figure, score_text
from app.services.blind_test import visibility
from app.services.boards import leaderboards, models_view
from app.services.boards.board_snapshots import GAP, Entry, ReferenceRow
from app.services.boards.leaderboards import Board, Column
from app.services.errors import NotFound

FORMATS = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "md": "text/markdown; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
}


@dataclass(frozen=True)
class Export:
    body: bytes
    mimetype: str
    filename: str


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise NotFound(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")


def export(
    benchmark_slug: str,
    split_slug: str,
    fmt: str,
    *,
    view: str | None = None,
    chosen: str | tuple[str, ...] | None = None,
    intervals: bool = True,
) -> Export:
    """The whole leaderboard of a split (every page, the chosen view and columns) in a format; NotFound for
    an unknown format. `intervals=False` leaves the score intervals out of the LaTeX table."""
    _check(fmt)
    board = leaderboards.board(benchmark_slug, split_slug, view=view, chosen=chosen, paginate=False)
    if board.split is None:
        raise NotFound(f"{benchmark_slug} has no splits to export")
    writers: dict[str, Callable[[Board], str]] = {
        "csv": to_csv,
        "json": to_json,
        "md": to_markdown,
        "tex": lambda b: to_latex(b, intervals=intervals),
    }
    suffix = "-teams" if board.view == "teams" else ""
    return Export(
        writers[fmt](board).encode("utf-8"), FORMATS[fmt], f"{board.benchmark.slug}-{board.split.slug}{suffix}.{fmt}"
    )


def export_models(benchmark_slug: str, fmt: str, *, intervals: bool = True) -> Export:
    """The models view of a benchmark (one row per model across splits) in a format."""
    _check(fmt)
    table = models_view.models_table(benchmark_slug)
    writers: dict[str, Callable[[Any], str]] = {
        "csv": to_csv,
        "json": models_json,
        "md": to_markdown,
        "tex": lambda t: to_latex(t, intervals=intervals),
    }
    return Export(writers[fmt](table).encode("utf-8"), FORMATS[fmt], f"{table.benchmark.slug}-models.{fmt}")


def _team(entry: Entry | models_view.ModelRow) -> str:
    return entry.team if entry.team is not None else "Anonymous"


def _date(row: Any) -> str:
    """An entry's (or a model row's) submission date, a reference row's creation date."""
    moment = row.created_at if row.kind == "reference" else row.submitted_at
    return f"{moment:%Y-%m-%d}"


def _cell_text(row: Entry | ReferenceRow, column: Column) -> str:
    """'71.3 [70.1, 72.5]' (reference rows: the value alone; '–' when there is none; a gap larger than
    sampling explains is marked '†')."""
    value = row.value(column)
    if value is None:
        return "–"
    low, high = row.interval(column)
    bounds = f" [{score_text(low)}, {score_text(high)}]" if low is not None and high is not None else ""
    return score_text(value) + bounds + _gap_mark(row, column)


def _gap_mark(row, column: Column) -> str:
    return " †" if column.subset == GAP and getattr(row, "gap_marked", None) else ""


def _gap_words(board) -> str:
    """The sentence that explains a gap column, when the table has one."""
    if not any(column.subset == GAP for column in board.columns):
        return ""
    return (
        "; gap = queried minus sealed part, † where larger than sampling explains (one-sided, 0.05, cluster bootstrap)"
    )


def _rank_text(rank: int | None, missing: str = "–") -> str:
    """A rank, or a dash for a model with no entry on the ranking split (models view)."""
    return missing if rank is None else str(rank)


def _counts_only(board) -> list[bool]:
    """For each split the table's figures come from (a board's one; a models table's public splits), whether
    it is a blind test before its reveal, whose figures come from counts alone."""
    if isinstance(board, Board):
        return [] if board.split is None else [visibility.counts_only(board.split)]
    return [visibility.counts_only(split) for split in getattr(board, "splits", [])]


def _interval_words(board) -> str:
    """How the table's intervals were made: from counts alone on a blind test before its reveal."""
    kinds = _counts_only(board)
    if kinds and all(kinds):
        return "Wilson intervals from each entry's count (whole split only)"
    if any(kinds):
        return "cluster-bootstrap intervals (on a blind test not yet revealed, Wilson intervals from the counts)"
    return "cluster-bootstrap intervals"


def _rank_test_words(board) -> str:
    """The test behind the ranks: before a blind test's reveal, one on the released counts alone (a models
    table's ranks are its ranking split's)."""
    split = board.split if isinstance(board, Board) else getattr(board, "ranking_split", None)
    if split is not None and visibility.counts_only(split):
        return "one-sided two-proportion z-test on the counts, Holm"
    return "one-sided exact McNemar, Holm"


def _is_web(url: str | None) -> bool:
    return url is not None and url.lower().startswith(("http://", "https://"))


# --- CSV -------------------------------------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str | float | int:
    """Numbers as they are; text that a spreadsheet would evaluate (=, +, -, @ ...) behind a quote."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _round(value: float | None) -> float | str:
    # Six decimals: enough that writing the value with one decimal (display.score_text) gives what the pages
    # show; four could land on a .x5 the stored value is not on (44.44995 -> 44.45). A released figure is
    # written as every page writes it: it has no more digits to give.
    if value is None:
        return ""
    return score_text(value) if isinstance(value, Figure) else round(value, 6)


def to_csv(board: Board) -> str:
    header = ["rank", "model", "team", "date"]
    for column in board.columns:
        header += [column.key, f"{column.key} ci_low", f"{column.key} ci_high"]
    gap = any(column.subset == GAP for column in board.columns)
    if gap:
        header += ["gap p", "gap larger than sampling"]
    header += ["rank_low", "rank_high", "paper_url", "code_url", "type"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180; quotes cells with commas, quotes, newlines
    writer.writerow(header)
    # Entries (or a models table's rows, which read alike) and reference rows.
    rows: list[Any] = [*board.entries, *board.references]
    for row in rows:
        entry = row if row.kind == "entry" else None
        if entry is not None:
            name, team, link, code = entry.model_name, _team(entry), entry.paper_url, entry.code_url
        else:
            name, team, link, code = row.name, "", row.source_url, None
        cells: list = [entry.rank if entry else "", name, team, _date(row)]
        for column in board.columns:
            low, high = row.interval(column)
            cells += [_round(row.value(column)), _round(low), _round(high)]
        if gap:
            cells += [
                entry.gap_p if entry else None,
                "" if entry is None or entry.gap_marked is None else str(entry.gap_marked).lower(),
            ]
        cells += [entry.rank_low if entry else None, entry.rank_high if entry else None, link, code, row.kind]
        writer.writerow([csv_cell(cell) for cell in cells])
    return out.getvalue()


# --- JSON ------------------------------------------------------------------------------------------------


def score_document(value: float | None, low: float | None, high: float | None) -> dict:
    """A score as JSON (exports and the API): its value and 95% interval, and each as the board writes it
    (display.score_text; null where there is none), so that a script prints what the pages print."""

    def text(number: float | None) -> str | None:
        return None if number is None else score_text(number)

    return {
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "text": text(value),
        "ci_low_text": text(low),
        "ci_high_text": text(high),
    }


def _scores(row: Entry, columns: list[Column] | None = None) -> dict:
    """Scores of the chosen columns (every score when None) with their intervals."""
    keys = None if columns is None else {column.key for column in columns}
    result: dict[str, dict] = {}
    for subset, metrics in row.scores.items():
        for metric, value in metrics.items():
            if keys is not None and f"{subset}:{metric}" not in keys:
                continue
            low, high = row.interval(Column(subset, metric, ""))
            result.setdefault(subset, {})[metric] = score_document(value, low, high)
    return result


def to_json(board: Board) -> str:
    body = {
        "benchmark": board.benchmark.slug,
        "split": board.split.slug if board.split else None,
        "scores_public": board.scores_public,
        "view": board.view,
        "columns": [
            {"subset": c.subset, "metric": c.metric, "label": c.label, "examples": c.size} for c in board.columns
        ],
        "entries": [
            {
                "rank": entry.rank,
                "rank_low": entry.rank_low,
                "rank_high": entry.rank_high,
                "submission_id": entry.submission_id,
                "model": entry.model_name,
                "team": _team(entry),
                "anonymous": entry.team is None,
                "date": entry.submitted_at.isoformat(),
                "paper_url": entry.paper_url,
                "code_url": entry.code_url,
                "scores": _scores(entry, board.columns),
                **({"gap": gap_document(entry)} if any(c.subset == GAP for c in board.columns) else {}),
            }
            for entry in board.entries
        ],
        "references": [
            {
                "name": r.name,
                "source_url": r.source_url,
                "date": r.created_at.isoformat(),
                "scores": {
                    s: {m: {"value": v, "text": score_text(v)} for m, v in ms.items()} for s, ms in r.scores.items()
                },
            }
            for r in board.references
        ],
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def gap_document(entry: Entry) -> dict | None:
    """An entry's gap on a revealed sealed split (queried minus sealed, primary metric), as JSON."""
    values = entry.scores.get(GAP)
    if not values or entry.gap_marked is None:
        return None
    metric, value = next(iter(values.items()))
    return {"metric": metric, "value": value, "p": entry.gap_p, "larger_than_sampling": entry.gap_marked}


def models_document(benchmark_slug: str) -> dict:
    """The models view as the API and the JSON export give it."""
    return _models_body(models_view.models_table(benchmark_slug))


def models_json(table: models_view.ModelsTable) -> str:
    return json.dumps(_models_body(table), ensure_ascii=False, indent=2) + "\n"


def _models_body(table: models_view.ModelsTable) -> dict:
    return {
        "benchmark": table.benchmark.slug,
        "ranked_by": table.ranking_split.slug if table.ranking_split else None,
        "splits": [{"slug": s.slug, "name": s.name} for s in table.splits],
        "columns": [
            {
                "key": c.key,
                "split": c.split_slug,
                "subset": c.subset,
                "metric": c.metric,
                "label": c.label,
                "examples": c.size,
            }
            for c in table.columns
        ],
        "models": [
            {
                "rank": row.rank,
                "rank_low": row.rank_low,
                "rank_high": row.rank_high,
                "model": row.model_name,
                "team": _team(row),
                "anonymous": row.team is None,
                "cells": {
                    column.key: {"submission_id": cell.submission_id, **score_document(cell.value, cell.low, cell.high)}
                    for column in table.columns
                    if (cell := row.cell(column)) is not None
                },
            }
            for row in table.entries
        ],
    }


# --- Markdown --------------------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = set("\\|`*_[]<>#!~")


def markdown_escape(text: str | None) -> str:
    """Backslash-escape what would end a table cell (|), escape itself (\\) or start markup; newlines
    become spaces (a table row is one line)."""
    text = " ".join((text or "").splitlines())
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in text)


_URL_QUOTED = {"\\": "%5C", "<": "%3C", ">": "%3E", "|": "%7C", "\n": "%0A", "\r": "%0D", " ": "%20"}


def _markdown_link(label: str, url: str | None) -> str:
    if url is None or not _is_web(url):
        return markdown_escape(url)
    destination = "".join(_URL_QUOTED.get(ch, ch) for ch in url)
    return f"[{label}](<{destination}>)"


def to_markdown(board: Board) -> str:
    header = ["Rank", "Model", "Team", "Date", *(markdown_escape(c.label) for c in board.columns), "Paper", "Code"]
    title = f"{markdown_escape(board.benchmark.name)} — {markdown_escape(board.split.name if board.split else '')}"
    lines = [
        f"**{title}**: scores in %, "
        f"95% {_interval_words(board)} in brackets; ranks count the entries significantly better{_gap_words(board)}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---:", "---", "---", "---", *("---:" for _ in board.columns), "---", "---"]) + "|",
    ]
    for entry in board.entries:
        cells = [
            _rank_text(entry.rank),
            markdown_escape(entry.model_name),
            markdown_escape(_team(entry)),
            _date(entry),
            *(_cell_text(entry, c) for c in board.columns),
            _markdown_link("paper", entry.paper_url),
            _markdown_link("code", entry.code_url),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for reference in board.references:
        cells = [
            "–",
            f"*{markdown_escape(reference.name)}* (reference)",
            "",
            _date(reference),
            *(_cell_text(reference, c) for c in board.columns),
            _markdown_link("source", reference.source_url),
            "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- LaTeX -----------------------------------------------------------------------------------------------

_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "%": r"\%",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def latex_escape(text: str | None) -> str:
    """Text safe inside a LaTeX tabular cell: every special character replaced, newlines as spaces."""
    text = " ".join((text or "").splitlines())
    return "".join(_LATEX.get(ch, ch) for ch in text)


def _latex_label(label: str) -> str:
    return latex_escape(label).replace("→", r"$\to$")


_LATEX_SHORT = {"accuracy": "Acc.", "consistency": "Cons."}


def _latex_header(column: Column) -> str:
    """Short headers, so that the default columns fit a column of a two-column paper."""
    label = column.label
    for word, short in (
        ("accuracy", "acc."),
        ("Accuracy", "Acc."),
        ("consistency", "cons."),
        ("Consistency", "Cons."),
        ("Unbalanced", "Unbal."),
        ("Balanced", "Bal."),
    ):
        label = label.replace(word, short)
    return _latex_label(label)


def _latex_value(row, column: Column, best: dict[str, float]) -> str:
    value = row.value(column)
    if value is None:
        return "--"
    text = score_text(value) + ("$^\\dagger$" if _gap_mark(row, column) else "")
    return f"\\textbf{{{text}}}" if row.kind == "entry" and best.get(column.key) == value else text


def _latex_interval(row, column: Column) -> str:
    low, high = row.interval(column)
    if low is None or high is None:
        return ""
    return f"{{\\scriptsize {score_text(low)}--{score_text(high)}}}"


def _latex_model(row) -> str:
    if row.kind == "reference":
        return f"\\textit{{{latex_escape(row.name)}}}"
    return f"{latex_escape(row.model_name)} ({latex_escape(_team(row))})"


def _latex_gap_words(board) -> str:
    if not any(column.subset == GAP for column in getattr(board, "columns", [])):
        return ""
    return (
        "; gap = queried minus sealed part, $\\dagger$ where larger than sampling explains (one-sided, 0.05, "
        "cluster bootstrap)"
    )


def to_latex(board, *, intervals: bool = True, today: datetime | None = None) -> str:
    """A complete table float (booktabs + tabularx, \\columnwidth wide): rank, model (team), the chosen
    columns with each column's best value bold and, unless intervals=False, the 95% intervals on a line
    beneath in small type. Links are left out (papers cite them in the text)."""
    today = today or datetime.now(UTC)
    best = board.best
    title = f"{latex_escape(board.benchmark.name)} {latex_escape(board.split.name)}"
    label = "tab:" + "-".join(part for part in (board.benchmark.slug, board.split.slug) if part)
    spec = "@{}rX" + "r" * len(board.columns) + "@{}"
    header = ["", "Model (team)", *(_latex_header(c) for c in board.columns)]
    lines = [
        f"% {title} leaderboard exported by Holdout on {today:%Y-%m-%d}.",
        "% Needs \\usepackage{booktabs} and \\usepackage{tabularx}.",
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\setlength{\\tabcolsep}{3pt}",
        f"\\begin{{tabularx}}{{\\columnwidth}}{{{spec}}}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
    ]
    lines += _latex_body(board, best, intervals)
    what = f"; 95\\% {_interval_words(board)} beneath" if intervals else ""
    lines += [
        "\\bottomrule",
        "\\end{tabularx}",
        f"\\caption{{{title} leaderboard (Holdout, {today:%Y-%m-%d}): scores in \\%{what}; best in bold; "
        f"rank = 1 + entries significantly better ({_rank_test_words(board)}){_latex_gap_words(board)}.}}",
        f"\\label{{{label}}}",
        "\\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _latex_body(board, best: dict[str, float], intervals: bool) -> list[str]:
    """The table's rows: each entry (with its intervals' line beneath unless intervals=False), then the
    references after a rule."""
    lines = []
    for entry in board.entries:
        lines.append(
            " & ".join(
                [
                    _rank_text(entry.rank, "--"),
                    _latex_model(entry),
                    *(_latex_value(entry, c, best) for c in board.columns),
                ]
            )
            + " \\\\"
        )
        if intervals and any(entry.interval(c)[0] is not None for c in board.columns):
            lines.append(" & ".join(["", "", *(_latex_interval(entry, c) for c in board.columns)]) + " \\\\")
    if board.references:
        lines.append("\\midrule")
        for reference in board.references:
            lines.append(
                " & ".join(["--", _latex_model(reference), *(_latex_value(reference, c, best) for c in board.columns)])
                + " \\\\"
            )
    return lines
