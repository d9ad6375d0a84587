"""The `holdout` command prints what the pages print (issue 24): the board's columns and figures, the server's
own Markdown and LaTeX exports, "held" for what a feedback policy withholds (never "None"), and `unpublish`.

The command runs in this process (cli.main) with its requests answered by the app through Flask's test client
instead of a socket, on the one-number world: a hidden `full` split whose figures are released to their count
resolution (1 decimal on 400 examples) and subsets in whole percents. tests/client/test_holdout_command.py drives
the installed command against gunicorn.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys

import pytest

from app import synthetic
from app.services import catalog
from tests.client.conftest import CLIENT
from tests.support.one_number import COLUMNS, N, board_page, build, figure_and_interval
from tests.support.users import bearer

sys.path.insert(0, str(CLIENT))
from holdout_client import cli  # noqa: E402  (the client is not installed in this venv)

ENTRIES = 9
LABELS = ["Accuracy", "Consistency", "Balanced accuracy", "Unbalanced accuracy"]


@pytest.fixture
def world(app, served):
    return build(app, ENTRIES)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "None" not in out + err, out + err
    return code, out, err


def _table(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """A printed table's headers and rows, cut at the columns the dashes line marks."""
    lines = text.splitlines()
    dashes = next(i for i, line in enumerate(lines) if set(line) <= {"-", " "} and line)
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[dashes])]
    starts = [start for start, _ in spans] + [None]

    def cells(line: str) -> list[str]:
        return [line[starts[i] : starts[i + 1]].strip() for i in range(len(spans))]

    headers = cells(lines[dashes - 1])
    return headers, [dict(zip(headers, cells(line), strict=True)) for line in lines[dashes + 1 :]]


def _as_board_writes(figure: str, interval: str | None) -> str:
    return f"{figure} [{interval}]" if interval else figure


def test_the_table_and_csv_print_the_boards_columns_and_figures(app, world, capsys):
    board = board_page(app.test_client())
    sid_of = world["ids"]

    code, out, _ = run(capsys, "leaderboard", "nlvr2", "test-u")
    assert code == 0
    headers, rows = _table(out)
    assert headers == ["rank", "model", "team", *LABELS, "date"]
    assert len(rows) == ENTRIES
    for row in rows:
        sid = sid_of[row["model"]]
        for key, label in zip(COLUMNS, LABELS, strict=True):
            assert row[label] == _as_board_writes(*board[(sid, key)]), (row["model"], key)
    assert any(row["team"] == "Anonymous" for row in rows)
    assert all(re.fullmatch(r"\d{1,3}", row["Unbalanced accuracy"]) for row in rows)  # whole percents: "51"

    code, out, _ = run(capsys, "leaderboard", "nlvr2", "test-u", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert len(rows) == ENTRIES
    for row in rows:
        sid = sid_of[row["model"]]
        for key in COLUMNS:
            figure, interval = board[(sid, key)]
            low, high = row[f"{key} ci_low"], row[f"{key} ci_high"]
            assert (row[key], f"{low}–{high}" if low else None) == (figure, interval), (row["model"], key)


def test_markdown_and_latex_are_the_boards_own_exports(app, world, served, capsys):
    pages = app.test_client()
    for fmt, suffix in (("markdown", "md"), ("latex", "tex")):
        for view in ((), ("--view", "teams")):
            # Without a split: the landing split, as the benchmark's page shows it (here the blind test).
            code, out, _ = run(capsys, "leaderboard", "nlvr2", *view, "--format", fmt)
            query = "?view=teams" if view else ""
            assert code == 0
            assert out == pages.get(f"/leaderboards/nlvr2/test-u/export.{suffix}{query}").get_data(as_text=True)
    code, out, _ = run(capsys, "leaderboard", "nlvr2", "test-u", "--format", "markdown")
    board = board_page(pages)
    for (sid, key), (figure, _) in board.items():
        model = next(name for name, found in world["ids"].items() if found == sid)
        line = next(line for line in out.splitlines() if f"| {model} |" in line)
        assert f" {figure}" in line, (model, key, figure)
    code, out, _ = run(capsys, "leaderboard", "nlvr2", "test-u", "--format", "json")
    assert json.loads(out) == pages.get("/api/v1/leaderboards/nlvr2/test-u").json


def test_exports_are_fetched_without_the_token(app, world, served, capsys, monkeypatch):
    monkeypatch.setenv("HOLDOUT_TOKEN", world["tokens"]["Lab"])
    for fmt, suffix in (("latex", "tex"), ("csv", "csv")):
        assert run(capsys, "leaderboard", "nlvr2", "test-u", "--format", fmt)[0] == 0
        assert served[-2:] == [
            ("/api/v1/leaderboards/nlvr2/test-u", True),
            (f"/leaderboards/nlvr2/test-u/export.{suffix}", False),
        ]


def test_show_prints_the_pages_figures(app, world, capsys, monkeypatch):
    sid = world["ids"]["model-00"]
    monkeypatch.setenv("HOLDOUT_TOKEN", world["tokens"][world["team_of"][sid]])
    code, out, _ = run(capsys, "show", str(sid))
    assert code == 0
    printed = {(m.group(1), m.group(2)): m.group(3) for m in re.finditer(r"^(\S+)\s+(\S+)\s+(\S+)$", out, re.M)}
    page = app.test_client().get(f"/submissions/{sid}").get_data(as_text=True)
    for key in COLUMNS:
        subset, metric = key.split(":")
        row = re.search(rf'<tr data-subset="{subset}">(.*?)</tr>', page, re.S).group(1)
        cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', row, re.S)
        figure = figure_and_interval(cells[("accuracy", "consistency").index(metric)])[0]
        assert printed[(subset, metric)] == figure, (key, printed, figure)
    assert re.fullmatch(r"\d{1,3}", printed[("balanced", "accuracy")])


def test_withheld_scores_print_held(app, world, capsys, monkeypatch):
    sid = world["ids"]["model-00"]
    monkeypatch.setenv("HOLDOUT_TOKEN", world["tokens"][world["team_of"][sid]])
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    # The Ladder: the team sees its accuracy alone, written as its page writes it.
    code, out, _ = run(capsys, "show", str(sid))
    assert code == 0 and re.search(r"^all\s+accuracy\s+\d+\.\d$", out, re.M), out
    assert "consistency" not in out and "balanced" not in out
    code, out, err = run(capsys, "leaderboard", "nlvr2", "test-u")
    held = "nlvr2 test-u: scores are held until the split is revealed"
    assert code == 0 and out.splitlines()[0] == held
    assert f"{ENTRIES} published entries from 3 teams wait for the reveal" in out  # counts only
    assert "Feedback policy ladder" in out
    for fmt in ("csv", "markdown", "latex"):
        code, out, err = run(capsys, "leaderboard", "nlvr2", "test-u", "--format", fmt)
        assert code == 0 and err.splitlines()[0] == held, fmt
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="none")
    code, out, _ = run(capsys, "show", str(sid))
    assert code == 0
    assert "scores: held by the split's feedback policy until the maintainers reveal the split" in out
    assert "accuracy" not in out


def test_the_ladders_answer_says_which_figure_it_shows(app, world, capsys, monkeypatch, tmp_path):
    """A file that does not clearly beat the team's best is shown the best again: the command says so, and
    prints that figure as the page does."""
    monkeypatch.setenv("HOLDOUT_TOKEN", world["tokens"]["Lab"])
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="ladder")
    gold = synthetic.nlvr2_gold(N, split="test", seed=5)
    for accuracy, seed in ((0.95, 1), (0.6, 2)):
        (tmp_path / f"{seed}.csv").write_bytes(synthetic.predictions("nlvr2", gold, accuracy, seed=seed))
    code, out, err = run(capsys, "submit", "nlvr2", "test-u", str(tmp_path / "1.csv"), "--model", "good")
    assert code == 0 and "the Ladder: a new best" in out, err
    best = re.search(r"^all\s+accuracy\s+(\S+)$", out, re.M).group(1)
    code, out, _ = run(capsys, "submit", "nlvr2", "test-u", str(tmp_path / "2.csv"), "--model", "worse")
    assert code == 0 and "did not clearly beat your team's best, so the best is shown again" in out
    assert re.search(r"^all\s+accuracy\s+(\S+)$", out, re.M).group(1) == best


def test_unpublish_takes_an_entry_off_the_board(app, world, capsys, monkeypatch):
    sid = world["ids"]["model-01"]
    team = world["team_of"][sid]
    monkeypatch.setenv("HOLDOUT_TOKEN", world["tokens"][team])
    code, out, _ = run(capsys, "unpublish", str(sid))
    assert code == 0 and out.strip() == f"submission {sid} unpublished: no longer on nlvr2 test-u"
    listed = app.test_client().get("/api/v1/leaderboards/nlvr2/test-u").json["entries"]
    assert sid not in {entry["submission_id"] for entry in listed} and len(listed) == ENTRIES - 1
    answer = app.test_client().get(f"/api/v1/submissions/{sid}", headers=bearer(world["tokens"][team])).json
    assert answer["published"] is False
    # Another team's entry: the server answers 404, the command exits 1 and says so.
    other = next(s for s, t in world["team_of"].items() if t != team)
    code, _, err = run(capsys, "unpublish", str(other))
    assert code == 1 and f"no submission {other}" in err
    with pytest.raises(SystemExit) as usage:
        cli.main(["unpublish", "not-a-number"])
    assert usage.value.code == 2
