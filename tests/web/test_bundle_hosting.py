"""Issue 37's acceptance scenario: a new benchmark of a configured type (three-way classification, a hidden split
with a phase and a planned reveal, reference rows) hosted from one bundle with no Python written
(tests/support/bundles/nli3/, in the canonical form), taking uploads through the API, scored as its declared
metric says (counted by hand here), shown on its board, and exported back byte for byte."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import time_machine

from app.bundles import canonical_yaml, read_bundle
from app.services.maintenance import bundles
from app.services.people import accounts, teams
from tests.support.users import bearer, make_user

SOURCE = Path(__file__).resolve().parents[1] / "support" / "bundles" / "nli3"
LABELS = ("entailment", "neutral", "contradiction")
DURING = datetime(2026, 12, 10, 12, 0, tzinfo=UTC)  # the blind test's phase: 2026-11-01 to 2027-02-28


def _predictions(gold: bytes, wrong: set[int]) -> bytes:
    """A CSV with its header (the config says header: required), right except on the lines ``wrong``."""
    rows = ["id,label"]
    for number, line in enumerate(gold.decode().splitlines()):
        record = json.loads(line)
        label = record["label"] if number not in wrong else LABELS[(LABELS.index(record["label"]) + 1) % 3]
        rows.append(f"{record['id']},{label.upper()}")  # any case: the config says case: insensitive
    return ("\n".join(rows) + "\n").encode()


def test_a_configured_benchmark_is_hosted_from_one_bundle_scored_as_declared_and_exported_byte_for_byte(app):
    client = app.test_client()
    with app.app_context():
        outcome = bundles.apply_bundle(None, read_bundle(SOURCE))
        assert any(change.summary == "benchmark added (classification)" for change in outcome.changes)
        member = make_user("member@example.org")
        teams.create_team("Lab", member)
        token = accounts.create_token(member, "tests")[1]
    dev = (SOURCE / "splits/dev/labels.jsonl").read_bytes()
    # Wrong on lines 0 and 4: 28 of 30 right; premises dev-0 (lines 0-2) and dev-1 (3-5) not whole: 8 of 10.
    upload = _predictions(dev, {0, 4})
    with time_machine.travel(DURING, tick=False):
        created = client.post(
            "/api/v1/submissions",
            data={"benchmark": "nli3", "split": "dev", "model_name": "Reader", "file": (io.BytesIO(upload), "p.csv")},
            headers=bearer(token),
            content_type="multipart/form-data",
        )
        assert created.status_code == 201, created.json
        assert created.json["scores"]["all"] == {"accuracy": 28 / 30 * 100, "consistency": 80.0}
        records = [json.loads(line) for line in dev.decode().splitlines()]
        fiction = [n for n, record in enumerate(records) if record["genre"] == "fiction"]
        right = sum(1 for n in fiction if n not in {0, 4})
        assert created.json["scores"]["genre:fiction"] == {"accuracy": 100 * right / len(fiction)}
        published = client.post(
            f"/api/v1/submissions/{created.json['id']}/publish",
            headers=bearer(token),
            json={"description": "A reader."},
        )
        assert published.status_code == 200, published.json

        hidden = client.post(
            "/api/v1/submissions",
            data={
                "benchmark": "nli3",
                "split": "test-u",
                "model_name": "Reader",
                "file": (
                    io.BytesIO(_predictions((SOURCE / "splits/test-u/labels.jsonl").read_bytes(), set())),
                    "p.csv",
                ),
            },
            headers=bearer(token),
            content_type="multipart/form-data",
        )
        assert hidden.status_code == 201, hidden.json
        board = client.get("/api/v1/leaderboards/nli3/test-u").json
        assert board["scores_public"] is False and board["entries"] == []
        assert board["phase"]["text"] == "Open until 2027-02-28 23:59 UTC; scores to be revealed 2027-03-07 00:00 UTC"
        # The board shows the columns the bundle chose, in its order.
        keys = [column["key"] for column in client.get("/api/v1/leaderboards/nli3/dev").json["columns"]]
        assert keys == ["all:accuracy", "all:consistency", "genre:fiction:accuracy", "genre:news:accuracy"]
        page = client.get("/leaderboards/nli3/dev").get_data(as_text=True)
        assert "Reader" in page and "93.3" in page and "Majority class" in page
        # The bundle's track is a board of its own: Reader states no approach, so it keeps no entry.
        track = client.get("/api/v1/leaderboards/nli3/dev?track=zero-shot")
        assert track.status_code == 200 and track.json["entries"] == []
        assert (track.json["track"], track.json["where"]) == ("zero-shot", ["approach:zero-shot"])
        assert track.json["tracks"] == [{"name": "zero-shot", "label": "Zero-shot", "where": ["approach:zero-shot"]}]

    with app.app_context():
        bundle, files = bundles.export_bundle("nli3")
    assert canonical_yaml(bundle) == (SOURCE / "benchmark.yaml").read_bytes()
    on_disk = {str(path.relative_to(SOURCE)): path.read_bytes() for path in SOURCE.rglob("*") if path.is_file()}
    assert {"benchmark.yaml": canonical_yaml(bundle), **files} == on_disk
