"""`holdout leaderboard --format csv` writes the web's CSV export of the same board byte for byte (issue 34): the
header, the rounding (six decimals; a blind test's released figures as the board writes them), the interval and
rank-interval columns, the reference rows where they stand, the quoting and the defused formula cells.

The command runs in this process (cli.main) with its requests answered by the app (tests/client/conftest.py's
`served`); tests/client/test_holdout_command.py compares the installed command's output with gunicorn's export.
"""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.evaluation.tasks import TASK_TYPES, get_task
from app.models import Submission, Team
from app.services import catalog
from app.services.catalog import references
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from tests.client.conftest import CLIENT
from tests.support.users import make_user

sys.path.insert(0, str(CLIENT))
from holdout_client import cli  # noqa: E402  (the client is not installed in this venv)

N = 240
# Names a spreadsheet would run as a formula, and names the CSV must quote.
MODELS = ("=SUM(A1:A9)", "+cmd|' /C calc'!A0", "-1.5", "@lab model", 'comma, "quoted"', "Ünïcode 模型", "plain", "last")
TEAMS = ("Lab", "=Rivals", "Third, Inc.")


def _publish_entries(benchmark: str, split: str, task: str, gold: bytes, users: dict, count: int) -> None:
    options = get_task(task).demo_split_options(split)
    for i in range(count):
        team = TEAMS[i % len(TEAMS)]
        data = synthetic.predictions(task, gold, 0.55 + 0.05 * i, seed=10 + i, **options)
        upload = Upload(data, model_name=MODELS[i % len(MODELS)], anonymous=i == 3)
        result = submissions.submit(users[team], None, benchmark, split, upload)
        links = {"paper_url": "https://example.org/paper", "code_url": "https://example.org/code"} if i == 1 else {}
        submissions.publish(users[team], result.id, description=f"entry {i}", **links)


def _users() -> dict:
    users = {}
    for i, name in enumerate(TEAMS):
        team = Team(name=name)
        db.session.add(team)
        db.session.commit()
        users[name] = make_user(f"member{i}@example.org", team=team)
    return users


def _cli_csv(capsysbinary, *argv: str) -> bytes:
    assert cli.main(["leaderboard", *argv, "--format", "csv"]) == 0
    return capsysbinary.readouterr().out


def _web_csv(app, benchmark: str, split: str, view: str | None, columns: tuple[str, ...] = ()) -> bytes:
    query = [*((("view", view),) if view else ()), *(("columns", key) for key in columns)]
    response = app.test_client().get(f"/leaderboards/{benchmark}/{split}/export.csv", query_string=query)
    assert response.status_code == 200
    return response.get_data()


@pytest.fixture
def nlvr2_world(app, served):
    """NLVR2 with a public dev split, a blind test under `full` feedback (released figures) and one whose scores
    are held (`none`), each with eight entries from three teams (one anonymous) and reference rows."""
    gold = synthetic.nlvr2_gold(N, split="dev", seed=1)
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        users = _users()
        for split, hidden, feedback in (("dev", False, None), ("test-u", True, "full"), ("test-h", True, "none")):
            catalog.add_split("nlvr2", split, gold, hidden=hidden)
            policy = {"feedback": feedback} if feedback else {}
            catalog.set_policy("nlvr2", split, per_day=None, per_month=None, total=None, **policy)
            _publish_entries("nlvr2", split, "nlvr2", gold, users, len(MODELS))
            references.add_reference(
                "nlvr2", split, "Human", '{"all": {"accuracy": 96.2}}', "https://arxiv.org/abs/1811.00491"
            )
            references.add_reference(
                "nlvr2",
                split,
                '-Majority, "class"',
                '{"all": {"accuracy": 50.9, "consistency": 3.9}}',
                published_on="2019-07-28",
            )


@pytest.mark.parametrize("split", ["dev", "test-u", "test-h"])
@pytest.mark.parametrize("view", [None, "teams"])
def test_the_commands_csv_is_the_web_export_byte_for_byte(app, nlvr2_world, capsysbinary, split, view):
    printed = _cli_csv(capsysbinary, "nlvr2", split, *(["--view", view] if view else []))
    assert printed == _web_csv(app, "nlvr2", split, view)


def test_the_chosen_columns_in_their_order(app, nlvr2_world, capsysbinary):
    columns = ("unbalanced:accuracy", "all:consistency")
    chosen = [arg for key in columns for arg in ("--columns", key)]
    for split in ("dev", "test-u"):
        printed = _cli_csv(capsysbinary, "nlvr2", split, "--view", "teams", *chosen)
        assert printed == _web_csv(app, "nlvr2", split, "teams", columns)
        assert printed.startswith(b"rank,model,team,date,unbalanced:accuracy,unbalanced:accuracy ci_low,")
    # The table and JSON are the API's board, which has its default columns: a usage error, not a silent one.
    assert cli.main(["leaderboard", "nlvr2", "dev", "--columns", "all:accuracy"]) == 2
    assert b"--columns applies to --format csv, markdown and latex" in capsysbinary.readouterr().err
    assert cli.main(["leaderboard", "nlvr2", "dev", "--format", "csv", "--columns", "all:nope"]) == 1
    assert b"unknown column 'all:nope'" in capsysbinary.readouterr().err


def test_the_export_compared_has_what_the_issue_names(app, nlvr2_world, capsysbinary):
    """The comparison above is not between two empty files: the CSV has ranks and their intervals, figures,
    reference rows, defused formulas and quoted cells, and the blind test's released figures."""
    printed = _cli_csv(capsysbinary, "nlvr2", "dev")
    assert printed.endswith(b"\r\n") and printed.count(b"\r\n") == len(MODELS) + 2 + 1
    rows = list(csv.DictReader(io.StringIO(printed.decode("utf-8"), newline="")))
    assert [row["type"] for row in rows].count("reference") == 2
    assert {row["model"] for row in rows} >= {"'=SUM(A1:A9)", "'-1.5", "'@lab model", 'comma, "quoted"', "Human"}
    assert '\'-Majority, "class"' in {row["model"] for row in rows}
    assert "'=Rivals" in {row["team"] for row in rows} and "Anonymous" in {row["team"] for row in rows}
    entry = next(row for row in rows if row["type"] == "entry")
    assert entry["rank"] and entry["rank_low"] and entry["rank_high"]
    assert float(entry["all:accuracy ci_low"]) < float(entry["all:accuracy"]) < float(entry["all:accuracy ci_high"])
    released = list(csv.DictReader(io.StringIO(_cli_csv(capsysbinary, "nlvr2", "test-u").decode(), newline="")))
    assert any(row["type"] == "entry" and row["all:accuracy"] for row in released)


@pytest.mark.parametrize("task", sorted(TASK_TYPES))
def test_every_familys_board(app, served, capsysbinary, task):
    """Each registered family's board (its own columns, metrics and decimals) with entries and a reference row."""
    family = get_task(task)
    gold = family.synthetic_gold(N, seed=2)
    with app.app_context():
        catalog.add_benchmark("bench", task, f"A {task} benchmark")
        catalog.add_split("bench", "dev", gold)
        catalog.set_policy("bench", "dev", per_day=None, per_month=None, total=None)
        _publish_entries("bench", "dev", task, gold, _users(), 4)
        references.add_reference("bench", "dev", "=Baseline", f'{{"all": {{"{family.primary_metric}": 42.5}}}}')
    for view in (None, "teams"):
        printed = _cli_csv(capsysbinary, "bench", "dev", *(["--view", view] if view else []))
        assert printed == _web_csv(app, "bench", "dev", view), (task, view)
        assert b"'=Baseline" in printed and printed.count(b"\r\n") >= 3


def test_a_track_or_conditions_print_that_board_and_its_export(app, nlvr2_world, capsysbinary):
    """--track and --where ask the server for the board of the entries kept, ranked among themselves: the table
    says so, the JSON is the API's answer of that board and the CSV its export byte for byte; a condition the
    server refuses is its 400, named."""
    with app.app_context():
        first = db.session.scalars(
            select(Submission.id).where(Submission.published_at.is_not(None)).order_by(Submission.id)
        ).first()
        submissions.verify(None, first, "Reran the released code", "https://example.org/run", via="cli")
    printed = _cli_csv(capsysbinary, "nlvr2", "dev", "--track", "verified")
    web = app.test_client().get("/leaderboards/nlvr2/dev/export.csv?track=verified").get_data()
    assert printed == web and len(printed.splitlines()) == 1 + 1 + 2  # the header, one entry, two references
    assert cli.main(["leaderboard", "nlvr2", "dev", "--track", "verified"]) == 0
    table = capsysbinary.readouterr().out.decode()
    assert "(only verified entries, ranked among themselves)" in table.splitlines()[0]
    assert cli.main(["leaderboard", "nlvr2", "dev", "--track", "verified", "--format", "json"]) == 0
    answer = json.loads(capsysbinary.readouterr().out)
    assert answer["track"] == "verified" and [e["rank"] for e in answer["entries"]] == [1]
    assert cli.main(["leaderboard", "nlvr2", "dev", "--where", "zero_shot:yes"]) == 1
    assert b"unknown field 'zero_shot'" in capsysbinary.readouterr().err
