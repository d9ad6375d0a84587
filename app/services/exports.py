"""Exports of a leaderboard for papers and scripts: CSV, JSON, Markdown and LaTeX (booktabs).

Every row has the rank, model, team ("Anonymous" for anonymous entries), date, each column's value with
its 95% interval (ci_low, ci_high) and the paper and code links; reference rows follow, unranked.
Everything a team wrote is escaped for the format: CSV cells that a spreadsheet would run as a formula
are defused, Markdown punctuation is backslash-escaped, and LaTeX special characters are replaced.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from app.services import leaderboards
from app.services.errors import NotFound
from app.services.leaderboards import Board, Column, Entry, ReferenceRow

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


def export(benchmark_slug: str, split_slug: str, fmt: str) -> Export:
    """The whole leaderboard of a split (every page) in a format; NotFound for an unknown format."""
    if fmt not in FORMATS:
        raise NotFound(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    board = leaderboards.board(benchmark_slug, split_slug)
    text = {"csv": to_csv, "json": to_json, "md": to_markdown, "tex": to_latex}[fmt](board)
    return Export(text.encode("utf-8"), FORMATS[fmt], f"{board.benchmark.slug}-{board.split.slug}.{fmt}")


def _team(entry: Entry) -> str:
    return entry.team if entry.team is not None else "Anonymous"


def _date(row: Entry | ReferenceRow) -> str:
    moment = row.submitted_at if isinstance(row, Entry) else row.created_at
    return f"{moment:%Y-%m-%d}"


def _one(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _cell_text(row: Entry | ReferenceRow, column: Column) -> str:
    """'71.3 [70.1, 72.5]' (reference rows: the value alone; '–' when there is none)."""
    value = row.value(column)
    if value is None:
        return "–"
    low, high = row.interval(column)
    return f"{value:.1f}" + (f" [{low:.1f}, {high:.1f}]" if low is not None and high is not None else "")


def _is_web(url: str | None) -> bool:
    return bool(url) and url.lower().startswith(("http://", "https://"))


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
    return "" if value is None else round(value, 4)


def to_csv(board: Board) -> str:
    header = ["rank", "model", "team", "date"]
    for column in board.columns:
        header += [column.key, f"{column.key} ci_low", f"{column.key} ci_high"]
    header += ["paper_url", "code_url", "type"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180; quotes cells with commas, quotes, newlines
    writer.writerow(header)
    for row in [*board.entries, *board.references]:
        is_entry = isinstance(row, Entry)
        cells = [row.rank if is_entry else "", row.model_name if is_entry else row.name,
                 _team(row) if is_entry else "", _date(row)]
        for column in board.columns:
            low, high = row.interval(column)
            cells += [_round(row.value(column)), _round(low), _round(high)]
        cells += [row.paper_url if is_entry else row.source_url, row.code_url if is_entry else None, row.kind]
        writer.writerow([csv_cell(cell) for cell in cells])
    return out.getvalue()


# --- JSON ------------------------------------------------------------------------------------------------


def _scores(row: Entry) -> dict:
    result: dict[str, dict] = {}
    for subset, metrics in row.scores.items():
        for metric, value in metrics.items():
            low, high = row.interval(Column(subset, metric, ""))
            result.setdefault(subset, {})[metric] = {"value": value, "ci_low": low, "ci_high": high}
    return result


def to_json(board: Board) -> str:
    body = {
        "benchmark": board.benchmark.slug,
        "split": board.split.slug,
        "scores_public": board.scores_public,
        "columns": [{"subset": c.subset, "metric": c.metric, "label": c.label} for c in board.columns],
        "entries": [
            {
                "rank": entry.rank,
                "submission_id": entry.submission_id,
                "model": entry.model_name,
                "team": _team(entry),
                "anonymous": entry.team is None,
                "date": entry.submitted_at.isoformat(),
                "paper_url": entry.paper_url,
                "code_url": entry.code_url,
                "scores": _scores(entry),
            }
            for entry in board.entries
        ],
        "references": [
            {"name": r.name, "source_url": r.source_url, "date": r.created_at.isoformat(),
             "scores": {s: {m: {"value": v} for m, v in ms.items()} for s, ms in r.scores.items()}}
            for r in board.references
        ],
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


# --- Markdown --------------------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = set("\\|`*_[]<>#!~")


def markdown_escape(text: str | None) -> str:
    """Backslash-escape what would end a table cell (|), escape itself (\\) or start markup; newlines
    become spaces (a table row is one line)."""
    text = " ".join((text or "").splitlines())
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in text)


_URL_QUOTED = {"\\": "%5C", "<": "%3C", ">": "%3E", "|": "%7C", "\n": "%0A", "\r": "%0D", " ": "%20"}


def _markdown_link(label: str, url: str | None) -> str:
    if not _is_web(url):
        return markdown_escape(url)
    destination = "".join(_URL_QUOTED.get(ch, ch) for ch in url)
    return f"[{label}](<{destination}>)"


def to_markdown(board: Board) -> str:
    header = ["Rank", "Model", "Team", "Date", *(markdown_escape(c.label) for c in board.columns), "Paper", "Code"]
    lines = [
        f"**{markdown_escape(board.benchmark.name)} — {markdown_escape(board.split.name)}**: scores in %, "
        "95% cluster-bootstrap intervals in brackets.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---:", "---", "---", "---", *("---:" for _ in board.columns), "---", "---"]) + "|",
    ]
    for entry in board.entries:
        cells = [str(entry.rank), markdown_escape(entry.model_name), markdown_escape(_team(entry)), _date(entry),
                 *(_cell_text(entry, c) for c in board.columns),
                 _markdown_link("paper", entry.paper_url), _markdown_link("code", entry.code_url)]
        lines.append("| " + " | ".join(cells) + " |")
    for reference in board.references:
        cells = ["–", f"*{markdown_escape(reference.name)}* (reference)", "", _date(reference),
                 *(_cell_text(reference, c) for c in board.columns), _markdown_link("source", reference.source_url), ""]
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


def _latex_cell(row: Entry | ReferenceRow, column: Column) -> str:
    value = row.value(column)
    if value is None:
        return "--"
    low, high = row.interval(column)
    bounds = f" {{\\scriptsize [{low:.1f}, {high:.1f}]}}" if low is not None and high is not None else ""
    return f"{value:.1f}{bounds}"


def to_latex(board: Board) -> str:
    spec = "rlll" + "r" * len(board.columns) + "ll"
    header = ["Rank", "Model", "Team", "Date", *(_latex_label(c.label) for c in board.columns), "Paper", "Code"]
    lines = [
        f"% {latex_escape(board.benchmark.name)} {latex_escape(board.split.name)} leaderboard (Holdout): scores in %,",
        "% 95% cluster-bootstrap intervals in brackets. Needs \\usepackage{booktabs}.",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
    ]
    for entry in board.entries:
        cells = [str(entry.rank), latex_escape(entry.model_name), latex_escape(_team(entry)), _date(entry),
                 *(_latex_cell(entry, c) for c in board.columns),
                 latex_escape(entry.paper_url), latex_escape(entry.code_url)]
        lines.append(" & ".join(cells) + " \\\\")
    if board.references:
        lines.append("\\midrule")
        for reference in board.references:
            cells = ["--", f"\\textit{{{latex_escape(reference.name)}}}", "", _date(reference),
                     *(_latex_cell(reference, c) for c in board.columns), latex_escape(reference.source_url), ""]
            lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"
