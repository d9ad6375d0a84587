"""The audit log: the maintainers' state-changing commands are recorded (actor None, via "cli") in the same
transaction as the change; a command that fails records nothing; `record` itself never commits."""

from __future__ import annotations

import contextlib
import json

import pytest
from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import AuditEvent, Benchmark
from app.services.audit import audit_log
from app.services.errors import InvalidInput
from app.services.maintenance import maintainer_actions
from tests.support.files import write
from tests.support.splits import nlvr2_split

pytestmark = pytest.mark.postgres(
    reason=(
        "the audit event is written in the same transaction as the change: rollback on failure is the "
        "dialect's transaction behaviour"
    )
)


def _events(app) -> list[tuple[str, str, int | None, dict]]:
    with app.app_context():
        return [
            (e.action, e.target, e.actor_id, json.loads(e.details))
            for e in db.session.scalars(select(AuditEvent).order_by(AuditEvent.id))
        ]


def test_record_does_not_commit(app):
    with app.app_context():
        audit_log.record(None, "test.event", "somewhere", {"via": "cli"})
        assert db.session.new  # pending in the session
        db.session.rollback()
    assert _events(app) == []


def test_cli_commands_that_change_state_are_audited(app, runner, tmp_path):
    gold = nlvr2_split(runner, tmp_path, split="dev", n=120)
    ids = write(
        tmp_path,
        "ids.txt",
        b"\n".join(json.loads(line)["identifier"].encode() for line in gold.decode().splitlines()[:10]),
    )
    commands = [
        ["splits", "policy", "nlvr2", "dev", "--per-day", "3", "--feedback", "none", "--closed"],
        ["subsets", "add", "nlvr2", "dev", "ten", "--ids", ids],
        ["users", "create", "root@example.org", "--password", "long-password", "--admin"],
        ["users", "create", "someone@example.org", "--password", "long-password"],
        ["teams", "create", "Lab", "--member", "someone@example.org"],
        ["tokens", "create", "someone@example.org", "--name", "laptop"],
        [
            "references",
            "add",
            "nlvr2",
            "dev",
            "--name",
            "Human",
            "--scores",
            '{"all": {"accuracy": 96.1}}',
            "--source",
            "https://example.org/human",
        ],
    ]
    for args in commands:
        result = runner.invoke(args=args)
        assert result.exit_code == 0, (args, result.output)
    events = _events(app)
    assert [(action, target) for action, target, _, _ in events] == [
        ("benchmark.add", "benchmark nlvr2"),
        ("split.add", "nlvr2/dev"),
        ("split.policy", "nlvr2/dev"),
        ("subset.add", "nlvr2/dev"),
        ("user.create", "user root@example.org"),
        ("user.create", "user someone@example.org"),
        ("team.create", "team Lab"),
        ("token.create", "user someone@example.org"),
        ("reference.add", "nlvr2/dev"),
    ]
    assert all(actor is None and details["via"] == "cli" for _, _, actor, details in events)
    details = {action: d for action, _, _, d in events}
    assert details["split.policy"]["per_day"] == "unlimited → 3"
    assert details["split.policy"]["is_open"] == "open → closed"
    assert details["subset.add"]["subset"] == "ten"
    assert details["team.create"]["members"] == ["someone@example.org"]
    assert events[4][3]["admin"] is True and events[5][3]["admin"] is False
    text = json.dumps(events)
    assert "long-password" not in text  # never a password
    token_line = runner.invoke(args=["tokens", "create", "someone@example.org"]).output.strip().splitlines()[-1]
    assert token_line not in json.dumps(_events(app))  # nor a token


def test_failed_commands_record_nothing(app, runner, tmp_path):
    nlvr2_split(runner, tmp_path, split="dev", n=64)
    before = _events(app)
    bad_gold = write(tmp_path, "bad.json", b'{"identifier": "dev-1-0-0", "label": "True"}\nnot json\n')
    for args in (
        ["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "Again"],
        ["splits", "add", "nlvr2", "test", "--labels", bad_gold],
        ["splits", "policy", "nlvr2", "dev", "--per-day", "-1"],
        ["splits", "policy", "nlvr2", "nope", "--per-day", "1"],
        ["subsets", "add", "nlvr2", "dev", "x", "--ids", write(tmp_path, "ids.txt", b"no-such-id\n")],
        ["users", "create", "not-an-email", "--password", "long-password"],
        ["teams", "create", "", "--member", "nobody@example.org"],
    ):
        result = runner.invoke(args=args)
        assert result.exit_code == 2, (args, result.output)
    assert _events(app) == before


def test_use_case_failure_rolls_back_the_event(app):
    with app.app_context():
        with contextlib.suppress(InvalidInput):
            maintainer_actions.add_benchmark(None, "Bad Slug", "nlvr2", "X", via="cli")
        assert not db.session.new
        # The session is usable afterwards and holds neither the event nor the benchmark.
        maintainer_actions.add_benchmark(None, "good", "nlvr2", "Good", via="cli")
        assert db.session.scalar(select(Benchmark.slug)) == "good"
    assert [event[0] for event in _events(app)] == ["benchmark.add"]


def test_add_split_records_file_checksums_not_contents(app):
    gold = synthetic.nlvr2_gold(40, seed=2)
    with app.app_context():
        maintainer_actions.add_benchmark(None, "nlvr2", "nlvr2", "NLVR2")
        maintainer_actions.add_split(None, "nlvr2", "dev", gold, via="cli")
    _, _, _, details = _events(app)[-1]
    assert set(details["gold"]) == {"sha256", "bytes"}
    assert "identifier" not in json.dumps(details)
