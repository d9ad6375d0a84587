"""A hidden NLVR2 Test-U of 400 examples under `full` feedback with published entries from three teams (some
anonymous), and a reader of its board page: the world of the one-number tests (tests/service/test_one_number.py,
tests/client/test_board_output.py)."""

from __future__ import annotations

import json
import re

import numpy as np

from app import synthetic
from app.db import db
from app.models import Team
from app.services import catalog
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.people import accounts
from tests.support.users import make_user

N = 400
TEAMS = ("Lab", "Rivals", "Third")
# The board's default columns on an NLVR2 split: every metric on the whole split, then the bias subsets.
COLUMNS = ("all:accuracy", "all:consistency", "balanced:accuracy", "unbalanced:accuracy")
QUERY = "&".join(f"columns={key}" for key in COLUMNS)


def _file(rows: list[dict], wrong: set[int]) -> bytes:
    lines = []
    for i, row in enumerate(rows):
        right = row["label"].lower() == "true"
        lines.append(f"{row['identifier']},{(not right) if i in wrong else right}")
    return ("\n".join(lines) + "\n").encode()


def build(app, entries: int) -> dict:
    """The hidden `full` split with `entries` published entries (about a fifth to a half of each file wrong);
    returns {"ids": model -> submission id, "tokens": team -> API token, "team_of": submission id -> team}."""
    data = synthetic.nlvr2_gold(N, split="test", seed=5)
    rows = [json.loads(line) for line in data.decode().splitlines()]
    rng = np.random.default_rng(24)
    world: dict = {"ids": {}, "tokens": {}, "team_of": {}}
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-u", data, hidden=True, name="Test-U")
        catalog.set_policy("nlvr2", "test-u", feedback="full", per_day=None, per_month=None, total=None)
        users = {}
        for name in TEAMS:
            team = Team(name=name)
            db.session.add(team)
            db.session.commit()
            users[name] = make_user(f"{name.lower()}@example.org", team=team)
            world["tokens"][name] = accounts.create_token(users[name], "one number")[1]
        for i in range(entries):
            team = TEAMS[i % len(TEAMS)]
            wrong = set(rng.choice(N, size=int(rng.integers(40, 200)), replace=False).tolist())
            upload = Upload(_file(rows, wrong), model_name=f"model-{i:02d}", anonymous=i % 7 == 3)
            result = submissions.submit(users[team], None, "nlvr2", "test-u", upload)
            submissions.publish(users[team], result.id, description=f"entry {i}")
            world["ids"][f"model-{i:02d}"] = result.id
            world["team_of"][result.id] = team
    return world


_TAGS = re.compile(r"<[^>]+>")


def figure_and_interval(cell: str) -> tuple[str, str | None]:
    """'92.75 <span class="ci">91.52–93.81</span>' -> ('92.75', '91.52–93.81')."""
    interval = re.search(r'<span class="ci">(.*?)</span>', cell)
    head = cell.split("<span", 1)[0]
    return _TAGS.sub("", head).strip(), interval.group(1) if interval else None


def board_page(client) -> dict:
    """{(submission id, column key): (figure, interval or None)} as the board page writes them."""
    page = client.get(f"/leaderboards/nlvr2/test-u?{QUERY}").get_data(as_text=True)
    found = {}
    for sid, row in re.findall(r'<tr class="entry" data-submission-id="(\d+)">(.*?)</tr>', page, re.S):
        cells = re.findall(r'<td class="num[^"]*">(.*?)</td>', row, re.S)
        assert len(cells) == len(COLUMNS), row
        for key, cell in zip(COLUMNS, cells, strict=True):
            found[(int(sid), key)] = figure_and_interval(cell)
    return found
