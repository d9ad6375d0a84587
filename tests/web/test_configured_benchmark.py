"""A benchmark of a configured task type (app/evaluation/configured), end to end: added with its config (bad ones
refused naming the key), a split from a synthetic gold file, an upload through the API scored as the declared
metrics say (counted by hand here), and its board page and API board showing the metrics' labels and n."""

from __future__ import annotations

import io
import json

import pytest

from app.db import db
from app.models import AuditEvent, Benchmark
from app.services import catalog
from app.services.errors import InvalidInput
from app.services.maintenance import label_audits, maintainer_actions
from app.services.people import accounts, teams
from tests.support.users import bearer, make_user

NLI3 = {
    "type": "classification",
    "label": "Three-way NLI",
    "unit_noun": "premises",
    "labels": ["entailment", "neutral", "contradiction"],
    "gold": {"format": "jsonl", "id": "pair_id", "label": "gold_label"},
    "predictions": {"format": "csv", "id": "pair_id", "label": "prediction"},
    "group_by": {"field": "premise"},
    "subset_fields": ["genre"],
}


def test_a_configured_benchmark_is_added_scored_and_shown_as_its_config_says(app, client):
    with app.app_context():
        catalog.add_benchmark("nli3", "classification", "Three-way NLI", task_config=NLI3)
        task = catalog.task_of(catalog.get_benchmark("nli3"))
        gold = task.synthetic_gold(12, seed=3)  # premises g0, g1, g2: four pairs each, in that order
        catalog.add_split("nli3", "dev", gold, name="Dev")
        member = make_user("member@example.org")
        teams.create_team("Lab", member)
        token = accounts.create_token(member, "tests")[1]
        records = [json.loads(line) for line in gold.decode().splitlines()]
    # Right on the first nine pairs, wrong on the last three: 9 of 12 right; premises g0 and g1 whole, g2 not.
    rows = ["pair_id,prediction"]
    for number, record in enumerate(records):
        label = record["gold_label"]
        wrong = NLI3["labels"][(NLI3["labels"].index(label) + 1) % 3]
        rows.append(f"{record['pair_id']},{(label if number < 9 else wrong).upper()}")
    upload = ("\n".join(rows) + "\n").encode()
    created = client.post(
        "/api/v1/submissions",
        data={"benchmark": "nli3", "split": "dev", "model_name": "Reader", "file": (io.BytesIO(upload), "p.csv")},
        headers=bearer(token),
        content_type="multipart/form-data",
    )
    assert created.status_code == 201, created.json
    scores = created.json["scores"]
    assert scores["all"] == {"accuracy": 75.0, "consistency": pytest.approx(200 / 3)}
    genres = {record["genre"] for record in records}
    for genre in genres:
        members = [n for n, record in enumerate(records) if record["genre"] == genre]
        right = sum(1 for n in members if n < 9)
        assert scores[f"genre:{genre}"] == {"accuracy": pytest.approx(100 * right / len(members))}
    published = client.post(
        f"/api/v1/submissions/{created.json['id']}/publish", headers=bearer(token), json={"description": "A reader."}
    )
    assert published.status_code == 200, published.json

    board = client.get("/api/v1/leaderboards/nli3/dev").json
    [entry] = board["entries"]
    assert entry["model_name"] == "Reader" and entry["scores"]["all"]["accuracy"]["value"] == 75.0
    columns = {(column["subset"], column["metric"]): column for column in board["columns"]}
    accuracy, consistency = columns["all", "accuracy"], columns["all", "consistency"]
    assert (accuracy["label"], accuracy["examples"], accuracy["counts"]) == ("Accuracy", 12, "examples")
    assert (consistency["label"], consistency["examples"], consistency["counts"]) == ("Consistency", 3, "premises")

    with app.app_context():  # a label audit votes over the config's vocabulary, under the gold key's name
        report = label_audits.audit_labels("nli3", "dev", 3)
        assert report.submissions == 1 and list(report.gold_accuracy) == ["gold_label"]
        assert {row.gold for row in report.rows} <= set(NLI3["labels"])

    page = client.get("/leaderboards/nli3/dev")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Reader" in text and "75.0" in text and "66.7" in text and "Dev: 12 examples." in text
    assert "resamples whole premises" in text  # the unit noun the config gives its groups
    assert ">Accuracy</a>" in text and '<span class="n" title="examples">n = 12</span>' in text
    assert ">Consistency</a>" in text and '<span class="n" title="premises">n = 3</span>' in text
    # How to submit: the file as the config declares it, and a sample file the task reads.
    assert "CSV, one line per example: pair_id,prediction with the prediction one of entailment, neutral" in text
    sample = client.get("/leaderboards/nli3/dev/sample.csv")
    assert sample.status_code == 200 and sample.data.splitlines()[0] == records[0]["pair_id"].encode() + b",entailment"
    with app.app_context():
        gold_set = task.read_gold(gold)
        assert task.score(gold_set, task.parse(sample.data, gold_set))["all"]["accuracy"] == pytest.approx(
            100 * sum(record["gold_label"] == "entailment" for record in records) / 12
        )


def test_a_bad_config_is_refused_naming_the_key_and_nothing_is_stored(app):
    with app.app_context():
        with pytest.raises(InvalidInput, match=r"task.labels: each label at most once"):
            catalog.add_benchmark("nli3", "classification", "NLI", task_config={**NLI3, "labels": ["a", "A"]})
        with pytest.raises(InvalidInput, match=r"task.type: 'classification' does not match the task type"):
            catalog.add_benchmark("nli3", "multiple-choice", "NLI", task_config=NLI3)
        with pytest.raises(InvalidInput, match=r"task type 'nlvr2' takes no config"):
            catalog.add_benchmark("nli3", "nlvr2", "NLI", task_config=NLI3)
        with pytest.raises(InvalidInput, match=r"a configured type .* needs its config"):
            catalog.add_benchmark("nli3", "classification", "NLI")
        assert db.session.scalar(db.select(db.func.count(Benchmark.id))) == 0
        benchmark = maintainer_actions.add_benchmark(None, "nli3", "classification", "NLI", task_config=NLI3, via="cli")
        assert json.loads(benchmark.task_config)["labels"] == NLI3["labels"]
        event = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "benchmark.add")).one()
        assert json.loads(event.details)["task_config"] == NLI3
