"""Plain-text tables for the terminal (pure formatting, no I/O). CSV is not written here: the command prints
the server's own CSV export of the board (cli.py), so that it equals the web's byte for byte.

Scores are printed as the server writes them on its pages (the `text` of each score, `scores_text` of a
submission): the client never rounds, so a figure has the board's decimals ("51" for a blind test's whole
percent, "81.25" at its count resolution, one decimal elsewhere). A score the server withholds prints as
"held"; one the entry does not have, as the board's "–".
"""

from __future__ import annotations

HELD = "held"  # withheld by the split's feedback policy (until the maintainers reveal the split)
NONE = "–"  # no value (as the board writes it)


def _text(value) -> str:
    return NONE if value is None else str(value)


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[_text(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def held_scores() -> str:
    return f"scores: {HELD} by the split's feedback policy until the maintainers reveal the split"


def scores_table(scores: dict, texts: dict | None = None) -> str:
    """A submission's scores by subset and metric (`all` first), written as its page writes them (`texts`,
    the answer's scores_text; a server without it: each value as it was sent, never rounded again here)."""
    texts = texts or {}
    rows = []
    for subset in _subsets(scores):
        for metric, value in scores[subset].items():
            text = (texts.get(subset) or {}).get(metric)
            rows.append([subset, metric, text if text is not None else _text(value)])
    return table(["subset", "metric", "score"], rows)


def _subsets(scores: dict) -> list[str]:
    return sorted(scores, key=lambda name: (name != "all", name))


def board_columns(board: dict) -> list[tuple[str, str, str]]:
    """(subset, metric, label) of the board's columns, in its order (a server that does not list them: every
    score the entries hold, `all` first, labelled by subset and metric)."""
    listed = board.get("columns")
    if listed:
        return [(c["subset"], c["metric"], c.get("label") or f"{c['subset']} {c['metric']}") for c in listed]
    seen: dict[tuple[str, str], None] = {}
    for entry in board.get("entries", []):
        scores = entry.get("scores") or {}
        for subset in _subsets(scores):
            for metric in scores[subset]:
                seen.setdefault((subset, metric), None)
    ordered = sorted(seen, key=lambda key: (key[0] != "all", key[0]))
    return [(subset, metric, f"{subset} {metric}") for subset, metric in ordered]


def _score(entry: dict, subset: str, metric: str) -> dict:
    return ((entry.get("scores") or {}).get(subset) or {}).get(metric) or {}


def score_text(score: dict) -> str:
    """A board's score as the board writes it ('–' where the entry has none)."""
    text = score.get("text")
    if text is None:
        text = None if score.get("value") is None else str(score["value"])
    return NONE if text is None else text


def _bound(score: dict, name: str):
    """An interval bound as the board writes it (a server without the texts: as it was sent)."""
    return score.get(f"{name}_text", score.get(name))


def interval_text(score: dict) -> str | None:
    low, high = _bound(score, "ci_low"), _bound(score, "ci_high")
    if low is None or high is None:
        return None
    return f"{low}–{high}"


def _rank(entry: dict) -> str:
    """'3 (3–5)', or '1 (1)' for an interval of one rank, as the board and the exports write it ('3' without one)."""
    rank, low, high = entry.get("rank"), entry.get("rank_low"), entry.get("rank_high")
    if low is None or high is None:
        return _text(rank)
    return f"{rank} ({low})" if low == high else f"{rank} ({low}–{high})"


def _team(entry: dict) -> str:
    return entry.get("team") or "Anonymous"


def held_board(board: dict) -> str | None:
    """What a board whose scores are held says (None when they are public): held, and, from a server that
    gives them, how many entries wait (counts only) and the feedback policy."""
    if board.get("scores_public", True):
        return None
    line = f"{board.get('benchmark')} {board.get('split')}: scores are {HELD} until the split is revealed"
    facts = board.get("held") or {}
    if "entries" in facts and "teams" in facts:
        entries, teams = facts["entries"], facts["teams"]
        line += (
            f"\n{entries} published entr{'y' if entries == 1 else 'ies'} from {teams} team{'' if teams == 1 else 's'} "
            "wait for the reveal"
        )
    if facts.get("policy"):
        line += f"\n{facts['policy']}"
    return line


def verdict_line(submission: dict) -> str | None:
    """What the Ladder's answer means, where it answered (a server that says so: `released`): a file that did
    not clearly beat the best is shown the team's best again, never its own figure."""
    if submission.get("released") == "best":
        return (
            "the Ladder: this file did not clearly beat your team's best, so the best is shown again "
            f"(its own score is {HELD})"
        )
    if submission.get("improved") is True:
        return "the Ladder: a new best, this file's own score released"
    return None


def board_table(board: dict) -> str:
    title = f"{board.get('benchmark')} {board.get('split')}"
    if board.get("selection"):  # a track's board: its ranks are among its own entries
        title += f" (only {board['selection']}, ranked among themselves)"
    held = held_board(board)
    if held is not None:
        return held
    entries = board.get("entries", [])
    if not entries:
        return f"{title}: no published entries yet"
    columns = board_columns(board)
    headers = ["rank", "model", "team"] + [label for _, _, label in columns] + ["date"]
    rows = []
    for entry in entries:
        row = [_rank(entry), entry.get("model_name"), _team(entry)]
        for subset, metric, _ in columns:
            score = _score(entry, subset, metric)
            interval = interval_text(score)
            row.append(score_text(score) + (f" [{interval}]" if interval else ""))
        row.append((entry.get("submitted_at") or "")[:10])
        rows.append(row)
    return f"{title}\n" + table(headers, rows)
