"""One number (issue 24): every view writes a score the same way, from the stored value by one rounding.

The world: a hidden NLVR2 Test-U of 400 examples (100 sentences) under `full` feedback, so that before the
reveal every figure anyone but a maintainer reads is the released one: the whole split's accuracy to its count
resolution (1 decimal on 400 examples, where 100·k/400 often ends in 5: the half-up rounding decides),
consistency over 100 sentences and the bias subsets in whole percents ("51", never "51.0"). Three teams publish
40 entries (some anonymous). For every entry and every column, the figure on the board page, the entry's own
page (as a visitor and as its team), the models view, the progress chart's tooltip, the CSV, JSON, Markdown and
LaTeX exports, the API's board, models view and submission answer must be one string, and that string must be
the stored value snapped to its count and rounded half up once. After the reveal the same holds with one
decimal from the stored value.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest

from app.db import db
from app.evaluation import ladder as ladder_rule
from app.models import Submission
from app.services import catalog
from tests.conftest import clear_process_caches
from tests.support.browser import login
from tests.support.one_number import COLUMNS, QUERY, N, board_page, build, figure_and_interval
from tests.support.users import PASSWORD, bearer

ENTRIES = 40


@pytest.fixture(scope="module")
def world(module_app):
    return build(module_app, ENTRIES)


# --- reading every view ------------------------------------------------------------------------------------


def _submission_page(client, sid: int) -> dict:
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    table = page.split('<table class="board scores">', 1)[1].split("</table>", 1)[0]
    # A header is the metric's label and its n; a row carries its subset's name (its cell, the label).
    headers = [re.sub(r"<span.*", "", h) for h in re.findall(r'<th scope="col" class="num"[^>]*>(.*?)</th>', table)]
    metrics = [m for m in ("accuracy", "consistency") if m.title() in headers]
    found = {}
    for subset, row in re.findall(r'<tr data-subset="([^"]+)">(.*?)</tr>', table, re.S):
        cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', row, re.S)
        for metric, cell in zip(metrics, cells, strict=True):
            if f"{subset}:{metric}" in COLUMNS:
                found[(sid, f"{subset}:{metric}")] = figure_and_interval(cell)
    return found


def _models_page(client, keys: list[str]) -> dict:
    page = client.get("/leaderboards/nlvr2/models").get_data(as_text=True)
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    found = {}
    for row in re.findall(r'<tr class="entry">(.*?)</tr>', body, re.S):
        cells = re.findall(r'<td class="num[^"]*">(.*?)</td>', row, re.S)
        assert len(cells) == len(keys), row
        for key, cell in zip(keys, cells, strict=True):
            sid = int(re.search(r'href="/submissions/(\d+)"', cell).group(1))
            found[(sid, key.split("/", 1)[1])] = figure_and_interval(cell)
    return found


def _chart(client) -> dict:
    page = client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    svg = page.split('<svg class="progress-chart"', 1)[1].split("</svg>", 1)[0]
    found = {}
    for sid, title in re.findall(r'<a href="/submissions/(\d+)"[^>]*><circle[^>]*><title>(.*?)</title>', svg):
        found[(int(sid), "all:accuracy")] = (re.search(r": ([\d.]+)%, ", title).group(1), None)
    return found


def _csv_export(client, sid_of: dict[str, int]) -> dict:
    text = client.get(f"/leaderboards/nlvr2/test-u/export.csv?{QUERY}").get_data(as_text=True)
    found = {}
    for row in csv.DictReader(io.StringIO(text)):
        sid = sid_of[row["model"]]
        for key in COLUMNS:
            low, high = row[f"{key} ci_low"], row[f"{key} ci_high"]
            found[(sid, key)] = (row[key], f"{low}–{high}" if low and high else None)
    return found


def _markdown_export(client, sid_of: dict[str, int]) -> dict:
    text = client.get(f"/leaderboards/nlvr2/test-u/export.md?{QUERY}").get_data(as_text=True)
    found = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        if len(cells) < 4 or cells[1].replace("\\", "") not in sid_of:
            continue
        for key, cell in zip(COLUMNS, cells[4 : 4 + len(COLUMNS)], strict=True):
            value, _, interval = cell.partition(" [")
            found[(sid_of[cells[1].replace("\\", "")], key)] = (
                value,
                interval.rstrip("]").replace(", ", "–") if interval else None,
            )
    return found


# An interval beneath its value in small type: "low--high" on a line, or compact, "low--" over "high" (a
# tabular of one column).
_LATEX_INTERVAL = re.compile(
    r"\{\\fontsize\{\d+\}\{\d+\}\\selectfont (?:\\begin\{tabular\}\[t\]\{@\{\}r@\{\}\})?"
    r"(.*?)-- ?(?:\\\\ )?(.*?)(?:\\end\{tabular\})?\}"
)


def _latex_export(client, sid_of: dict[str, int]) -> dict:
    text = client.get(f"/leaderboards/nlvr2/test-u/export.tex?{QUERY}").get_data(as_text=True)
    found = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [cell.strip() for cell in line.removesuffix(" \\\\").split(" & ")]
        # The model cell: each token of the (escaped) name in an \mbox; the team is beneath it.
        plain = re.sub(r"\\mbox\{([^{}]*)\}", r"\1", cells[1]) if len(cells) > 1 else ""
        model = re.sub(r"\\_", "_", plain).split(" (", 1)[0]
        if model not in sid_of:
            continue
        beneath = [c.strip() for c in lines[i + 1].removesuffix(" \\\\").split(" & ")][2:]
        for j, (key, cell) in enumerate(zip(COLUMNS, cells[2:], strict=True)):
            interval = _LATEX_INTERVAL.fullmatch(beneath[j]) if j < len(beneath) else None
            value = re.sub(r"\\textbf\{(.*)\}", r"\1", cell)
            found[(sid_of[model], key)] = (value, f"{interval.group(1)}–{interval.group(2)}" if interval else None)
    return found


def _interval(score: dict) -> str | None:
    if score["ci_low_text"] is None:
        return None
    return f"{score['ci_low_text']}–{score['ci_high_text']}"


def _json_documents(client) -> tuple[dict, dict]:
    exported = client.get(f"/leaderboards/nlvr2/test-u/export.json?{QUERY}").json
    api = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    found: tuple[dict, dict] = ({}, {})
    for into, document in zip(found, (exported, api), strict=True):
        for entry in document["entries"]:
            for key in COLUMNS:
                subset, metric = key.split(":")
                score = entry["scores"][subset][metric]
                into[(entry["submission_id"], key)] = (score["text"], _interval(score))
    return found


def _api_models(client) -> tuple[dict, list[str]]:
    document = client.get("/api/v1/leaderboards/nlvr2/models").json
    keys = [column["key"] for column in document["columns"]]
    found = {}
    for row in document["models"]:
        for key, cell in row["cells"].items():
            found[(cell["submission_id"], key.split("/", 1)[1])] = (cell["text"], _interval(cell))
    return found, keys


def _api_submissions(client, world) -> dict:
    found = {}
    for sid, team in world["team_of"].items():
        answer = client.get(f"/api/v1/submissions/{sid}", headers=bearer(world["tokens"][team])).json
        for key in COLUMNS:
            subset, metric = key.split(":")
            found[(sid, key)] = (answer["scores_text"][subset][metric], None)
    return found


def read_every_view(app, world) -> dict[str, dict]:
    """{view: {(submission id, column key): (figure, interval or None)}}."""
    client = app.test_client()
    sid_of = world["ids"]
    api_models, model_keys = _api_models(client)
    exported, api = _json_documents(client)
    views = {
        "board page": board_page(client),
        "models page": _models_page(client, model_keys),
        "chart tooltip": _chart(client),
        "CSV export": _csv_export(client, sid_of),
        "JSON export": exported,
        "Markdown export": _markdown_export(client, sid_of),
        "LaTeX export": _latex_export(client, sid_of),
        "API board": api,
        "API models": api_models,
        "API submission": _api_submissions(client, world),
        "submission page (visitor)": {},
        "submission page (team)": {},
    }
    team_clients = {}
    for sid, team in world["team_of"].items():
        views["submission page (visitor)"] |= _submission_page(client, sid)
        if team not in team_clients:
            team_clients[team] = app.test_client()
            assert login(team_clients[team], f"{team.lower()}@example.org", PASSWORD).status_code == 302
        views["submission page (team)"] |= _submission_page(team_clients[team], sid)
    return views


def _compare(views: dict[str, dict], expected: dict) -> list[str]:
    problems = []
    for name, found in views.items():
        for (sid, key), (value, interval) in found.items():
            want_value, want_interval = expected[(sid, key)]
            if value != want_value:
                problems.append(f"{name}: submission {sid} {key} shows {value!r}, the board {want_value!r}")
            if interval is not None and interval != want_interval:
                problems.append(f"{name}: submission {sid} {key} interval {interval!r}, the board {want_interval!r}")
    return problems


# --- the figures a correct rounding gives ---------------------------------------------------------------------


def _half_up(value: Fraction, decimals: int) -> str:
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return str(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def expected_released(app, world) -> dict[tuple[int, str], tuple[str, Fraction, int]]:
    """Each stored value snapped to its count (k of the column's units) and written half up, once, to the
    count resolution: whole split accuracy over 400 examples to 1 decimal, consistency over 100 sentences and
    the subsets in whole percents. Computed from exact fractions, apart from the app's code: (figure, the
    exact percentage 100·k/n, its decimals)."""
    with app.app_context():
        split = catalog.get_split("nlvr2", "test-u")
        inputs = catalog.scoring_inputs(split)
        units = {
            "all:accuracy": N,
            "all:consistency": inputs.gold.n_groups,
            **{f"{name}:accuracy": len(indices) for name, indices in inputs.subsets.items()},
        }
        decimals = {"all:accuracy": ladder_rule.count_decimals(N), "all:consistency": 0}
        found = {}
        for sid in world["ids"].values():
            submission = db.session.get(Submission, sid)
            for score in submission.scores:
                key = f"{score.subset}:{score.metric}"
                if key not in COLUMNS:
                    continue
                n = units[key]
                k = round(score.value * n / 100)
                exact = Fraction(100 * k, n)
                found[(sid, key)] = (_half_up(exact, decimals.get(key, 0)), exact, decimals.get(key, 0))
    return found


# --- the checks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("worker", ["computing the board", "reading the stored board"])
def test_every_view_writes_every_figure_as_the_board_does(module_app, world, worker):
    """Once as the worker that computes the board, once as another that reads its stored payload."""
    clear_process_caches()
    if worker == "reading the stored board":
        module_app.test_client().get("/leaderboards/nlvr2/test-u")  # computed and stored...
        clear_process_caches()  # ...and forgotten by this process, as by every other worker
    views = read_every_view(module_app, world)
    board = views["board page"]
    assert len(board) == ENTRIES * len(COLUMNS)
    for name, found in views.items():
        wanted = ENTRIES if name == "chart tooltip" else ENTRIES * len(COLUMNS)
        assert len(found) == wanted, (name, len(found))
    problems = _compare(views, board)
    assert not problems, "\n".join(problems[:40])
    # The one string is the release, rounded once: checked against exact arithmetic.
    expected = expected_released(module_app, world)
    wrong = [
        f"{key}: {board[key][0]!r}, expected {text!r}"
        for key, (text, _, _) in expected.items()
        if board[key][0] != text
    ]
    assert not wrong, "\n".join(wrong[:40])


def test_the_world_holds_ties_and_whole_percents(module_app, world):
    expected = expected_released(module_app, world)
    # Ties (an exact percentage halfway between two figures: half up, not half to even, decides)...
    ties = [text for text, exact, places in expected.values() if (exact * 10**places).denominator == 2]
    assert len(ties) >= 5
    # ...and whole percents, written without decimals.
    assert all("." not in text for (_, key), (text, _, _) in expected.items() if key != "all:accuracy")


def test_a_whole_percent_prints_without_decimals(module_app, world):
    client = module_app.test_client()
    for sid in list(world["ids"].values())[:5]:
        page = client.get(f"/submissions/{sid}").get_data(as_text=True)
        for subset in ("balanced", "unbalanced"):
            row = re.search(rf'<tr data-subset="{subset}">(.*?)</tr>', page, re.S).group(1)
            figure = figure_and_interval(re.findall(r'<td class="num"[^>]*>(.*?)</td>', row, re.S)[0])[0]
            assert re.fullmatch(r"\d{1,3}", figure), (sid, subset, figure)
    api = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    for entry in api["entries"]:
        assert re.fullmatch(r"\d{1,3}", entry["scores"]["unbalanced"]["accuracy"]["text"])
        assert re.fullmatch(r"\d{1,3}\.\d", entry["scores"]["all"]["accuracy"]["text"])


def test_after_the_reveal_every_view_writes_the_stored_value_with_one_decimal(app):
    world = build(app, 6)
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="none")
        catalog.reveal_split("nlvr2", "test-u")
        stored = {
            (score.submission_id, f"{score.subset}:{score.metric}"): score.value
            for submission in db.session.scalars(db.select(Submission))
            for score in submission.scores
        }
    client = app.test_client()
    exported, api = _json_documents(client)
    views = {
        "board page": board_page(client),
        "JSON export": exported,
        "API board": api,
        "submission page (visitor)": {},
    }
    for sid in world["ids"].values():
        views["submission page (visitor)"] |= _submission_page(client, sid)
    board = views["board page"]
    assert not _compare(views, board)
    for (sid, key), (value, _) in board.items():
        assert value == _half_up(Fraction(stored[(sid, key)]).limit_denominator(10**6), 1), (sid, key, value)
