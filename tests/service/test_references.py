"""Reference rows: `flask references add|list|remove`, validation (exit 2), and the board they change."""

from __future__ import annotations

import json

import pytest

from app.db import db
from app.models import AuditEvent, Reference
from app.services import catalog
from app.services.boards import leaderboards
from app.services.catalog import references
from app.services.errors import InvalidInput, NotFound
from tests.support.splits import nlvr2_split

HUMAN = '{"all": {"accuracy": 96.1, "consistency": 88}, "balanced": {"accuracy": 95.0}}'


def _add(runner, *args):
    return runner.invoke(args=["references", "add", *args])


def test_add_list_and_remove(app, runner, tmp_path):
    nlvr2_split(runner, tmp_path)
    with app.app_context():
        before = catalog.get_split("nlvr2", "dev").board_version
    result = _add(runner, "nlvr2", "dev", "--name", "Human", "--scores", HUMAN, "--source", "https://example.org/h")
    assert result.exit_code == 0, result.output
    assert "added reference" in result.output
    with app.app_context():
        [row] = db.session.scalars(db.select(Reference)).all()
        assert row.name == "Human" and row.source_url == "https://example.org/h"
        assert json.loads(row.scores) == {
            "all": {"accuracy": 96.1, "consistency": 88.0},
            "balanced": {"accuracy": 95.0},
        }
        split = catalog.get_split("nlvr2", "dev")
        assert split.board_version == before + 1  # the cached board is recomputed
        [board_row] = leaderboards.board("nlvr2", "dev").references
        assert board_row.name == "Human" and board_row.scores["all"]["accuracy"] == 96.1
        event = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "reference.add")).one()
        assert event.target == "nlvr2/dev" and event.actor_id is None
        row_id = row.id
    listed = runner.invoke(args=["references", "list", "nlvr2", "dev"])
    assert listed.exit_code == 0 and "Human" in listed.output and "https://example.org/h" in listed.output
    removed = runner.invoke(args=["references", "remove", "nlvr2", "dev", str(row_id)])
    assert removed.exit_code == 0, removed.output
    with app.app_context():
        assert leaderboards.board("nlvr2", "dev").references == []
    assert runner.invoke(args=["references", "remove", "nlvr2", "dev", str(row_id)]).exit_code == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scores", "not json"], "must be JSON"),
        (["--scores", "[1, 2]"], "non-empty JSON object"),
        (["--scores", "{}"], "non-empty JSON object"),
        (["--scores", '{"everything": {"accuracy": 50}}'], "unknown subset 'everything'"),
        (["--scores", '{"all": {"acc": 50}}'], "unknown metric 'acc'"),
        (["--scores", '{"balanced": {"consistency": 50}}'], "unknown metric 'consistency'"),
        (["--scores", '{"all": {"accuracy": 101}}'], "from 0 to 100"),
        (["--scores", '{"all": {"accuracy": -0.5}}'], "from 0 to 100"),
        (["--scores", '{"all": {"accuracy": "96"}}'], "from 0 to 100"),
        (["--scores", '{"all": {"accuracy": true}}'], "from 0 to 100"),
        (["--scores", '{"all": {"accuracy": NaN}}'], "from 0 to 100"),
        (["--scores", '{"all": 96}'], "must be an object"),
        (["--scores", HUMAN, "--source", "ftp://example.org/x"], "http:// or https://"),
        (["--scores", HUMAN, "--source", "javascript:alert(1)"], "http:// or https://"),
    ],
)
def test_bad_input_exits_2_with_the_problem_named(app, runner, tmp_path, args, message):
    nlvr2_split(runner, tmp_path)
    result = _add(runner, "nlvr2", "dev", "--name", "Human", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    with app.app_context():
        assert db.session.scalars(db.select(Reference)).all() == []


@pytest.mark.parametrize(
    "target, message",
    [
        (["nope", "dev"], "unknown benchmark 'nope'"),
        (["nlvr2", "nope"], "unknown split 'nope'"),
    ],
)
def test_unknown_benchmark_or_split_exits_2(runner, tmp_path, target, message):
    nlvr2_split(runner, tmp_path)
    result = _add(runner, *target, "--name", "Human", "--scores", HUMAN)
    assert result.exit_code == 2 and message in result.output


def test_missing_options_and_empty_name(runner, tmp_path):
    nlvr2_split(runner, tmp_path)
    assert _add(runner, "nlvr2", "dev", "--name", "Human").exit_code == 2  # --scores is required
    result = _add(runner, "nlvr2", "dev", "--name", "  ", "--scores", HUMAN)
    assert result.exit_code == 2 and "name is required" in result.output


def test_vcr_metrics_are_checked_against_the_task(ctx):
    from app import synthetic

    catalog.add_benchmark("vcr", "vcr", "VCR")
    catalog.add_split("vcr", "val", synthetic.vcr_gold(40, seed=1), subset_field="region")
    references.add_reference("vcr", "val", "Human", '{"all": {"q_a": 91, "qa_r": 93, "q_ar": 85}}')
    with pytest.raises(InvalidInput, match="unknown metric 'accuracy'"):
        references.add_reference("vcr", "val", "Bad", '{"all": {"accuracy": 50}}')
    references.add_reference("vcr", "val", "West", '{"region:west": {"q_ar": 80}}')
    with pytest.raises(NotFound):
        references.remove_reference("vcr", "val", 999)
