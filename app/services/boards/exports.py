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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.evaluation import rank_method
from app.evaluation.display import Figure, score_text
from app.services import catalog
from app.services.blind_test import visibility
from app.services.boards import latex_text, leaderboards, models_view
from app.services.boards.board_snapshots import GAP, Entry, ReferenceRow
from app.services.boards.leaderboards import Board, Column
from app.services.catalog.entry_fields import FieldSpec
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
    verified: str | None = None,
    track: str | None = None,
    where: Sequence[str] | None = None,
) -> Export:
    """The whole leaderboard of a split (every page, the chosen view and columns) in a format; NotFound for
    an unknown format. `intervals=False` leaves the score intervals out of the LaTeX table; `verified` "1": the
    verified entries alone, ranked among themselves."""
    _check(fmt)
    board = leaderboards.board(
        benchmark_slug,
        split_slug,
        view=view,
        chosen=chosen,
        paginate=False,
        verified=verified,
        track=track,
        where=where,
    )
    if board.split is None:
        raise NotFound(f"{benchmark_slug} has no splits to export")
    writers: dict[str, Callable[[Board], str]] = {
        "csv": to_csv,
        "json": to_json,
        "md": to_markdown,
        "tex": lambda b: to_latex(b, intervals=intervals),
    }
    return Export(writers[fmt](board).encode("utf-8"), FORMATS[fmt], f"{_stem(board)}.{fmt}")


def _stem(board: Board | models_view.ModelsTable) -> str:
    """An export's file name without its extension, and its LaTeX table's label: the benchmark, the split (or
    "models"), the view and the track ("filtered": ad-hoc conditions), so that the whole board's file and a
    track's never share a name or a \\ref."""
    chosen = board.selection
    named = None if chosen is None else (chosen.track or "filtered")
    if isinstance(board, models_view.ModelsTable):
        return f"{board.benchmark.slug}-models" + (f"-{named}" if named else "")
    assert board.split is not None  # export() refuses a benchmark without splits
    view = "" if board.view == "entries" else f"-{board.view}"
    return f"{board.benchmark.slug}-{board.split.slug}{view}" + (f"-{named}" if named else "")


def export_models(
    benchmark_slug: str,
    fmt: str,
    *,
    intervals: bool = True,
    track: str | None = None,
    where: str | Sequence[str] | None = None,
    verified: str | None = None,
) -> Export:
    """The models view of a benchmark (one row per model across splits) in a format; with a track (`track`,
    `where`, `verified`), the models of the entries it keeps, ranked among themselves."""
    _check(fmt)
    table = models_view.models_table(benchmark_slug, track=track, where=where, verified=verified)
    writers: dict[str, Callable[[Any], str]] = {
        "csv": to_csv,
        "json": models_json,
        "md": to_markdown,
        "tex": lambda t: to_latex(t, intervals=intervals),
    }
    return Export(writers[fmt](table).encode("utf-8"), FORMATS[fmt], f"{_stem(table)}.{fmt}")


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


def _field_specs(board, columns_only: bool = False) -> list[FieldSpec]:
    """The benchmark's entry fields a board's export writes: every one (CSV, JSON), or those its boards show as
    columns (Markdown, LaTeX: tables to read). A models table's rows state their latest entry's."""
    if isinstance(board, models_view.ModelsTable):
        specs = list(board.field_specs)
    else:
        snapshot = getattr(board, "snapshot", None)
        specs = list(snapshot.field_specs) if snapshot is not None else []
    return [spec for spec in specs if spec.column] if columns_only else specs


def _stated(row, spec: FieldSpec):
    """A row's value of a field (None for a reference row, or an entry that did not state it)."""
    return getattr(row, "fields", {}).get(spec.key) if row.kind == "entry" else None


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


def _ranking_split(board):
    """The split whose entries the ranks compare: a board's own; a models table's ranking split."""
    return board.split if isinstance(board, Board) else getattr(board, "ranking_split", None)


def _method_terms(board) -> tuple[str, bool, str]:
    """What rank_method needs to word the board's ranks: the family's paired test, whether the ranks come
    from counts alone (a blind test before its reveal) and the primary metric as the board page names it."""
    split = _ranking_split(board)
    counts_only = split is not None and visibility.counts_only(split)
    task = catalog.task_of(board.benchmark)
    return task.rank_test, counts_only, rank_method.primary_name(task)


def _ranked_on(board, escape: Callable[[str], str]) -> str:
    """' on Test-P' for a models table, whose ranks are its ranking split's; '' for a board."""
    split = None if isinstance(board, Board) else getattr(board, "ranking_split", None)
    return "" if split is None else f" on {escape(split.name)}"


def _rank_cell(row, dash: str = "–") -> str:
    """'2 (2–4)': the rank and its simultaneous 95% interval, as the board page shows them (a single-point
    interval too: '1 (1)'); a dash for a model with no entry on the ranking split (models view)."""
    if row.rank is None:
        return dash
    interval = getattr(row, "rank_interval", "")
    return f"{row.rank} ({interval})" if interval else str(row.rank)


def _verified(row) -> dict | None:
    """An entry's verified mark ({at, note, url}); None for an entry without one, a reference or a model row."""
    return getattr(row, "verified", None) if row.kind == "entry" else None


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
    header += ["rank_low", "rank_high", "paper_url", "code_url"]
    header += ["verified", "verified_note", "verified_url"]
    header += ["type"]
    # The entry fields last, so that every earlier column keeps its place; yes/no as true/false like JSON.
    specs = _field_specs(board)
    header += [f"field:{spec.key}" for spec in specs]
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
        cells += [entry.rank_low if entry else None, entry.rank_high if entry else None, link, code]
        mark = _verified(row)
        cells += [
            "" if entry is None else ("yes" if mark else "no"),
            mark["note"] if mark else None,
            mark["url"] if mark else None,
        ]
        cells += [row.kind]
        for spec in specs:
            value = _stated(row, spec)
            cells.append(str(value).lower() if isinstance(value, bool) else value)
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
        "fields": [spec.as_dict() for spec in _field_specs(board)],
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
                "fields": entry.fields,
                "scores": _scores(entry, board.columns),
                **({"gap": gap_document(entry)} if any(c.subset == GAP for c in board.columns) else {}),
                "verified": entry.verified,
            }
            for entry in board.entries
        ],
        "verified_only": board.verified_only,
        **_selection_document(board),
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
    benchmark_slug: str,
    q: str | None = None,
    limit: str | None = None,
    offset: str | None = None,
    *,
    track: str | None = None,
    where: Sequence[str] | None = None,
    verified: str | None = None,
) -> dict:
    """The models view as the API gives it: the rows whose model or team name holds `q` (as on a board:
    leaderboards.matches), the window asked for of them (each keeps its rank), and `total`, `limit` and
    `offset` (InvalidQuery naming a bad q, limit or offset); with a track, the models of its entries alone."""
    window = leaderboards.window(limit, offset)
    needle = leaderboards.search_text(q)
    table = models_view.models_table(benchmark_slug, track=track, where=where, verified=verified)
    found = [row for row in table.entries if needle is None or leaderboards.matches(needle, row.model_name, row.team)]
    body = _models_body(table, window.of(found))
    return body | {"total": len(found), "limit": window.limit, "offset": window.offset}


def models_json(table: models_view.ModelsTable) -> str:
    body = _models_body(table) | {"fields": [spec.as_dict() for spec in table.field_specs]}  # as a board's export
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


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
                "fields": row.fields,
                "verified": row.verified,
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
        # A board of its own (the models' latest entries on the ranking split): its method and resolution, as the
        # page states them.
        "rank_method": rank_method.sentence(*_method_terms(table)) if table.ranking_split is not None else None,
        "resolution": None if table.resolution is None else round(float(table.resolution), 1),
        **_selection_document(table),
        "tracks": [spec.as_dict() for spec in table.track_tabs],
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


def _markdown_verified(row) -> str:
    """'yes: the note ([link](...))' for a verified entry, 'no' for another, '' for a reference row."""
    if row.kind != "entry":
        return ""
    mark = _verified(row)
    if mark is None:
        return "no"
    link = f" ({_markdown_link('link', mark['url'])})" if mark["url"] else ""
    return f"yes: {markdown_escape(mark['note'])}{link}"


def _markdown_field(spec: FieldSpec, value) -> str:
    if value is None:
        return "–"
    return _markdown_link("link", value) if spec.type == "url" else markdown_escape(spec.cell(value))


def to_markdown(board: Board) -> str:
    specs = _field_specs(board, columns_only=True)
    header = [
        "Rank",
        "Model",
        "Team",
        "Date",
        *(markdown_escape(c.label) for c in board.columns),
        *(markdown_escape(spec.label) for spec in specs),
        "Paper",
        "Code",
    ]
    header += ["Verified"]
    title = f"{markdown_escape(board.benchmark.name)} — {markdown_escape(board.split.name if board.split else '')}"
    kept = getattr(board, "selection_words", "")
    only = f"Only {markdown_escape(kept)}, ranked among themselves. " if kept else ""
    units = _units_words(board)
    units = units[:1].upper() + units[1:] if only else units  # a sentence of its own after the selection's
    lines = [
        f"**{title}**: {only}{units}, 95% {_interval_words(board)} in brackets{_gap_words(board)}. "
        f"Rank (95% rank interval){_ranked_on(board, markdown_escape)}: "
        f"{markdown_escape(rank_method.sentence(*_method_terms(board)))}",
        "",
        "| " + " | ".join(header) + " |",
        "|"
        + "|".join(
            [
                "---:",
                "---",
                "---",
                "---",
                *("---:" for _ in board.columns),
                *("---:" if spec.type == "integer" else "---" for spec in specs),
                "---",
                "---",
                "---",
            ]
        )
        + "|",
    ]
    for row in _rows(board):
        if row.kind == "entry":
            cells = [
                _rank_cell(row),
                markdown_escape(row.model_name),
                markdown_escape(_team(row)),
                _date(row),
                *(_cell_text(row, c) for c in board.columns),
                *(_markdown_field(spec, _stated(row, spec)) for spec in specs),
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
                *("" for _ in specs),
                _markdown_link("source", row.source_url),
                "",
            ]
        cells += [_markdown_verified(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- LaTeX -----------------------------------------------------------------------------------------------


def latex_escape(text: str | None) -> str:
    """Text safe inside a LaTeX table cell, in ASCII: special characters escaped, accented letters as accent
    commands, other scripts transliterated (latex_text); newlines as spaces."""
    return latex_text.latex_text(text)


@dataclass(frozen=True)
class _Style:
    """How a table's cells are set: its type (names and values; teams and intervals in smaller type beneath),
    with the ems of each as latex_text counts them (a digit is half an em; Computer Modern's), and whether
    it is compact: each interval on two lines ("70.1--" over "72.5"), the rank's beneath the rank."""

    main_font: str
    small_font: str
    main_em: float
    small_em: float
    sep: float  # \tabcolsep, in points
    compact: bool


# The type is set in points whatever the paper's size, so that the widths estimated here hold in a 10, 11 or
# 12 pt paper alike (\footnotesize is 10 pt in a 12 pt paper, and a token is never broken to make up for it):
# 8 pt (7 pt beneath), the size of a 10 pt paper's footnotes; for a table a column holds only so, 7 pt (6 pt).
_EIGHT = (r"\fontsize{8}{9.5}\selectfont", r"\fontsize{7}{8}\selectfont", 8.5, 8.0, 2.5)
_SEVEN = (r"\fontsize{7}{8}\selectfont", r"\fontsize{6}{7}\selectfont", 8.0, 7.33, 2.0)
STYLES = (_Style(*_EIGHT, compact=False), _Style(*_EIGHT, compact=True), _Style(*_SEVEN, compact=True))


@dataclass(frozen=True)
class _Paper:
    """The widths a table is laid out for, in points: a column of a two-column paper, and the page."""

    column: float
    text: float


# ACL's two-column papers, the narrowest of the usual ones (a standard article's column is 229.5 pt, its text
# 469 pt): a table laid out for them fits the others too, tabularx giving the model column what is left.
PAPER = _Paper(column=219.0, text=455.0)
MIN_MODEL_EM = 4.5  # the model column at its narrowest (38 pt in 8 pt type): a short word or two a line
SCALED_MODEL_PT = 130.0  # the model column of a table too wide even for the page, before it is scaled down
# The rows one float holds, in lines (9.5 pt at the most): with the two header lines, the rules and a caption
# of up to eight lines of 12 pt type, a float stays inside the text height of a 10, 11 or 12 pt paper (541 pt
# at the least). A longer table continues in further floats of as nearly equal length as the rows allow.
FLOAT_LINES = 40


@dataclass(frozen=True)
class _Layout:
    environment: str  # table (a column) or table* (the page)
    width: str  # \columnwidth or \textwidth
    scaled: bool  # too wide even for the page: a tabular at its natural width, scaled down to \textwidth
    style: _Style
    model_pt: float  # the model column's width in the narrowest paper, in points


@dataclass(frozen=True)
class _LatexRow:
    lines: tuple[str, str]  # the row, and the line beneath it (team or "reference", intervals)
    height: int  # in lines, as estimated


# Abbreviated header words (a column of numbers is no wider than its header); the caption gives the key. A
# field's name before its values ("Answer type yes/no accuracy") is left out, the key naming it.
_LATEX_SHORT = (
    ("Unbalanced", "Unbal."),
    ("Balanced", "Bal."),
    ("Accuracy", "Acc."),
    ("Consistency", "Cons."),
    ("Distribution", "Distr."),
)
_LATEX_FIELDS = ("Answer type",)


def _abbreviate(label: str, cuts: dict[str, str] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """A column's label with its long words abbreviated (any case), and the key's items it needs: (short,
    what it stands for); a field left out gives (its value, "<field>"). With `cuts` (_cuts: compact tables),
    other long words are cut short too."""
    used = []
    if label.endswith(")") and " (" in label:  # "Distribution (lower is better)": the note in the key
        label, note = label[:-1].split(" (", 1)
        used.append((label, f"{label.lower()} ({note})"))
    for field_name in _LATEX_FIELDS:
        if label.startswith(field_name + " "):
            label = label[len(field_name) + 1 :]
            used.append((label.split()[0], field_name.lower()))
    for word, short in _LATEX_SHORT:
        for long_form, short_form in ((word, short), (word.lower(), short.lower())):
            if long_form in label:
                label = label.replace(long_form, short_form)
                used.append((short, word.lower()))
    if cuts:
        words = label.split(" ")
        used += [(cuts[word], word.lower()) for word in words if word in cuts]
        label = " ".join(cuts.get(word, word) for word in words)
    if used and used[0][1].endswith(")"):  # the note's header as abbreviated, and no second key item for it
        used = [(label, used[0][1]), *(item for item in used[1:] if item[0] != label)]
    return label, used


def _cuts(columns: list[Column]) -> dict[str, str]:
    """Each word of more than six letters in the headers, cut to its first four letters (three before a
    vowel: "Negation" -> "Neg.", "Universal" -> "Univ."), or as many more as keep two words apart."""
    words = sorted(
        {
            word
            for column in columns
            for word in _abbreviate(column.label)[0].split()
            if len(word) > 6 and word.isalpha()
        }
    )
    cuts = {}
    for word in words:
        size = 3 if word[3].lower() in "aeiou" else 4
        while size < len(word) and any(o != word and o[:size].lower() == word[:size].lower() for o in words):
            size += 1
        cuts[word] = word if size >= len(word) - 1 else word[:size] + "."
    return {word: short for word, short in cuts.items() if short != word}


def _latex_header(column: Column, cuts: dict[str, str] | None = None) -> tuple[str, str]:
    """A column's header on two lines, abbreviated, broken where its wider line is narrowest."""
    if column.subset == GAP:
        return "", "Gap"  # the caption says what it is
    words = _abbreviate(column.label, cuts)[0].split()
    if len(words) < 2:
        return "", " ".join(words)
    cut = min(range(1, len(words)), key=lambda i: max(_em(" ".join(words[:i])), _em(" ".join(words[i:]))))
    return " ".join(words[:cut]), " ".join(words[cut:])


def _latex_key(board, cuts: dict[str, str] | None) -> str:
    """The key to the abbreviated headers: 'Acc. = accuracy; Bal. = balanced; yes/no, number: answer type'."""
    shorts: dict[str, str] = {}
    fields: dict[str, list[str]] = {}
    for column in board.columns:
        if column.subset == GAP:
            continue
        for short, meaning in _abbreviate(column.label, cuts)[1]:
            if meaning in (name.lower() for name in _LATEX_FIELDS):
                fields.setdefault(meaning, []).append(short)
            else:
                shorts[short] = meaning
    # "\\ ": an abbreviation's period does not end a sentence.
    items = [f"{latex_escape(short)}\\ = {latex_escape(meaning)}" for short, meaning in shorts.items()]
    items += [f"{latex_escape(', '.join(values))}: {latex_escape(meaning)}" for meaning, values in fields.items()]
    return "; ".join(items)


def _em(text: str) -> float:
    return latex_text.width(latex_text.pieces(text))


def _interval_lines(column: Column, low: float, high: float, compact: bool) -> list[str]:
    """An interval as it is set beneath its value, with the column's decimals: '70.1--72.5', or over two lines
    ('70.1--', '72.5')."""
    if compact:
        return [f"{column.text(low)}–", column.text(high)]
    return [f"{column.text(low)}–{column.text(high)}"]


def _header_cuts(board, style: _Style) -> dict[str, str] | None:
    """Compact tables cut their headers' long words short (_cuts); others keep them."""
    return _cuts(board.columns) if style.compact else None


def _column_pt(column: Column, rows: list, intervals: bool, style: _Style, cuts: dict[str, str] | None) -> float:
    """A number column's width: its header's lines, its values (bold: a tenth wider) and its intervals."""
    widths = [_em(line) * style.main_em for line in _latex_header(column, cuts)]
    for row in rows:
        value = row.value(column)
        if value is not None:
            dagger = 0.4 if column.subset == GAP else 0.0
            widths.append((_em(column.text(value)) * 1.1 + dagger) * style.main_em)
        low, high = row.interval(column)
        if intervals and low is not None and high is not None:
            widths += [_em(line) * style.small_em for line in _interval_lines(column, low, high, style.compact)]
    return max(widths)


def _rank_pt(rows: list, style: _Style) -> float:
    """The rank column's width: '12 (10--15)' on a line, or compact, the interval in small type beneath."""
    widths = [0.0]
    for row in rows:
        if row.kind != "entry":
            continue
        if style.compact:
            widths += [_em(_rank_text(row.rank)) * style.main_em, _em(f"({row.rank_interval})") * style.small_em]
        else:
            widths.append(_em(_rank_cell(row)) * style.main_em)
    return max(widths)


def _name_parts(row) -> list[latex_text.Piece]:
    return latex_text.pieces(row.name if row.kind == "reference" else row.model_name)


def _beneath_parts(row, specs: tuple[FieldSpec, ...] = ()) -> list[latex_text.Piece]:
    """What stands beneath a name: its team (then the entry fields the boards show as columns, "zero-shot:
    yes"), or 'reference' and the day (kept on one line)."""
    if row.kind == "reference":
        day = _date(row)
        return latex_text.pieces("reference," if day else "reference") + (
            [latex_text.SPACE, latex_text.Piece(day, _em(day))] if day else []
        )
    stated = [
        f"{spec.label.lower()}: {spec.cell(value)}" for spec in specs if (value := _stated(row, spec)) is not None
    ]
    # A verified entry says so beneath its team (a column of its own would crowd a paper's narrow table).
    return latex_text.pieces("; ".join([_team(row) + (", verified" if _verified(row) else ""), *stated]))


def _model_min_pt(rows: list, style: _Style, specs: tuple[FieldSpec, ...] = ()) -> float:
    """The narrowest the model column may be: no token of a name or team sticks out of it."""
    names = max((latex_text.widest_token(_name_parts(row)) for row in rows), default=0.0) * style.main_em
    beneath = max((latex_text.widest_token(_beneath_parts(row, specs)) for row in rows), default=0.0) * style.small_em
    return max(MIN_MODEL_EM * style.main_em, names, beneath) + 1.0  # the estimates run 5-10% wide: 1 pt is enough


def _fixed_pt(board, rows: list, intervals: bool, style: _Style) -> float:
    """The width of everything but the model column: ranks, number columns and the space between columns."""
    cuts = _header_cuts(board, style)
    numbers = sum(_column_pt(column, rows, intervals, style, cuts) for column in board.columns)
    return numbers + _rank_pt(rows, style) + 2 * style.sep * (len(board.columns) + 1)  # between every two


def _layout(board, rows: list, intervals: bool) -> _Layout:
    """The narrowest float the table fits in the narrowest paper, with its model column no narrower than the
    widest token of a name: a column, the page, else the page with the table scaled down; in each the first
    of STYLES it fits in (a board of six columns or fewer fits a column so, unless a name has a token too
    wide for what is left)."""
    specs = tuple(_field_specs(board, columns_only=True))
    for environment, width, total in (("table", r"\columnwidth", PAPER.column), ("table*", r"\textwidth", PAPER.text)):
        for style in STYLES:
            model = total - _fixed_pt(board, rows, intervals, style)
            if model >= _model_min_pt(rows, style, specs):
                return _Layout(environment, width, False, style, model)
    style = STYLES[0]
    return _Layout("table*", r"\textwidth", True, style, max(SCALED_MODEL_PT, _model_min_pt(rows, style, specs)))


def _latex_value(row, column: Column, best: dict[str, float]) -> str:
    value = row.value(column)
    if value is None:
        return "--"
    text = column.text(value) + ("$^\\dagger$" if _gap_mark(row, column) else "")
    if row.kind == "reference":
        return f"\\textit{{{text}}}"
    return f"\\textbf{{{text}}}" if best.get(column.key) == value else text


def _small(text: str, style: _Style) -> str:
    return f"{{{style.small_font} {text}}}" if text else ""


def _stacked(lines: list[str], style: _Style) -> str:
    """Lines of small type in one cell, right-aligned, hanging from the row's baseline."""
    if len(lines) == 1:
        return _small(lines[0], style)
    body = " \\\\ ".join(lines)
    return _small(f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{body}\\end{{tabular}}", style)


def _latex_interval(row, column: Column, style: _Style) -> tuple[str, int]:
    """The interval beneath a value, and the lines it takes."""
    low, high = row.interval(column)
    if low is None or high is None:
        return "", 0
    lines = [latex_escape(line) for line in _interval_lines(column, low, high, style.compact)]
    return _stacked(lines, style), len(lines)


def _latex_rows(board, rows: list, layout: _Layout, intervals: bool) -> list[_LatexRow]:
    """Each entry on two lines (rank, model and scores; the team, the rank interval when compact, and the
    intervals beneath), each reference row (unranked, in italics) with "reference" and its date beneath.
    Names are whole, broken at their spaces only (latex_text)."""
    best, style = board.best, layout.style
    specs = tuple(_field_specs(board, columns_only=True))
    result = []
    for row in rows:
        reference = row.kind == "reference"
        name = _name_parts(row)
        if reference:
            day = _date(row)
            under = f"reference, \\mbox{{{day}}}" if day else "reference"  # the date on one line
        else:
            under = latex_text.latex(_beneath_parts(row, specs), whole_words=True)
        model = latex_text.latex(name, whole_words=True)
        rank = "" if reference else (_rank_text(row.rank, "--") if style.compact else latex_escape(_rank_cell(row)))
        first = [rank, f"\\textit{{{model}}}" if reference else model]
        first += [_latex_value(row, column, best) for column in board.columns]
        cells = [_latex_interval(row, column, style) if intervals else ("", 0) for column in board.columns]
        interval = f"({latex_escape(row.rank_interval)})" if style.compact and not reference else ""
        second = [_small(interval, style), _small(under, style), *(cell for cell, _ in cells)]
        under_lines = len(latex_text.wrap(_beneath_parts(row, specs), layout.model_pt / style.small_em))
        height = len(latex_text.wrap(name, layout.model_pt / style.main_em)) + max(
            [under_lines, *(n for _, n in cells)]
        )
        result.append(_LatexRow((" & ".join(first) + " \\\\", " & ".join(second) + " \\\\"), height))
    return result


def _floats(rows: list[_LatexRow]) -> list[list[_LatexRow]]:
    """The rows in as few floats of at most FLOAT_LINES lines as they fit, of as nearly equal length as the
    rows allow: a continuation never holds a remainder of a row or two (at least one float, at least one row
    in each)."""
    total = sum(row.height for row in rows)
    count = max(1, -(-total // FLOAT_LINES))
    while True:
        floats: list[list[_LatexRow]] = [[] for _ in range(count)]
        done = 0
        for row in rows:
            # Each row goes to the float its middle line falls in, were the lines shared out equally.
            index = min(count - 1, int((done + row.height / 2) * count / max(total, 1)))
            floats[index].append(row)
            done += row.height
        floats = [chunk for chunk in floats if chunk] or [[]]
        if count >= len(rows) or all(sum(row.height for row in chunk) <= FLOAT_LINES for chunk in floats):
            return floats
        count += 1


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


def _selection_document(board: Board | models_view.ModelsTable) -> dict[str, Any]:
    """A board of a selection says which (track, where, in words): its ranks are among those entries alone."""
    chosen = board.selection
    return {
        "track": None if chosen is None else chosen.track,
        "where": [] if chosen is None else [condition.written for condition in chosen.conditions],
        "selection": board.selection_words or None,
    }


def _latex_verified_words(board) -> str:
    """What 'verified' beneath a team means, when a row says it; and a selected board's own ranks."""
    chosen = getattr(board, "selection", None)
    if chosen is not None and chosen.conditions:
        words = board.selection_words.replace("≤", "<=").replace("≥", ">=")
        return f"; only {latex_escape(words)}, ranked among themselves"
    if getattr(board, "verified_only", False):
        return "; verified entries only (checked by the maintainers), ranked among themselves"
    if any(_verified(row) for row in getattr(board, "entries", [])):
        return "; verified: code and weights checked by the maintainers"
    return ""


def _latex_caption(board, title: str, intervals: bool, references: bool, style: _Style, today: datetime) -> str:
    """What the table shows, the key to its headers, and how its ranks are made (rank_method's words)."""
    what = f"; 95\\% {_interval_words(board)} beneath" if intervals else ""
    method = latex_escape(rank_method.caption(*_method_terms(board)[:2]))
    key = _latex_key(board, _header_cuts(board, style))
    return (
        f"\\caption{{{title} leaderboard (Holdout, \\mbox{{{today:%Y-%m-%d}}}): "
        f"{latex_escape(_units_words(board))}{what}; best in bold"
        f"{_latex_gap_words(board)}{'; reference rows (italics) are not ranked' if references else ''}"
        f"{_latex_verified_words(board)}. "
        f"{method[:1].upper()}{method[1:]}{_ranked_on(board, latex_escape)}.{f' {key}.' if key else ''}}}"
    )


def to_latex(board, *, intervals: bool = True, today: datetime | None = None) -> str:
    """Complete table floats for a paper (booktabs and tabularx), in the narrowest of a column (\\columnwidth),
    the page (table*, \\textwidth) or, as a last resort, the page scaled down that the table fits: rank with its
    interval, model with its team beneath, the chosen columns (abbreviated headers, their key in the caption)
    with each column's best value bold and, unless intervals=False, the 95% intervals beneath in small type;
    reference rows where their scores fall, in italics, unranked, dated. A table longer than a page's float
    holds continues in further floats of about equal length. Links are left out (papers cite them in the
    text). The file is ASCII, names whole: see latex_text."""
    today = today or datetime.now(UTC)
    rows = _rows(board)
    layout = _layout(board, rows, intervals)
    floats = _floats(_latex_rows(board, rows, layout, intervals))
    title = f"{latex_escape(board.benchmark.name)} {latex_escape(board.split.name)}"
    label = "tab:" + _stem(board)
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
        '% written "?". Names are whole, broken only at their spaces. The CSV and JSON exports have them as written.',
    ]
    caption = _latex_caption(board, title, intervals, len(rows) > entries, layout.style, today)
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
    model = f"p{{{layout.model_pt:g}pt}}" if layout.scaled else "X"
    spec = f"@{{}}r>{{\\raggedright\\arraybackslash}}{model}{'r' * len(board.columns)}@{{}}"
    cuts = _header_cuts(board, layout.style)
    headers = [_latex_header(column, cuts) for column in board.columns]
    lines = [
        f"\\begin{{{layout.environment}}}[{'tbp' if layout.environment == 'table' else 'tp'}]",
        "\\centering",
        layout.style.main_font,
        f"\\setlength{{\\tabcolsep}}{{{layout.style.sep:g}pt}}",
        *before,
    ]
    if layout.scaled:
        lines += ["\\resizebox{\\textwidth}{!}{%", f"\\begin{{tabular}}{{{spec}}}"]
    else:
        lines.append(f"\\begin{{tabularx}}{{{layout.width}}}{{{spec}}}")
    lines += [
        "\\toprule",
        " & ".join(["", "Model", *(latex_escape(top) for top, _ in headers)]) + " \\\\",
        " & ".join(["", _small("team", layout.style), *(latex_escape(bottom) for _, bottom in headers)]) + " \\\\",
        "\\midrule",
    ]
    for row in rows:
        lines += row.lines
    lines += ["\\bottomrule", "\\end{tabular}}" if layout.scaled else "\\end{tabularx}", *after]
    return [*lines, f"\\end{{{layout.environment}}}"]
