"""Plain-text tables and CSV for the terminal (pure formatting, no I/O)."""

from __future__ import annotations

import csv
import io

# A spreadsheet runs a cell that starts with one of these as a formula; team-written names may.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[_text(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def scores_table(scores: dict) -> str:
    """Scores by subset and metric (`all` first), as a submission's answer gives them."""
    rows = [[subset, metric, value] for subset in _subsets(scores) for metric, value in scores[subset].items()]
    return table(["subset", "metric", "score"], rows)


def _subsets(scores: dict) -> list[str]:
    return sorted(scores, key=lambda name: (name != "all", name))


def _columns(board: dict) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for entry in board.get("entries", []):
        scores = entry.get("scores") or {}
        for subset in _subsets(scores):
            for metric in scores[subset]:
                seen.setdefault((subset, metric), None)
    return sorted(seen, key=lambda key: (key[0] != "all", key[0]))


def _score(entry: dict, subset: str, metric: str) -> dict:
    return ((entry.get("scores") or {}).get(subset) or {}).get(metric) or {}


def board_table(board: dict) -> str:
    title = f"{board.get('benchmark')} {board.get('split')}"
    if not board.get("scores_public", True):
        return f"{title}: scores are held until the split is revealed"
    entries = board.get("entries", [])
    if not entries:
        return f"{title}: no published entries yet"
    columns = _columns(board)
    headers = ["rank", "model", "team"] + [f"{subset} {metric}" for subset, metric in columns] + ["submitted"]
    rows = []
    for entry in entries:
        row = [entry.get("rank"), entry.get("model_name"), entry.get("team") or "(anonymous)"]
        for subset, metric in columns:
            score = _score(entry, subset, metric)
            value = score.get("value")
            if value is not None and subset == "all" and score.get("ci_low") is not None:
                row.append(f"{value:.2f} [{score['ci_low']:.1f}, {score['ci_high']:.1f}]")
            else:
                row.append(value)
        row.append((entry.get("submitted_at") or "")[:10])
        rows.append(row)
    return f"{title}\n" + table(headers, rows)


def _cell(value) -> str:
    if value is None:
        return ""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def board_csv(board: dict) -> str:
    """Every entry with every score and its 95% interval, one column each."""
    columns = _columns(board)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["rank", "submission_id", "model_name", "team", "submitted_at", "paper_url", "code_url"]
    for subset, metric in columns:
        header += [f"{subset}:{metric}", f"{subset}:{metric}:ci_low", f"{subset}:{metric}:ci_high"]
    writer.writerow(header)
    for entry in board.get("entries", []):
        row = [
            _cell(entry.get(key))
            for key in ("rank", "submission_id", "model_name", "team", "submitted_at", "paper_url", "code_url")
        ]
        for subset, metric in columns:
            score = _score(entry, subset, metric)
            row += [_cell(score.get(key)) for key in ("value", "ci_low", "ci_high")]
        writer.writerow(row)
    return out.getvalue()
