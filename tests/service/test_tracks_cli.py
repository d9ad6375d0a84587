"""Tracks from the command line (issue 38): `flask tracks add/list/remove`, audited through the service (via
"cli"); a bad definition exits 2 with the service's message naming the field."""

from __future__ import annotations

import json

from sqlalchemy import select

from app.db import db
from app.models import AuditEvent
from app.services.catalog import tracks


def _benchmark_with_fields(runner) -> None:
    for args in (
        ["benchmarks", "add", "bench", "--task", "nlvr2", "--name", "Bench"],
        ["fields", "add", "bench", "zero_shot", "--label", "Zero-shot", "--type", "yesno", "--filter"],
        ["fields", "add", "bench", "parameters", "--label", "Parameters", "--type", "integer", "--filter"],
        ["fields", "add", "bench", "code", "--label", "Code", "--type", "url"],
    ):
        result = runner.invoke(args=args)
        assert result.exit_code == 0, result.output


def test_the_command_line_adds_lists_and_removes_tracks_audited(app, runner):
    _benchmark_with_fields(runner)
    added = runner.invoke(
        args=["tracks", "add", "bench", "small", "--label", "Under 1B parameters", "--where", "parameters<=1e9"]
    )
    assert added.exit_code == 0, added.output
    assert added.output == "added track small to bench: parameters<=1000000000\n"
    both = ["--where", "zero_shot:yes", "--where", "parameters < 1_000"]
    assert runner.invoke(args=["tracks", "add", "bench", "zero-shot", "--label", "Zero-shot", *both]).exit_code == 0
    assert runner.invoke(args=["tracks", "list", "bench"]).output.splitlines() == [
        "verified\tVerified\t(entries a maintainer verified; built in)",
        "small\tUnder 1B parameters\tparameters<=1000000000",
        "zero-shot\tZero-shot\tzero_shot:yes parameters<1000",
    ]
    removed = runner.invoke(args=["tracks", "remove", "bench", "small"])
    assert removed.exit_code == 0 and removed.output == "removed track small from bench\n"
    with app.app_context():
        assert [spec.name for spec in tracks.list_tracks("bench")] == ["zero-shot"]
        events = db.session.scalars(
            select(AuditEvent).where(AuditEvent.action.like("track.%")).order_by(AuditEvent.id)
        ).all()
        assert [event.action for event in events] == ["track.add", "track.add", "track.remove"]
        assert all(json.loads(event.details)["via"] == "cli" for event in events)


def test_a_bad_track_exits_2_naming_the_field_and_nothing_is_stored(app, runner):
    _benchmark_with_fields(runner)

    def add(*args: str):
        return runner.invoke(args=["tracks", "add", "bench", *args])

    refusals = {
        "unknown field 'size'": add("big", "--label", "Big", "--where", "size>=10"),
        "the field 'code' is not one a board filters by": add("coded", "--label", "Coded", "--where", "code:x"),
        "parameters <= needs a whole number": add("small", "--label", "Small", "--where", "parameters<=many"),
        "'zero_shot' is yesno, compared only with field:value": add("z", "--label", "Z", "--where", "zero_shot>1"),
        "name must be a lower-case letter": add("Small", "--label", "Small", "--where", "zero_shot:yes"),
        "'verified' is the built-in track": add("verified", "--label", "V", "--where", "zero_shot:yes"),
        "label is required": add("blank", "--label", " ", "--where", "zero_shot:yes"),
    }
    for said, result in refusals.items():
        assert result.exit_code == 2 and said in result.output, (said, result.output)
    assert add("z", "--label", "Z", "--where", "zero_shot:yes").exit_code == 0
    again = add("z", "--label", "Z", "--where", "zero_shot:no")
    assert again.exit_code == 2 and "has a track 'z' already" in again.output
    missing = runner.invoke(args=["tracks", "remove", "bench", "nope"])
    assert missing.exit_code == 2 and "bench has no track 'nope'" in missing.output
    used = runner.invoke(args=["fields", "remove", "bench", "zero_shot"])
    assert used.exit_code == 2 and "the tracks z filter by 'zero_shot'" in used.output
    assert runner.invoke(args=["tracks", "list", "nowhere"]).exit_code == 2
    with app.app_context():
        assert [(spec.name, spec.as_dict()["where"]) for spec in tracks.list_tracks("bench")] == [
            ("z", ["zero_shot:yes"])
        ]
