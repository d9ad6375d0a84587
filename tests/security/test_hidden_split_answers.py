"""A hidden split of each of issue 25's families (VQA v2, GQA, A-OKVQA, Winoground, NLVR2 contrast sets) tells
nobody its answers: its pages, answers and exports, as its own team, another team and a visitor, show no gold
answer, no label beside its id and no per-question result."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from app.evaluation import get_task
from app.evaluation.gold import GoldSet
from app.services import catalog
from app.services.people import accounts, teams
from tests.security.leaks import LeakDetector
from tests.support.browser import login
from tests.support.new_families import FAMILIES, JSON_FAMILIES, upload
from tests.support.users import PASSWORD, bearer, make_user


def _marked_gold(family: str) -> tuple[bytes, list[str]]:
    """A synthetic gold file whose answers are marker words that appear nowhere else (per question), and the
    markers."""
    task = get_task(family)
    document = json.loads(task.synthetic_gold(60, seed=3))
    markers: list[str] = []
    if family == "vqa-v2":
        for i, annotation in enumerate(document["annotations"]):
            markers.append(f"zqxmark{i}")
            for human in annotation["answers"][:6]:
                human["answer"] = markers[-1]
    elif family == "gqa":
        for i, question in enumerate(document.values()):
            markers.append(f"zqxmark{i}")
            question["answer"] = markers[-1]
    else:
        for i, question in enumerate(document):
            markers.append(f"zqxmark{i}")
            question["choices"][question["correct_choice_idx"]] = markers[-1]
            question["direct_answers"] = [f"zqxdirect{i}"] * 10
            markers.append(f"zqxdirect{i}")
    return json.dumps(document, indent=1).encode(), markers


def _answers(family: str, gold: GoldSet, valid: bytes, markers: list[str]) -> bytes:
    """A file right on every other question (the marker, the team's own answer) and wrong on the rest."""
    if family == "a-okvqa":
        entries = {
            qid: {"multiple_choice": markers[2 * i] if i % 2 else "nope", "direct_answer": "nope"}
            for i, qid in enumerate(gold.ids.tolist())
        }
        return json.dumps(entries).encode()
    key, answer = ("question_id", "answer") if family == "vqa-v2" else ("questionId", "prediction")
    entries = json.loads(valid)
    for i, entry in enumerate(entries):
        entry[answer] = markers[i] if i % 2 else "nope"
    assert [str(entry[key]) for entry in entries] == gold.ids.tolist()
    return json.dumps(entries).encode()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_hidden_split_shows_nobody_its_answers_or_per_question_results(app, client, family):
    """The pages, answers and exports of a hidden split under the Ladder, as its team, another team and a visitor:
    no gold answer (marker words only the gold file holds, JSON families), no identifier beside its label (NLVR2
    contrast sets; Winoground has no label), no run of per-question results. tests/security/test_leakage.py
    crawls an NLVR2 world alone."""
    task = get_task(family)
    if family in JSON_FAMILIES:
        gold_bytes, markers = _marked_gold(family)
    else:
        gold_bytes, markers = task.synthetic_gold(60, seed=3), []
    with app.app_context():
        catalog.add_benchmark("b", family, "B")
        catalog.add_split("b", "test", gold_bytes, hidden=True, name="Test")
        gold = task.read_gold(gold_bytes)
        owner, other = make_user("owner@example.org"), make_user("other@example.org")
        teams.create_team("Lab", owner)
        teams.create_team("Rivals", other)
        tokens = {"owner": accounts.create_token(owner, "t")[1], "other": accounts.create_token(other, "t")[1]}
    if family in JSON_FAMILIES:
        data = _answers(family, gold, task.sample(gold), markers)
        second = data.replace(b"nope", b"nah", 3)
    else:
        data, second = (task.synthetic_predictions(gold_bytes, share, seed=1) for share in (0.6, 0.7))
    answers = [upload(client, tokens["owner"], body, task.file_suffix) for body in (data, second, data[:-9])]
    assert [answer.status_code for answer in answers] == [201, 201, 422]
    assert set(answers[0].json["scores"]) == {"all"}  # the Ladder: one figure
    sid = answers[0].json["id"]
    paths = [
        f"/api/v1/submissions/{sid}",
        "/api/v1/submissions",
        f"/submissions/{sid}",
        "/submissions",
        "/leaderboards/b/test",
        "/api/v1/leaderboards/b/test",
        "/leaderboards/b",
        "/leaderboards/b/models",
        f"/leaderboards/b/test/sample.{task.file_suffix}",
        *(f"/leaderboards/b/test/export.{fmt}" for fmt in ("csv", "json", "md", "tex")),
    ]
    bodies = [answer.get_data(as_text=True) for answer in answers]
    statuses = {}
    for role in ("owner", "other", None):
        browser = app.test_client()
        if role:
            assert login(browser, f"{role}@example.org", PASSWORD).status_code == 302
        for path in paths:
            response = browser.get(path, headers=bearer(tokens[role]) if role and "/api/" in path else {})
            statuses[(role, path)] = response.status_code
            bodies.append(response.get_data(as_text=True))
    assert max(statuses.values()) < 500
    assert statuses[("owner", f"/submissions/{sid}")] == statuses[("owner", f"/api/v1/submissions/{sid}")] == 200
    assert statuses[("other", f"/submissions/{sid}")] == statuses[("other", f"/api/v1/submissions/{sid}")] == 404
    marker = re.compile(r"zqx(?:mark|direct)\d+")
    assert not markers or marker.search(gold_bytes.decode())  # the check can fail
    # Identifiers and their labels where the family has a label of true or false (the detector needs one word).
    pairs = zip(gold.ids.tolist(), gold.labels.tolist(), strict=True) if family == "nlvr2-contrast" else ()
    labels = {"test": dict(pairs) or {"no-identifier-at-all": True}}
    lines = b"" if family in JSON_FAMILIES else gold_bytes  # a JSON-lines gold file's first lines, whole
    detector = LeakDetector(SimpleNamespace(labels=labels, gold={"test": lines}))  # type: ignore[arg-type]
    for body in bodies:
        assert not marker.search(body), marker.search(body)
        assert not detector.leaks(body), detector.leaks(body)[:3]
