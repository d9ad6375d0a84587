"""Hostile input against issue 24's features: the /submissions filters and paging (a bad value is a 400,
never a 500), the LaTeX exports with names written to attack pdflatex (escaped: nothing read, nothing run, and
the file still compiles), reference dates from the CLI and the console (a clear refusal, never a traceback),
and what a hidden split's answers and board tell under the Ladder and `none` (never a file's own score)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import Reference, Submission
from app.services import catalog
from app.services.blind_test import visibility
from app.services.catalog import references
from app.services.errors import InvalidInput
from app.services.intake import submissions
from app.services.people import accounts, teams
from tests.support.api_world import build_world, post_file
from tests.support.browser import login, post_form
from tests.support.splits import nlvr2_split

PASSWORD = "password123"

# --- (1) /submissions: filters and paging ----------------------------------------------------------------


@pytest.fixture
def lister(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(160, seed=7)
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        member = accounts.create_user("member@example.org", PASSWORD)
        lab = teams.create_team("Lab", creator=member)
        submissions.store_scored(
            catalog.get_split("nlvr2", "dev"),
            lab,
            synthetic.predictions("nlvr2", gold, 0.8, seed=1, split="dev"),
            model_name="m",
            user=member,
            description="d",
            publish=True,
        )
    assert login(client, "member@example.org", PASSWORD).status_code == 302
    return client


@pytest.mark.parametrize(
    "query",
    [
        "page=0",
        "page=-1",
        "page=2",
        "page=99999999999999999999999999999999999999",
        "page=" + "9" * 5000,  # past int()'s digit limit
        "page=1e3",
        "page=1.5",
        "page=%00",
        "page=1%00",
        "page=nan",
        "page=inf",
        "page=%D9%A2",  # Arabic-Indic two: past the last page
        "page=%EF%BC%92",  # full-width two
        "benchmark=%00",
        "benchmark=nlvr2%00",
        "benchmark=%C3%A9%E4%B8%AD",
        "benchmark=" + "x" * 5000,
        "split=%00",
        "split=test%00",
        "split=..%2F..%2Fetc",
        "benchmark=nlvr2&split=nope",
        "benchmark[]=nlvr2",
        "benchmark=nope&benchmark=nlvr2",
        "page=2&page=1",
        "benchmark=%ED%A0%80",  # a lone surrogate's UTF-8 (invalid)
        "split=%FF%FE",
    ],
)
def test_a_hostile_query_is_never_a_500(lister, query):
    response = lister.get(f"/submissions?{query}")
    assert response.status_code == 200 or 400 <= response.status_code < 500, (query[:80], response.status_code)
    if response.status_code == 200:
        # Whatever was kept, the page lists the team's one submission or nothing, and echoes nothing raw.
        body = response.get_data(as_text=True)
        assert "\x00" not in body


@pytest.mark.parametrize("query", ["page=0", "page=-1", "page=2", "page=" + "9" * 5000, "benchmark=nope"])
def test_a_bad_filter_or_page_is_a_400(lister, query):
    assert lister.get(f"/submissions?{query}").status_code == 400


@pytest.mark.parametrize("name", ["benchmark", "split", "page"])
def test_the_refusal_escapes_what_was_asked(lister, name):
    response = lister.get(f"/submissions?{name}=%3Cscript%3Ealert(1)%3C/script%3E")
    assert response.status_code == 400
    body = response.get_data(as_text=True)
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body


def test_a_repeated_parameter_takes_the_first(lister):
    # The first value wins (Flask's MultiDict.get): an unknown first is refused even with a good second.
    assert lister.get("/submissions?benchmark=nope&benchmark=nlvr2").status_code == 400
    assert lister.get("/submissions?benchmark=nlvr2&benchmark=nope").status_code == 200


# --- (2) LaTeX exports with names that attack pdflatex ---------------------------------------------------

ATTACKS = [
    r"\input{/etc/passwd}",
    r"\immediate\write18{touch PWNED}",
    r"\catcode`\@=0 @input{/etc/hostname}",
    r"}}}\end{tabularx}\end{table}\input{/etc/passwd}{{{",
    r"{{{ unbalanced",
    r"100% # ~ ^^5cinput{/etc/passwd} ^^M $x$ & _",
    "ctrl\x01\x07\x1b[31m\x7f\u202e\u200b\ufeffname",
    "\uff3cinput\uff5b/etc/passwd\uff5d \uff05 \uff03",  # full-width \ { } % #: folded to ASCII
    r"\def\x{\x}\x \loop\iftrue\repeat",
    "[" + r"\input{/etc/passwd}" + "]",
    "--`` '' ?` !` <> | \\\\ \\",
    ("\\input{/etc/passwd}%" * 200)[:2000],
]


def _set_names(app, names: list[str]) -> None:
    """nlvr2 with a public Dev split: one published entry per name (the name as model and team name), a
    reference row per name; the names are written to the rows directly, past the intake's checks, to test the
    export's escaping alone."""
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(200, seed=3)
        catalog.add_split("nlvr2", "dev", gold, name="Dev")
        split = catalog.get_split("nlvr2", "dev")
        for i, name in enumerate(names):
            team = teams.create_team(f"Team {i}")
            submission = submissions.store_scored(
                split,
                team,
                synthetic.predictions("nlvr2", gold, 0.6 + 0.3 * i / len(names), seed=100 + i, split="dev"),
                model_name=f"model {i}",
                description="d",
                publish=True,
            )
            submission.model_name = name
            team.name = name[:200] + f" {i}"
            reference = references.add_reference("nlvr2", "dev", f"ref {i}", '{"all": {"accuracy": 70.0}}')
            reference.name = name
        # The maintainers' names too: the benchmark's and the split's go into the caption and a comment line.
        split.benchmark.name = "Bench\n\\input{/etc/passwd} % # ~ ^^5c }{"
        split.name = "Dev }\\write18{touch PWNED}\n\\end{table}"
        split.board_version += 1
        db.session.commit()


def _compile(table: str, folder) -> tuple[int, str]:
    folder.mkdir()
    packages = re.findall(r"^% (\\usepackage(?:\[[^]]*\])?\{[^}]*\})", table, re.M)
    (folder / "board.tex").write_text(table, encoding="ascii")
    (folder / "paper.tex").write_text(
        "\\documentclass[twocolumn]{article}\n"
        + "\n".join(packages)
        + "\n\\begin{document}\nText.\n\n\\input{board.tex}\n\\end{document}\n"
    )
    done = subprocess.run(
        # Shell escape on: were anything to reach \write18, it would run.
        ["pdflatex", "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, (folder / "paper.log").read_text(errors="replace")


@pytest.mark.parametrize("path", ["/leaderboards/nlvr2/dev/export.tex", "/leaderboards/nlvr2/models/export.tex"])
def test_hostile_names_are_escaped_and_the_table_compiles(app, client, tmp_path, path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    _set_names(app, ATTACKS)
    response = client.get(path)
    assert response.status_code == 200
    table = response.get_data(as_text=True)
    assert table.isascii()
    # No attacking command survives as a command, and no control character reaches the file.
    for command in ("\\input{", "\\write18", "\\catcode", "\\immediate", "\\def\\", "\\loop", "^^"):
        assert command not in table, command
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", table)
    # Only the table's own comment lines hold a % not escaped (a bare % would swallow the rest of a row).
    for line in table.splitlines():
        if not line.startswith("% ") and line != "\\resizebox{\\textwidth}{!}{%":
            assert not re.search(r"(?<!\\)%", line), line[:200]
    returncode, log = _compile(table, tmp_path / "paper")
    assert returncode == 0, log[-3000:]
    assert "(/etc/passwd" not in log and "(/etc/hostname" not in log
    assert not (tmp_path / "paper" / "PWNED").exists()
    assert "runsystem" not in log


# --- (3) reference dates ---------------------------------------------------------------------------------

BAD_DATES = [
    "0000-01-01",
    "0001-01-01",
    "9999-12-31",
    "2024-02-30",
    "2023-02-29",
    "3000-01-01",
    "2019-07-28T00:00:00",
    "2019-07-28 00:00",
    "2019-07-28Z",
    "\u0662\u0660\u0661\u0669-\u0660\u0667-\u0662\u0668",  # Arabic-Indic digits
    "\uff12\uff10\uff11\uff19-07-28",  # full-width digits
    "\u0968\u0966\u0967\u096f-\u0966\u096d-\u0968\u096e",  # Devanagari digits
    "2019-07-28\x00",
    "+2019-07-28",
    "-2019-07-28",
    "2019-07-28\n2019",
    "99999-01-01",
    "2019-00-10",
    "2019-07-00",
    "2" * 5000,
]


@pytest.mark.parametrize("value", BAD_DATES)
def test_a_bad_cli_date_is_a_clear_refusal(app, runner, tmp_path, value):
    nlvr2_split(runner, tmp_path)
    result = runner.invoke(
        args=["references", "add", "nlvr2", "dev", "--name", "Human", "--scores", '{"all": {"accuracy": 75}}']
        + ["--date", value]
    )
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "'--date'" in result.output and "Traceback" not in result.output
    assert len(result.output) < 2000  # the bad value is cut short in the message
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


def test_the_parser_refuses_what_date_fromisoformat_would_take_or_choke_on():
    for value in BAD_DATES:
        with pytest.raises(InvalidInput) as refused:
            references.parse_date(value)
        assert refused.value.field == "date"


@pytest.fixture
def console(app, client):
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "dev", synthetic.nlvr2_gold(160, seed=7), name="Dev")
        accounts.create_user("admin@example.org", PASSWORD, admin=True)
    assert login(client, "admin@example.org", PASSWORD).status_code == 302
    return client


@pytest.mark.parametrize("value", BAD_DATES)
def test_a_bad_console_date_is_a_422_beside_the_field(app, console, value):
    path = "/console/splits/nlvr2/dev/references"
    fields = {"name": "Human", "scores": '{"all": {"accuracy": 75}}', "source": "", "date": value}
    response = post_form(console, path, fields, form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 422, response.status_code
    page = response.get_data(as_text=True)
    if "\x00" in value:  # refused for every field before the form is read, naming the field
        assert "form field &#39;date&#39; contains a NUL byte" in page
    else:
        # Beside the field: the service's sentence, or the form's length check for a value over 10 characters.
        error = re.search(r'id="reference-date-error">([^<]*)', page)
        assert error is not None, value[:40]
        assert error.group(1).startswith("date must be") or "longer than 10" in error.group(1), error.group(1)
    assert "Traceback" not in page
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


# --- (4) what a hidden split tells under the Ladder and `none` ------------------------------------------


def _own(app, submission_id: int) -> dict:
    with app.app_context():
        return visibility.scores_of(db.session.get(Submission, submission_id))


def _numbers(document) -> set[float]:
    """Every number in a JSON document (keys' values, at any depth)."""
    found: set[float] = set()
    if isinstance(document, dict):
        for value in document.values():
            found |= _numbers(value)
    elif isinstance(document, list):
        for value in document:
            found |= _numbers(value)
    elif isinstance(document, (int, float)) and not isinstance(document, bool):
        found.add(float(document))
    elif isinstance(document, str):
        found |= {float(x) for x in re.findall(r"\d+\.\d+", document)}
    return found


@pytest.mark.parametrize("feedback", ["ladder", "none"])
def test_a_worse_files_own_score_is_never_told(app, client, feedback):
    world = build_world(app)
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback=feedback, per_day=20)
    answers = []
    for accuracy, seed in ((0.8, 1), (0.55, 2), (0.62, 3)):
        response = post_file(
            client,
            world,
            "member",
            world.predictions("test-u", accuracy=accuracy, seed=seed),
            split="test-u",
            description="d",
        )
        assert response.status_code == 201, response.json
        answers.append(response.json)
        published = client.post(
            f"/api/v1/submissions/{response.json['id']}/publish", json={}, headers=world.headers("member")
        )
        assert published.status_code == 200, published.json
    first, *worse = answers
    for answer in worse:
        own = _own(app, answer["id"])
        own_figures = {round(v, d) for m in own.values() for v in m.values() for d in (1, 2, 3, 4)}
        own_figures |= {round(v * 100, d) for m in own.values() for v in m.values() for d in (1, 2, 3)}
        detail = client.get(f"/api/v1/submissions/{answer['id']}", headers=world.headers("member")).json
        for document in (answer, detail):
            leaked = _numbers({k: v for k, v in document.items() if k not in ("id", "quota")}) & own_figures
            assert not leaked, (feedback, document)
            if feedback == "none":
                assert (document["improved"], document["released"], document["scores"]) == (None, "none", None)
            else:
                assert (document["improved"], document["released"]) == (False, "best")
                assert document["scores"] == first["scores"]
            assert not {"examples", "per_example", "predictions", "correct", "units"} & set(document)
    # The held board: counts and policy, no entry, no score.
    board = client.get("/api/v1/leaderboards/nlvr2/test-u").json
    held = board["held"]
    assert held is not None and held["feedback"] == feedback
    assert set(held) == {"entries", "teams", "feedback", "policy", "opens", "about_url"}
    assert held["entries"] == 3 and held["teams"] == 1
    assert not board.get("entries")
    everything = _numbers(board)
    for answer in answers:
        own = _own(app, answer["id"])
        figures = {round(v, d) for m in own.values() for v in m.values() for d in (1, 2, 3, 4)}
        assert not (everything & figures), board


@pytest.mark.parametrize("feedback", ["ladder", "none"])
def test_the_models_view_and_exports_hold_a_hidden_splits_figures(app, client, feedback):
    """The same model published on Dev (about 70%) and on hidden Test-U (about 93%): no export of the models
    view or of Test-U's board, in any format, carries a Test-U figure before the reveal."""
    world = build_world(app)
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback=feedback, per_day=20)
    ids = []
    for split, accuracy in (("dev", 0.7), ("test-u", 0.93)):
        response = post_file(
            client,
            world,
            "member",
            world.predictions(split, accuracy=accuracy, seed=5),
            split=split,
            description="d",
            model_name="Twin",
        )
        assert response.status_code == 201, response.json
        ids.append(response.json["id"])
        published = client.post(f"/api/v1/submissions/{ids[-1]}/publish", json={}, headers=world.headers("member"))
        assert published.status_code == 200, published.json
    hidden = _own(app, ids[1])["all"]["accuracy"]
    assert hidden > 85
    figures = {f"{hidden:.{d}f}" for d in (1, 2, 3)}
    for path in (
        "/leaderboards/nlvr2/models",
        "/leaderboards/nlvr2/models/export.tex",
        "/leaderboards/nlvr2/models/export.csv",
        "/leaderboards/nlvr2/models/export.json",
        "/api/v1/leaderboards/nlvr2/models",
        "/leaderboards/nlvr2/test-u",
        "/leaderboards/nlvr2/test-u/export.tex",
        "/leaderboards/nlvr2/test-u/export.csv",
        "/leaderboards/nlvr2/test-u/export.md",
        "/leaderboards/nlvr2/test-u/export.json",
        "/api/v1/leaderboards/nlvr2/test-u",
    ):
        response = client.get(path)
        assert response.status_code in (200, 404), (path, response.status_code)
        body = response.get_data(as_text=True)
        assert not any(figure in body for figure in figures), (path, figures)
        # Nor anything above 85 at all (Dev's figures and intervals are around 70).
        high = [float(x) for x in re.findall(r"(?<![\d.])(\d{2}\.\d+)", body) if 85 <= float(x) <= 100]
        assert not high, (path, high[:5])
    dev = _own(app, ids[0])["all"]["accuracy"]
    assert f"{dev:.1f}" in client.get("/leaderboards/nlvr2/models/export.tex").get_data(as_text=True)
    models = client.get("/api/v1/leaderboards/nlvr2/models").json
    assert not any(key.startswith("test-u/") for row in models.get("entries", []) for key in row.get("cells", {}))
    # The check can fail: once revealed, the figure is there.
    with app.app_context():
        catalog.reveal_split("nlvr2", "test-u")
    assert f"{hidden:.1f}" in client.get("/leaderboards/nlvr2/test-u/export.csv").get_data(as_text=True)


DEEP = "[" * 3000 + "]" * 3000  # past the JSON decoder's recursion limit, under the form size limit
HOSTILE_SCORES = [
    DEEP,
    '{"all": ' * 3000 + "1" + "}" * 3000,
    '{"all": {"accuracy": ' + "9" * 5000 + "}}",  # past int()'s digit limit
    '{"all": {"accuracy": NaN}}',
    '{"all": {"accuracy": 1e999}}',
    '{"all": {"accuracy": -0.0001}}',
    '{"all": {"accuracy": true}}',
    '{"all": {"accuracy": "75"}}',
    '{"all": {"accuracy": 75}, "all": 3}',
    '{"\\u0000": {"accuracy": 75}}',
    '{"all": {"\\ud800": 75}}',
    "\x00",
    "",
]


@pytest.mark.parametrize("scores", HOSTILE_SCORES, ids=range(len(HOSTILE_SCORES)))
def test_hostile_scores_from_the_cli_are_a_clear_refusal(app, runner, tmp_path, scores):
    nlvr2_split(runner, tmp_path)
    result = runner.invoke(args=["references", "add", "nlvr2", "dev", "--name", "Human", "--scores", scores])
    assert result.exit_code == 2, (result.exit_code, result.output[-500:], repr(result.exception)[:300])
    assert "scores" in result.output and "Traceback" not in result.output
    if scores.count("[") + scores.count("{") > 1000:
        assert "nested too deeply" in result.output
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []


@pytest.mark.parametrize("scores", HOSTILE_SCORES, ids=range(len(HOSTILE_SCORES)))
def test_hostile_scores_in_the_console_form_are_a_422(app, console, scores):
    path = "/console/splits/nlvr2/dev/references"
    fields = {"name": "Human", "scores": scores, "source": "", "date": ""}
    response = post_form(console, path, fields, form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 422, response.status_code
    if scores.count("[") + scores.count("{") > 1000:
        assert "nested too deeply" in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalars(select(Reference)).all() == []
