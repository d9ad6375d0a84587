"""Exports of a leaderboard for papers and scripts: CSV, JSON, Markdown and LaTeX (booktabs table floats).

Every row has the rank (and its rank interval), model, team ("Anonymous" for anonymous entries), date,
each chosen column's value with its 95% interval (ci_low, ci_high) and the paper and code links. Reference
rows stand where their primary score falls, as on the board (leaderboards.interleave), unranked, with the day
their figures were published. The models view (one row per model across splits) exports through the same
functions: its rows answer value(column) and interval(column) like a board's entries. Scores are written
as text by app.evaluation.display.score_text, the one rounding every page uses; JSON (and the API) carry each
score's value and, beside it, that text. A released figure of a blind test (display.Figure) is its own value:
CSV writes it as the board does ("51", "81.25"), where other values get six decimals.
Everything a team wrote is escaped for the format: CSV cells that a spreadsheet would run as a formula
are defused, Markdown punctuation is backslash-escaped, and LaTeX gets ASCII (latex_text).
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
from app.services.boards import latex_text, leaderboards, models_view
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
    suffix = "" if board.view == "entries" else f"-{board.view}"  # -teams, -final
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
    """An entry's (or a model row's) submission date; a reference row's publication date ("" if not given:
    the day it was added would misplace it in the board's history)."""
    if row.kind == "reference":
        return "" if row.published_on is None else row.published_on.isoformat()
    return f"{row.submitted_at:%Y-%m-%d}"


def _rows(board) -> list:
    """The table's rows in display order: the ranked entries, each reference row where its primary score
    falls (a board's and a models table's alike)."""
    return leaderboards.interleave(board.entries, board.references, board.primary)


def _cell_text(row: Entry | ReferenceRow, column: Column) -> str:
    """'71.3 [70.1, 72.5]' (reference rows: the value alone; '–' when there is none; a gap larger than
    sampling explains is marked '†')."""
    value = row.value(column)
    if value is None:
        return "–"
    low, high = row.interval(column)
    bounds = f" [{column.text(low)}, {column.text(high)}]" if low is not None and high is not None else ""
    return column.text(value) + bounds + _gap_mark(row, column)


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
    # Entries (or a models table's rows, which read alike) and reference rows, in the table's order.
    for row in _rows(board):
        entry = row if row.kind == "entry" else None
        if entry is not None:
            name, team, link, code = entry.model_name, _team(entry), entry.paper_url, entry.code_url
        else:
            name, team, link, code = row.name, "", row.source_url, None
        cells: list = [entry.rank if entry else "", name, team, _date(row) or None]
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


def score_document(value: float | None, low: float | None, high: float | None, decimals: int | None = None) -> dict:
    """A score as JSON (exports and the API): its value and 95% interval, and each as the board writes it
    (display.score_text; null where there is none), so that a script prints what the pages print."""

    def text(number: float | None) -> str | None:
        return None if number is None else score_text(number, decimals)

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
    keys = None if columns is None else {column.key: column for column in columns}
    result: dict[str, dict] = {}
    for subset, metrics in row.scores.items():
        for metric, value in metrics.items():
            if keys is not None and f"{subset}:{metric}" not in keys:
                continue
            low, high = row.interval(Column(subset, metric, ""))
            decimals = None if keys is None else keys[f"{subset}:{metric}"].decimals
            result.setdefault(subset, {})[metric] = score_document(value, low, high, decimals)
    return result


def to_json(board: Board) -> str:
    body = {
        "benchmark": board.benchmark.slug,
        "split": board.split.slug if board.split else None,
        "scores_public": board.scores_public,
        "view": board.view,
        "columns": [{"subset": c.subset, "metric": c.metric, **column_facts(c)} for c in board.columns],
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
        "references": reference_documents(board),
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def column_facts(column: Column) -> dict:
    """What a column is, as the family declares its metric: its label, n (examples) and what it counts, unit,
    direction, decimals (null: a percentage's own) and whether it ranks (JSON exports, the API)."""
    return {
        "label": column.label,
        "examples": column.size,
        "counts": column.counts,
        "unit": column.unit,
        "direction": column.direction,
        "decimals": column.decimals,
        "ranks": column.ranks,
    }


def reference_documents(board) -> list[dict]:
    """The reference rows as JSON (the exports and the API): never a rank, and `place`, the row each stands at
    in the table (entries and reference rows counted, from 1), where its primary score falls; `date` is the
    day its figures were published (null if not given). A board's carry their scores, a models table's their
    cells by column key."""
    documents = []
    for place, row in enumerate(_rows(board), start=1):
        if row.kind != "reference":
            continue
        if isinstance(row, ReferenceRow):
            figures: dict[str, dict] = {
                "scores": {
                    s: {m: {"value": v, "text": score_text(v)} for m, v in ms.items()} for s, ms in row.scores.items()
                }
            }
        else:
            values = {column.key: row.value(column) for column in board.columns}
            figures = {
                "cells": {
                    key: {"value": value, "text": score_text(value)}
                    for key, value in values.items()
                    if value is not None
                }
            }
        documents.append(
            {
                "name": row.name,
                "rank": None,
                "place": place,
                "date": _date(row) or None,
                "source_url": row.source_url,
                **figures,
            }
        )
    return documents


def gap_document(entry: Entry) -> dict | None:
    """An entry's gap on a revealed sealed split (queried minus sealed, primary metric), as JSON."""
    values = entry.scores.get(GAP)
    if not values or entry.gap_marked is None:
        return None
    metric, value = next(iter(values.items()))
    return {"metric": metric, "value": value, "p": entry.gap_p, "larger_than_sampling": entry.gap_marked}


def models_document(
    benchmark_slug: str, q: str | None = None, limit: str | None = None, offset: str | None = None
) -> dict:
    """The models view as the API gives it: the rows whose model or team name holds `q` (as on a board:
    leaderboards.matches), the window asked for of them (each keeps its rank), and `total`, `limit` and
    `offset` (InvalidQuery naming a bad q, limit or offset)."""
    window = leaderboards.window(limit, offset)
    needle = leaderboards.search_text(q)
    table = models_view.models_table(benchmark_slug)
    found = [row for row in table.entries if needle is None or leaderboards.matches(needle, row.model_name, row.team)]
    body = _models_body(table, window.of(found))
    return body | {"total": len(found), "limit": window.limit, "offset": window.offset}


def models_json(table: models_view.ModelsTable) -> str:
    return json.dumps(_models_body(table), ensure_ascii=False, indent=2) + "\n"


def _models_body(table: models_view.ModelsTable, rows: list[models_view.ModelRow] | None = None) -> dict:
    """The models view as JSON: every model row, or `rows` of them (the reference rows always, in place)."""
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
                **column_facts(c),
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
                    column.key: {
                        "submission_id": cell.submission_id,
                        **score_document(cell.value, cell.low, cell.high, column.decimals),
                    }
                    for column in table.columns
                    if (cell := row.cell(column)) is not None
                },
            }
            for row in (table.entries if rows is None else rows)
        ],
        "references": reference_documents(table),
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


def _units_words(board) -> str:
    """'scores in %', and the columns that are not percentages: 'scores in % (Distribution: a plain number, lower
    is better, ranks nothing)'."""
    plain = [c for c in board.columns if c.unit != "percent"]
    if not plain:
        return "scores in %"
    notes = "; ".join(f"{c.label}: a plain number, {c.direction}{'' if c.ranks else ', ranks nothing'}" for c in plain)
    return f"scores in % ({notes})"


def to_markdown(board: Board) -> str:
    header = ["Rank", "Model", "Team", "Date", *(markdown_escape(c.label) for c in board.columns), "Paper", "Code"]
    title = f"{markdown_escape(board.benchmark.name)} — {markdown_escape(board.split.name if board.split else '')}"
    lines = [
        f"**{title}**: {_units_words(board)}, "
        f"95% {_interval_words(board)} in brackets; ranks count the entries significantly better{_gap_words(board)}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---:", "---", "---", "---", *("---:" for _ in board.columns), "---", "---"]) + "|",
    ]
    for row in _rows(board):
        if row.kind == "entry":
            cells = [
                _rank_text(row.rank),
                markdown_escape(row.model_name),
                markdown_escape(_team(row)),
                _date(row),
                *(_cell_text(row, c) for c in board.columns),
                _markdown_link("paper", row.paper_url),
                _markdown_link("code", row.code_url),
            ]
        else:  # unranked, where its score falls
            cells = [
                "–",
                f"*{markdown_escape(row.name)}* (reference)",
                "",
                _date(row) or "–",
                *(_cell_text(row, c) for c in board.columns),
                _markdown_link("source", row.source_url),
                "",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- LaTeX -----------------------------------------------------------------------------------------------


def latex_escape(text: str | None) -> str:
    """Text safe inside a LaTeX table cell, in ASCII: special characters escaped, accented letters as accent
    commands, other scripts transliterated (latex_text); newlines as spaces."""
    return latex_text.latex_text(text)


@dataclass(frozen=True)
class _Paper:
    """The page a table is laid out for: its column and text widths, and the ems of its footnote size (names
    and scores) and script size (teams and intervals), in points."""

    column: float
    text: float
    main_em: float
    small_em: float


# Whether a table fits a column or the page is judged for a two-column article in 10pt type; how many lines its
# names take, for ACL's 11pt papers (narrower columns, larger type), so that a table's floats and shortened
# names are never taller there than estimated. Widths are Computer Modern's (latex_text), the widest of the
# usual paper fonts. tabularx gives the model column whatever is left: the table is exactly as wide as its
# float in any paper.
ARTICLE = _Paper(column=229.5, text=469.0, main_em=8.5, small_em=8.0)
NARROW = _Paper(column=219.0, text=455.0, main_em=9.25, small_em=8.5)
SEP_PT = 2.5  # \tabcolsep
MIN_MODEL_EM = 6.0  # the model column at its narrowest, in the article: a short word or two a line
SCALED_MODEL_PT = 130.0  # the model column of a table too wide even for the page, before it is scaled down
NAME_LINES, TEAM_LINES = 3, 1  # a name is shortened ("...") past three lines, a team past one
# The rows one float holds, in lines as estimated for 11pt type: with the two header lines, the rules and a
# caption of five lines, a float stays inside the text height of an 11pt or 12pt paper (541 and 548 pt, at 11
# and 12 pt a line). A longer table continues in further floats.
FLOAT_LINES = 32


@dataclass(frozen=True)
class _Layout:
    environment: str  # table (a column) or table* (the page)
    width: str  # \columnwidth or \textwidth
    scaled: bool  # too wide even for the page: a tabular at its natural width, scaled down to \textwidth
    name_em: float  # the model column's width in the narrow paper, in ems of the names' type
    team_em: float  # the same in ems of the teams' type


@dataclass(frozen=True)
class _LatexRow:
    lines: tuple[str, str]  # the row, and the line beneath it (team or "reference", intervals)
    height: int  # in lines, as estimated


_LATEX_SHORT = (
    ("Unbalanced", "Unbal."),
    ("unbalanced", "unbal."),
    ("Balanced", "Bal."),
    ("balanced", "bal."),
    ("Accuracy", "Acc."),
    ("accuracy", "acc."),
    ("Consistency", "Cons."),
    ("consistency", "cons."),
)


def _latex_header(column: Column) -> tuple[str, str]:
    """A column's header on two lines (the last word beneath), abbreviated, so that it is no wider than the
    column's numbers need."""
    if column.subset == GAP:
        return "", "Gap"  # the caption says what it is
    label = column.short or column.label  # the family's short label where it declares one
    for word, short in _LATEX_SHORT:
        label = label.replace(word, short)
    words = label.split()
    return " ".join(words[:-1]), " ".join(words[-1:])


def _em(text: str) -> float:
    return latex_text.width(latex_text.pieces(text))


def _column_pt(column: Column, rows: list, intervals: bool, paper: _Paper) -> float:
    """A number column's width: its header's lines, its values (bold: a tenth wider) and its intervals."""
    widths = [_em(line) * paper.main_em for line in _latex_header(column)]
    for row in rows:
        value = row.value(column)
        if value is not None:
            widths.append((_em(column.text(value)) * 1.1 + 0.4) * paper.main_em)  # 0.4: a † mark
        low, high = row.interval(column)
        if intervals and low is not None and high is not None:
            widths.append(_em(f"{column.text(low)}–{column.text(high)}") * paper.small_em)
    return max(widths)


def _fixed_pt(board, rows: list, intervals: bool, paper: _Paper) -> float:
    """The width of everything but the model column: ranks, number columns and the space between columns."""
    numbers = sum(_column_pt(column, rows, intervals, paper) for column in board.columns)
    ranks = max([_em(_rank_text(row.rank, "--")) * paper.main_em for row in rows if row.kind == "entry"] or [0.0])
    return numbers + ranks + 2 * SEP_PT * (len(board.columns) + 1)  # between every two of the columns


def _layout(board, rows: list, intervals: bool) -> _Layout:
    """The narrowest float the table fits in the article: a column, the page, else the page with the table
    scaled down; and how wide its model column is in the narrow paper."""
    fixed, narrow = _fixed_pt(board, rows, intervals, ARTICLE), _fixed_pt(board, rows, intervals, NARROW)
    for environment, width, total, narrow_total in (
        ("table", r"\columnwidth", ARTICLE.column, NARROW.column),
        ("table*", r"\textwidth", ARTICLE.text, NARROW.text),
    ):
        if total - fixed >= MIN_MODEL_EM * ARTICLE.main_em:
            # A model column never narrower than a long word (latex_text.LONG_WORD), however tight the paper.
            model = max(narrow_total - narrow, latex_text.LONG_WORD * NARROW.main_em)
            return _Layout(environment, width, False, model / NARROW.main_em, model / NARROW.small_em)
    return _Layout("table*", r"\textwidth", True, SCALED_MODEL_PT / NARROW.main_em, SCALED_MODEL_PT / NARROW.small_em)


def _latex_value(row, column: Column, best: dict[str, float]) -> str:
    value = row.value(column)
    if value is None:
        return "--"
    text = column.text(value) + ("$^\\dagger$" if _gap_mark(row, column) else "")
    if row.kind == "reference":
        return f"\\textit{{{text}}}"
    return f"\\textbf{{{text}}}" if best.get(column.key) == value else text


def _latex_interval(row, column: Column) -> str:
    low, high = row.interval(column)
    if low is None or high is None:
        return ""
    return f"{{\\scriptsize {column.text(low)}--{column.text(high)}}}"


def _latex_rows(board, rows: list, layout: _Layout, intervals: bool) -> list[_LatexRow]:
    """Each entry on two lines (rank, model and scores; the team and the intervals beneath), each reference
    row (unranked, in italics) with "reference" and its date beneath; names shortened to fit their lines."""
    name_em, small_em = layout.name_em, layout.team_em
    best = board.best
    result = []
    for row in rows:
        reference = row.kind == "reference"
        name = latex_text.shorten(latex_text.pieces(row.name if reference else row.model_name), name_em, NAME_LINES)
        day = _date(row) if reference else ""
        if reference:
            beneath = latex_text.pieces(f"reference, {day}" if day else "reference")
            under = f"reference, \\mbox{{{day}}}" if day else "reference"  # the date on one line
        else:
            beneath = latex_text.shorten(latex_text.pieces(_team(row)), small_em, TEAM_LINES)
            under = latex_text.latex(beneath, breaks=True)
        # \hspace{0pt}: TeX hyphenates the first word of a cell only after some glue.
        model = "\\hspace{0pt}" + latex_text.latex(name, breaks=True)
        first = [
            "" if reference else _rank_text(row.rank, "--"),
            f"\\textit{{{model}}}" if reference else model,
            *(_latex_value(row, column, best) for column in board.columns),
        ]
        second = [
            "",
            f"{{\\scriptsize {under}}}",
            *(_latex_interval(row, column) if intervals else "" for column in board.columns),
        ]
        height = len(latex_text.wrap(name, name_em)) + len(latex_text.wrap(beneath, small_em))
        result.append(_LatexRow((" & ".join(first) + " \\\\", " & ".join(second) + " \\\\"), height))
    return result


def _floats(rows: list[_LatexRow]) -> list[list[_LatexRow]]:
    """The rows in floats of at most FLOAT_LINES lines (at least one float, at least one row in each)."""
    floats: list[list[_LatexRow]] = [[]]
    lines = 0
    for row in rows:
        if floats[-1] and lines + row.height > FLOAT_LINES:
            floats.append([])
            lines = 0
        floats[-1].append(row)
        lines += row.height
    return floats


def _latex_gap_words(board) -> str:
    if not any(column.subset == GAP for column in getattr(board, "columns", [])):
        return ""
    return (
        "; gap = queried minus sealed part, $\\dagger$ where larger than sampling explains (one-sided, 0.05, "
        "cluster bootstrap)"
    )


def _latex_packages(board, rows: list, layout: _Layout) -> list[str]:
    """What the table needs in the paper's preamble, as comment lines to copy."""
    packages = ["\\usepackage{booktabs}", "\\usepackage{tabularx}"]
    names = [row.name if row.kind == "reference" else f"{row.model_name} {_team(row)}" for row in rows]
    labels = [column.label for column in board.columns]
    if any(latex_text.needs_t1(text) for text in [*names, *labels, board.benchmark.name, board.split.name]):
        packages.append("\\usepackage[T1]{fontenc}  % for the letters \\k, \\dh, \\th, \\ng, \\dj or guillemets")
    if layout.scaled:
        packages.append("\\usepackage{graphicx}  % \\resizebox: the table is too wide for the page otherwise")
    return [f"% {package}" for package in packages]


def to_latex(board, *, intervals: bool = True, today: datetime | None = None) -> str:
    """Complete table floats for a paper (booktabs and tabularx), in the narrowest of a column (\\columnwidth),
    the page (table*, \\textwidth) or, as a last resort, the page scaled down that the table fits: rank,
    model with its team beneath, the chosen columns with each column's best value bold and, unless
    intervals=False, the 95% intervals beneath in small type; reference rows where their scores fall, in
    italics, unranked, dated. A table longer than a page's float holds continues in further floats. Links are
    left out (papers cite them in the text). The file is ASCII: see latex_text for names."""
    today = today or datetime.now(UTC)
    rows = _rows(board)
    layout = _layout(board, rows, intervals)
    floats = _floats(_latex_rows(board, rows, layout, intervals))
    title = f"{latex_escape(board.benchmark.name)} {latex_escape(board.split.name)}"
    label = "tab:" + "-".join(part for part in (board.benchmark.slug, board.split.slug) if part)
    entries = sum(1 for row in rows if row.kind == "entry")
    lines = [
        f"% {title} leaderboard exported by Holdout on {today:%Y-%m-%d}: {entries} "
        f"{'models' if isinstance(board, models_view.ModelsTable) else 'entries'}"
        f"{f' and {len(rows) - entries} reference rows' if len(rows) > entries else ''}"
        f"{f', in {len(floats)} floats (Table {label} and its continuations)' if len(floats) > 1 else ''}.",
        "% Needs, in the preamble:",
        *_latex_packages(board, rows, layout),
        "% The file is ASCII (no inputenc needed): names have accents as LaTeX accents, a Greek letter in math,",
        "% Greek words and Cyrillic transliterated; what pdflatex's standard fonts cannot set (CJK, emoji, ...) is",
        '% written "?", and names longer than three lines are shortened (\\ldots). The CSV and JSON exports have',
        "% them as written.",
    ]
    what = f"; 95\\% {_interval_words(board)} beneath" if intervals else ""
    ranked_as = (
        f" on {latex_escape(board.ranking_split.name)}"
        if isinstance(board, models_view.ModelsTable) and board.ranking_split is not None
        else ""
    )
    caption = (
        f"\\caption{{{title} leaderboard (Holdout, {today:%Y-%m-%d}): {latex_escape(_units_words(board))}{what}; "
        "best in bold; "
        f"rank = 1 + entries significantly better{ranked_as} ({_rank_test_words(board)}){_latex_gap_words(board)}"
        f"{'; reference rows (italics) are not ranked' if len(rows) > entries else ''}.}}"
    )
    shown = 0
    for number, chunk in enumerate(floats):
        if number == 0:
            before, after = [], [caption, f"\\label{{{label}}}"]
        else:
            span = f"rows {shown + 1}--{shown + len(chunk)} of {len(rows)}"
            before, after = [f"Table~\\ref{{{label}}}, continued: {span}.\\par\\smallskip"], []
        lines += _latex_float(board, layout, chunk, before, after)
        shown += len(chunk)
    return "\n".join(lines) + "\n"


def _latex_float(board, layout: _Layout, rows: list[_LatexRow], before: list[str], after: list[str]) -> list[str]:
    """One float of the table: its header and rows, with `before` above the table and `after` below it."""
    model = f"p{{{SCALED_MODEL_PT:g}pt}}" if layout.scaled else "X"
    spec = f"@{{}}r>{{\\raggedright\\arraybackslash}}{model}{'r' * len(board.columns)}@{{}}"
    headers = [_latex_header(column) for column in board.columns]
    lines = [
        f"\\begin{{{layout.environment}}}[{'tbp' if layout.environment == 'table' else 'tp'}]",
        "\\centering",
        "\\footnotesize",
        f"\\setlength{{\\tabcolsep}}{{{SEP_PT:g}pt}}",
        *before,
    ]
    if layout.scaled:
        lines += ["\\resizebox{\\textwidth}{!}{%", f"\\begin{{tabular}}{{{spec}}}"]
    else:
        lines.append(f"\\begin{{tabularx}}{{{layout.width}}}{{{spec}}}")
    lines += [
        "\\toprule",
        " & ".join(["", "Model", *(latex_escape(top) for top, _ in headers)]) + " \\\\",
        " & ".join(["", "{\\scriptsize team}", *(latex_escape(bottom) for _, bottom in headers)]) + " \\\\",
        "\\midrule",
    ]
    for row in rows:
        lines += row.lines
    lines += ["\\bottomrule", "\\end{tabular}}" if layout.scaled else "\\end{tabularx}", *after]
    return [*lines, f"\\end{{{layout.environment}}}"]
