"""Leaderboard exports: CSV (formula injection, quoting), LaTeX and Markdown escaping, the JSON shape, routes."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pytest

from app import synthetic
from app.evaluation import rank_method
from app.evaluation.tasks import get_task
from app.services import catalog
from app.services.boards import exports
from app.services.boards.board_snapshots import Entry, ReferenceRow
from app.services.boards.leaderboards import Board, Column
from app.services.catalog import references
from app.services.intake import submissions
from app.services.people import teams

WHEN = datetime(2025, 3, 14, 9, 26, tzinfo=UTC)
COLUMNS = [
    Column("all", "accuracy", "Accuracy"),
    Column("all", "consistency", "Consistency"),
    Column("balanced", "accuracy", "Balanced accuracy"),
]
LATEX_SPECIALS = "a\\b{c}d$e&f#g^h_i%j~k"


def _entry(rank: int, model: str, team: str | None, **kw) -> Entry:
    return Entry(
        rank=rank,
        submission_id=rank * 10,
        model_name=model,
        team=team,
        submitted_at=WHEN,
        paper_url=kw.get("paper_url"),
        code_url=kw.get("code_url"),
        description="",
        rank_low=rank,
        rank_high=kw.get("rank_high", rank),
        scores={"all": {"accuracy": 71.25, "consistency": 30.5}, "balanced": {"accuracy": 70.0}},
        intervals={
            "all": {"accuracy": (70.0, 72.5), "consistency": (28.0, 33.0)},
            "balanced": {"accuracy": (68.0, 72.0)},
        },
    )


def _board(*entries: Entry, refs: tuple[ReferenceRow, ...] = ()) -> Board:
    benchmark = SimpleNamespace(slug="nlvr2", name="NLVR2", task_type="nlvr2")
    split = SimpleNamespace(slug="test-u", name="Test-U", hidden=False, revealed_at=None)
    return Board(benchmark, split, list(entries), True, COLUMNS, list(refs))


# --- CSV -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ['=HYPERLINK("http://evil.example","x")', "+1+2", "-2+3", "@SUM(A1:A2)", "\t=1+1", "\r=1"]
)
def test_csv_defuses_formulas(text):
    [row] = list(csv.reader(io.StringIO(exports.to_csv(_board(_entry(1, text, text))))))[1:]
    assert row[1] == "'" + text and row[2] == "'" + text


def test_csv_quotes_commas_quotes_and_newlines_and_keeps_numbers():
    model = 'Big, "quoted"\nmodel'
    text = exports.to_csv(
        _board(
            _entry(1, model, None, paper_url="https://example.org/a,b"),
            refs=(ReferenceRow(1, "Human", None, WHEN, {"all": {"accuracy": 96.1}}),),
        )
    )
    header, reference, entry = list(csv.reader(io.StringIO(text)))  # the reference where its score falls
    assert header[:7] == [
        "rank",
        "model",
        "team",
        "date",
        "all:accuracy",
        "all:accuracy ci_low",
        "all:accuracy ci_high",
    ]
    assert header[-6:] == ["paper_url", "code_url", "verified", "verified_note", "verified_url", "type"]
    assert entry[:7] == ["1", model, "Anonymous", "2025-03-14", "71.25", "70.0", "72.5"]
    assert entry[header.index("paper_url")] == "https://example.org/a,b" and entry[-1] == "entry"
    assert reference[0] == "" and reference[1] == "Human" and reference[4] == "96.1" and reference[5] == ""
    assert reference[3] == "" and reference[-1] == "reference"  # no date given: none (not the day it was added)
    assert text.count("\r\n") == 3 and '"Big, ""quoted""\nmodel"' in text  # the cell's newline stays quoted


def test_csv_cells_that_are_numbers_are_not_prefixed():
    assert exports.csv_cell(-1.5) == -1.5 and exports.csv_cell("-1.5") == "'-1.5"


# --- LaTeX -----------------------------------------------------------------------------------------------


def test_latex_escapes_every_special_character():
    assert exports.latex_escape(LATEX_SPECIALS) == (
        r"a\textbackslash{}b\{c\}d\$e\&f\#g\textasciicircum{}h\_i\%j\textasciitilde{}k"
    )
    assert exports.latex_escape("two\nlines\r\nhere") == "two lines here"
    assert exports.latex_escape("<|>") == r"\textless{}\textbar{}\textgreater{}"


def test_latex_table_is_a_booktabs_float_with_escaped_team_strings():
    board = _board(
        _entry(1, LATEX_SPECIALS, "Team_1 & 50%", paper_url="https://example.org/~x#y", rank_high=3),
        refs=(
            ReferenceRow(1, "Human {best}", None, WHEN, {"all": {"accuracy": 96.1}}, date(2019, 7, 28)),
            ReferenceRow(2, "Chance", None, WHEN, {"all": {"accuracy": 50.0}}),
        ),
    )
    text = exports.to_latex(board, today=WHEN)
    assert "\\begin{table}[tbp]" in text and "\\end{table}" in text
    assert "\\begin{tabularx}{\\columnwidth}{@{}r>{\\raggedright\\arraybackslash}Xrrr@{}}" in text
    assert "\\toprule" in text and "\\bottomrule" in text and text.count("\\midrule") == 1
    assert "% \\usepackage{booktabs}\n% \\usepackage{tabularx}\n" in text and "fontenc" not in text
    assert "\\caption{NLVR2 Test-U leaderboard (Holdout, \\mbox{2025-03-14})" in text
    assert "\\label{tab:nlvr2-test-u}" in text
    # The board's method, from the one place that writes it; the abbreviated headers' key.
    assert "Rank (interval) from one exact McNemar test per pair of entries, Holm over all pairs" in text
    assert "Acc.\\ = accuracy; Cons.\\ = consistency; Bal.\\ = balanced." in text
    assert "significantly better" not in text
    lines = text.splitlines()
    # A name of one long token: the intervals go on two lines so that the table keeps to the column.
    row = next(line for line in lines if line.startswith("1 & "))
    cells = row.removesuffix(" \\\\").split(" & ")
    assert len(cells) == 2 + len(COLUMNS)  # no stray & splits a cell
    assert cells[1] == "\\mbox{" + exports.latex_escape(LATEX_SPECIALS) + "}"  # whole: one token, one box
    assert cells[2] == r"\textbf{71.3}"  # the column's best value, rounded half up once
    beneath = lines[lines.index(row) + 1].split(" & ")
    assert beneath[0] == "{\\fontsize{7}{8}\\selectfont (1--3)}"  # the rank's interval
    assert beneath[1] == "{\\fontsize{7}{8}\\selectfont \\mbox{Team\\_1} \\mbox{\\&} \\mbox{50\\%}}"
    assert beneath[2] == "{\\fontsize{7}{8}\\selectfont \\begin{tabular}[t]{@{}r@{}}70.0-- \\\\ 72.5\\end{tabular}}"
    # The references stand where their scores fall, unranked, in italics, with their dates.
    human = lines.index(next(line for line in lines if "Human" in line))
    chance = lines.index(next(line for line in lines if "Chance" in line))
    assert human < lines.index(row) < chance
    assert lines[human] == " & \\textit{\\mbox{Human} \\mbox{\\{best\\}}} & \\textit{96.1} & -- & -- \\\\"
    assert lines[human + 1].startswith(" & {\\fontsize{7}{8}\\selectfont reference, \\mbox{2019-07-28}} & ")
    assert lines[chance + 1].startswith(" & {\\fontsize{7}{8}\\selectfont reference} & ")
    assert "example.org" not in text  # links are left out
    # No unescaped special character is left in the team-written cell.
    model = cells[1].removeprefix("\\mbox{").removesuffix("}")
    assert not re.search(r"(?<!\\)[&%$#_{}~^]", re.sub(r"\\[a-z]+\{[^}]*\}|\\[{}$&#_%]", "", model)), model
    # A short name leaves room for each rank's interval beside it and each interval on one line.
    short = exports.to_latex(_board(_entry(1, "ViLT lr=1e-5", "Lab", rank_high=3)), today=WHEN).splitlines()
    row = next(line for line in short if line.startswith("1 (1--3) & "))
    assert row.split(" & ")[1] == "\\mbox{ViLT} \\mbox{lr=1e-5}"
    assert short[short.index(row) + 1].split(" & ")[2] == "{\\fontsize{7}{8}\\selectfont 70.0--72.5}"
    assert "70.0--72.5" not in exports.to_latex(board, intervals=False)
    assert "Q$\\to$A" in exports.to_latex(
        Board(
            SimpleNamespace(slug="vcr", name="VCR", task_type="vcr"),
            SimpleNamespace(slug="val", name="Val", hidden=False, revealed_at=None),
            [],
            True,
            [Column("all", "q_a", "Q→A")],
        )
    )


# --- Markdown --------------------------------------------------------------------------------------------


def test_markdown_escapes_pipes_and_backslashes():
    board = _board(_entry(1, "a|b\\c", "x | y\nz", paper_url="https://example.org/a|b"))
    text = exports.to_markdown(board)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| Rank"))
    row = next(line for line in lines if line.startswith("| 1 (1) |"))
    # Split on pipes not preceded by a backslash: the row has as many cells as the header.
    split = lambda line: re.split(r"(?<!\\)\|", line.strip().strip("|"))  # noqa: E731
    assert len(split(row)) == len(split(header)) == 4 + len(COLUMNS) + 3  # paper, code, verified
    assert "a\\|b\\\\c" in row and "x \\| y z" in row
    assert "[paper](<https://example.org/a%7Cb>)" in row
    assert "71.2 [70.0, 72.5]" in row or "71.3 [70.0, 72.5]" in row
    assert exports.markdown_escape("*bold* _it_ [l](u) <b>") == "\\*bold\\* \\_it\\_ \\[l\\](u) \\<b\\>"


def test_markdown_and_latex_print_each_rank_with_its_interval_and_the_boards_own_method():
    """Ranks as the board shows them ("2 (2–4)"; "1 (1)" for a single-point interval) and the method in the
    words of app/evaluation/rank_method.py: the family's own paired test (VQA v2: a paired permutation test),
    a count test on a blind test before its reveal."""
    entries = [_entry(1, "A", "Lab"), _entry(2, "B", "Lab", rank_high=4), _entry(2, "C", "Lab", rank_high=4)]
    vqa = Board(
        SimpleNamespace(slug="vqa", name="VQA v2", task_type="vqa-v2"),
        SimpleNamespace(slug="test-dev", name="Test-dev", hidden=False, revealed_at=None),
        entries,
        True,
        [Column("all", "accuracy", "Accuracy")],
    )
    markdown = exports.to_markdown(vqa)
    ranks = [line.split(" | ")[0] for line in markdown.splitlines() if line.startswith("| ") and "---" not in line]
    assert ranks == ["| Rank", "| 1 (1)", "| 2 (2–4)", "| 2 (2–4)"]
    assert rank_method.sentence(get_task("vqa-v2").rank_test, False, "accuracy") in markdown.replace("\\", "")
    assert "paired permutation test" in markdown and "McNemar" not in markdown
    latex = exports.to_latex(vqa, today=WHEN)
    assert [line.split(" & ")[0] for line in latex.splitlines() if line[:1].isdigit()] == [
        "1 (1)",
        "2 (2--4)",
        "2 (2--4)",
    ]
    assert "Rank (interval) from one paired permutation test per pair of entries, Holm over all pairs" in latex
    assert "McNemar" not in latex
    blind = _board(*entries)
    blind.split = SimpleNamespace(slug="test-u", name="Test-U", hidden=True, revealed_at=None)
    assert "a two-proportion z-test on the accuracy counts" in exports.to_markdown(blind)
    assert "from one two-proportion z-test on the counts per pair of entries" in exports.to_latex(blind)


# --- JSON ------------------------------------------------------------------------------------------------


def test_json_shape():
    human = ReferenceRow(1, "Human", "https://example.org/h", WHEN, {"all": {"accuracy": 96.1}}, date(2019, 7, 28))
    chance = ReferenceRow(2, "Chance", None, WHEN, {"all": {"accuracy": 50.0}})
    board = _board(_entry(1, "M", None, code_url="https://example.org/c"), _entry(2, "N", "Lab"), refs=(human, chance))
    body = json.loads(exports.to_json(board))
    assert body["benchmark"] == "nlvr2" and body["split"] == "test-u" and body["scores_public"] is True
    assert [c["label"] for c in body["columns"]] == ["Accuracy", "Consistency", "Balanced accuracy"]
    first, second = body["entries"]
    assert first["rank"] == 1 and first["team"] == "Anonymous" and first["anonymous"] is True
    assert second["team"] == "Lab" and second["anonymous"] is False
    assert first["scores"]["all"]["accuracy"] == {
        "value": 71.25,
        "ci_low": 70.0,
        "ci_high": 72.5,
        "text": "71.3",  # as the board writes it: rounded half up once
        "ci_low_text": "70.0",
        "ci_high_text": "72.5",
    }
    assert first["code_url"] == "https://example.org/c" and first["paper_url"] is None
    assert datetime.fromisoformat(first["date"]) == WHEN
    # Where each reference stands (its row among entries and references), never a rank; its publication date.
    assert body["references"] == [
        {
            "name": "Human",
            "rank": None,
            "place": 1,
            "date": "2019-07-28",
            "source_url": "https://example.org/h",
            "scores": {"all": {"accuracy": {"value": 96.1, "text": "96.1"}}},
        },
        {
            "name": "Chance",
            "rank": None,
            "place": 4,
            "date": None,
            "source_url": None,
            "scores": {"all": {"accuracy": {"value": 50.0, "text": "50.0"}}},
        },
    ]


# --- the routes ------------------------------------------------------------------------------------------


@pytest.fixture
def published(app):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(200, seed=2)
        split = catalog.add_split("nlvr2", "dev", gold, name="Dev")
        team = teams.create_team("=cmd|' /C calc'!A0")
        submissions.store_scored(
            split,
            team,
            synthetic.predictions("nlvr2", gold, 0.8),
            model_name='@evil, "m"',
            description="d",
            publish=True,
        )
        references.add_reference("nlvr2", "dev", "Human", '{"all": {"accuracy": 96.1}}')


@pytest.mark.parametrize(
    "fmt, content_type",
    [
        ("csv", "text/csv"),
        ("json", "application/json"),
        ("md", "text/markdown"),
        ("tex", "application/x-tex"),
    ],
)
def test_export_routes(client, published, fmt, content_type):
    response = client.get(f"/leaderboards/nlvr2/dev/export.{fmt}")
    assert response.status_code == 200
    assert response.content_type.startswith(content_type)
    assert response.headers["Content-Disposition"] == f'attachment; filename="nlvr2-dev.{fmt}"'
    body = response.get_data(as_text=True)
    assert "Human" in body
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(body)))
        assert rows[1][:2] == ["", "Human"]  # above the entry, where its score falls
        assert rows[2][:3] == ["1", '\'@evil, "m"', "'=cmd|' /C calc'!A0"]


def test_export_of_an_unknown_format_or_split_is_404(client, published):
    assert client.get("/leaderboards/nlvr2/dev/export.xlsx").status_code == 404
    assert client.get("/leaderboards/nlvr2/nope/export.csv").status_code == 404


def test_export_page_links(client, published):
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    for fmt, label in (("csv", "CSV"), ("json", "JSON"), ("md", "Markdown"), ("tex", "LaTeX")):
        assert f'<a href="/leaderboards/nlvr2/dev/export.{fmt}">{label}</a>' in page
