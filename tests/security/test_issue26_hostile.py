"""Issue 26, hostile: readers never wait and never see an entry taken off the board."""

from __future__ import annotations

import pytest

from app import synthetic
from app.db import db
from app.services import catalog
from app.services.boards import board_snapshots
from app.services.intake import submissions
from app.services.jobs import queue, transport
from app.services.maintenance import maintainer_actions
from tests.support.submission_world import build_submission_world

NAMES = {1: "ZuluAlphaModel", 2: "ZuluBravoModel", 3: "ZuluCharlieModel"}


@pytest.fixture
def world(ctx):
    return build_submission_world()


def _publish(world, accuracy: float, seed: int):
    split = catalog.get_split("nlvr2", "dev")
    data = synthetic.predictions("nlvr2", world["gold"], accuracy, seed=seed)
    return submissions.store_scored(split, world["lab"], data, model_name=NAMES[seed], description="d", publish=True)


def _workers(app, monkeypatch) -> list:
    handed: list[queue.Queued] = []
    monkeypatch.setattr(transport, "defer", lambda job: handed.append(job) or True)
    app.config["JOB_QUEUE"] = "procrastinate"
    return handed


def test_probe_same_count_swap(world, app, monkeypatch):
    first, second = _publish(world, 0.7, 1), _publish(world, 0.8, 2)
    board_snapshots.snapshot(catalog.get_split("nlvr2", "dev"))
    _workers(app, monkeypatch)
    maintainer_actions.hide_entry(world["admin"], first.id, "dup")
    client = app.test_client()
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    assert NAMES[2] in page and NAMES[1] not in page
    maintainer_actions.unhide_entry(world["admin"], first.id)
    maintainer_actions.hide_entry(world["admin"], second.id, "dup")
    db.session.rollback()
    api = client.get("/api/v1/leaderboards/nlvr2/dev").json
    print("API", [e.get("model_name") for e in api["entries"]], api["updating_since"])
    page = client.get("/leaderboards/nlvr2/dev").get_data(as_text=True)
    print("HTML has 1:", NAMES[1] in page, "has 2:", NAMES[2] in page)
    assert NAMES[2] not in page
