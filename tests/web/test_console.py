"""The maintainers' console with CSRF on: who may use it, what each action does, its audit event, and that
bad input is refused with the problem named and nothing half-stored."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pytest
from flask import url_for
from sqlalchemy import func, select

from app import synthetic
from app.db import db
from app.models import AuditEvent, Job, Reference, Score, Split, Submission, Subset, User
from app.services import catalog
from app.services.audit import audit_log
from app.services.boards import board_snapshots
from app.services.errors import InvalidInput
from app.services.intake import submissions
from app.services.jobs import queue
from app.services.people import accounts, teams
from tests.support.browser import login, post_form

PASSWORD = "password123"
ROLES = {"anonymous": None, "user": "user@example.org", "member": "member@example.org", "admin": "admin@example.org"}


@pytest.fixture
def site(app):
    """NLVR2 with a public dev split and a hidden Test-U held under `none`; a published entry on each,
    a rejected attempt; an admin, a team member and a user without a team."""
    dev_gold = synthetic.nlvr2_gold(240, seed=7)
    test_gold = synthetic.nlvr2_gold(240, split="test", seed=8)
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "dev", dev_gold, name="Dev")
        catalog.add_split("nlvr2", "test-u", test_gold, hidden=True, name="Test-U")
        catalog.set_policy("nlvr2", "test-u", feedback="none")
        accounts.create_user(ROLES["admin"], PASSWORD, admin=True)
        accounts.create_user(ROLES["user"], PASSWORD)
        member = accounts.create_user(ROLES["member"], PASSWORD)
        teams.create_team("Lab", creator=member)
        entry = submissions.submit(
            member,
            None,
            "nlvr2",
            "dev",
            submissions.Upload(
                data=synthetic.predictions("nlvr2", dev_gold, 0.8), model_name="Dev Model", description="d"
            ),
        ).submission
        submissions.publish(member, entry.id)
        hidden_entry = submissions.submit(
            member,
            None,
            "nlvr2",
            "test-u",
            submissions.Upload(
                data=synthetic.predictions("nlvr2", test_gold, 0.7), model_name="Test Model", description="d"
            ),
        ).submission
        submissions.publish(member, hidden_entry.id)
        with pytest.raises(InvalidInput):
            submissions.submit(
                member,
                None,
                "nlvr2",
                "dev",
                submissions.Upload(data=b"dev-0-0-0-0,true\nno-such-id,false\n", model_name="Broken"),
            )
        ids = {"entry": entry.id, "hidden_entry": hidden_entry.id}
        # Job 1, for the console's rerun: a board job as a worker would have it waiting (in-process, where this
        # test runs, a board's change queues none: its reader builds it).
        dev = catalog.get_split("nlvr2", "dev")
        queue.enqueue("board", board_snapshots.board_key(dev.id), {"split_id": dev.id})
        db.session.commit()
    return {"dev_gold": dev_gold, "test_gold": test_gold, **ids}


def _as(client, role: str) -> None:
    if ROLES[role]:
        response = login(client, ROLES[role], PASSWORD)
        assert response.status_code == 302, response.get_data(as_text=True)[:300]


def _events(app, action: str | None = None) -> list[AuditEvent]:
    with app.app_context():
        query = select(AuditEvent).order_by(AuditEvent.id)
        if action:
            query = query.where(AuditEvent.action == action)
        events = list(db.session.scalars(query))
        db.session.expunge_all()
        return events


def _split(app, slug="dev") -> Split:
    with app.app_context():
        split = db.session.scalar(select(Split).where(Split.slug == slug))
        db.session.expunge_all()
        return split


def _policy(**overrides) -> dict:
    return {
        "per_day": "",
        "per_month": "",
        "total": "",
        "rejected_per_day": "50",
        "feedback": "full",
        "is_open": "y",
        **overrides,
    }


def _ids_file(gold: bytes, count: int) -> bytes:
    ids = [json.loads(line)["identifier"] for line in gold.decode().splitlines()[:count]]
    return ("\n".join(ids) + "\n").encode()


def _upload(client, path: str, fields: dict, files: dict, form_page: str):
    from tests.support.browser import csrf_token

    data = {**fields, "csrf_token": csrf_token(client, form_page)}
    for name, (content, filename) in files.items():
        data[name] = (io.BytesIO(content), filename)
    return client.post(path, data=data, content_type="multipart/form-data")


def _text(response) -> str:
    return response.get_data(as_text=True)


# --- access ---------------------------------------------------------------------------------------------

# Every route of the console's views with a request an admin would make; {entry} is a published entry.
ADMIN_REQUESTS = [
    ("console.index", "GET", "/console/", None, 200),
    ("console.split", "GET", "/console/splits/nlvr2/dev", None, 200),
    ("console.policy", "POST", "/console/splits/nlvr2/dev/policy", "policy", 303),
    ("console.phase", "POST", "/console/splits/nlvr2/dev/phase", "phase", 303),
    ("console.reveal", "POST", "/console/splits/nlvr2/test-u/reveal", "button", 303),
    ("console.pin_default", "POST", "/console/splits/nlvr2/dev/default", "button", 303),
    ("console.add_subset", "POST", "/console/splits/nlvr2/dev/subsets", "subset", 303),
    ("console.add_reference", "POST", "/console/splits/nlvr2/dev/references", "reference", 303),
    ("console.remove_reference", "POST", "/console/splits/nlvr2/dev/references/{reference}/remove", "button", 303),
    ("console.new_split", "GET", "/console/splits/new", None, 200),
    ("console.new_split", "POST", "/console/splits/new", "split", 303),
    ("console.hide", "POST", "/console/entries/{entry}/hide", "hide", 303),
    ("console.unhide", "POST", "/console/entries/{entry}/unhide", "button", 303),
    ("console.verify", "POST", "/console/entries/{entry}/verify", "verify", 303),
    ("console.unverify", "POST", "/console/entries/{entry}/unverify", "unverify", 303),
    ("console.rejected", "GET", "/console/rejected", None, 200),
    ("console.audit_log", "GET", "/console/audit", None, 200),
    ("console.jobs", "GET", "/console/jobs", None, 200),
    ("console.rerun_job", "POST", "/console/jobs/1/rerun", "button", 303),
    ("console.dismiss_job", "POST", "/console/jobs/{failed_job}/dismiss", "button", 303),
    ("console.label_audit", "GET", "/console/splits/nlvr2/dev/labels?top=5", None, 200),
    ("console.sign_out_everywhere", "POST", "/console/users/sign-out", "sign-out", 303),
]


def _reference_row(app) -> int:
    """A reference row put straight in the table (no audit event: the matrix counts the request's)."""
    with app.app_context():
        split = db.session.scalar(select(Split).where(Split.slug == "dev"))
        row = Reference(split=split, name="Human", scores='{"all": {"accuracy": 96.1}}')
        db.session.add(row)
        db.session.commit()
        return row.id


def _failed_job(app) -> int:
    """A job that gave up, put straight in the table (no audit event)."""
    with app.app_context():
        job = Job(kind="rescore", key="rescore:1", args="{}", state="failed", attempts=4, error="OSError: disk full")
        db.session.add(job)
        db.session.commit()
        return job.id


def _verified_already(app, submission_id: int) -> None:
    """A verified mark put straight on the entry (no audit event: the matrix counts the request's)."""
    with app.app_context():
        entry = db.session.get(Submission, submission_id)
        entry.verified_at, entry.verified_note = entry.published_at, "checked"
        db.session.commit()


def _send(client, site, method: str, path: str, kind: str | None):
    reference = _reference_row(client.application) if "{reference}" in path else None
    failed_job = _failed_job(client.application) if "{failed_job}" in path else None
    path = path.format(entry=site["entry"], reference=reference, failed_job=failed_job)
    if method == "GET":
        return client.get(path)
    if kind == "policy":
        return post_form(client, path, _policy(per_day="4"), form_page="/login")
    if kind == "subset":
        return _upload(
            client, path, {"name": "first-forty"}, {"ids": (_ids_file(site["dev_gold"], 40), "ids.txt")}, "/login"
        )
    if kind == "split":
        return _upload(
            client,
            path,
            {"benchmark": "nlvr2", "slug": "test-p", "name": "Test-P"},
            {"gold": (synthetic.nlvr2_gold(120, split="test1", seed=3), "test1.json")},
            "/login",
        )
    if kind == "hide":
        return post_form(client, path, {"reason": "duplicate"}, form_page="/login")
    if kind == "verify":
        return post_form(client, path, {"note": "code and weights checked"}, form_page="/login")
    if kind == "unverify":
        _verified_already(client.application, site["entry"])
    if kind == "phase":
        fields = {"opens_at": "2026-12-01T00:00", "closes_at": "2027-01-31T23:59"}
        return post_form(client, path, fields, form_page="/login")
    if kind == "reference":
        fields = {"name": "Human", "scores": '{"all": {"accuracy": 96.1}}', "date": "2019-07-28"}
        return post_form(client, path, fields, form_page="/login")
    if kind == "sign-out":
        return post_form(client, path, {"email": ROLES["member"]}, form_page="/login")
    return post_form(client, path, {}, form_page="/login")


def test_the_matrix_names_every_console_route(app):
    """A new route of the console's views must join ADMIN_REQUESTS (and so the access matrix)."""
    covered = {(endpoint, method) for endpoint, method, *_ in ADMIN_REQUESTS}
    routes = {
        (rule.endpoint, method)
        for rule in app.url_map.iter_rules()
        if app.view_functions[rule.endpoint].__module__ == "app.web.console.views"
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert routes == covered


@pytest.mark.parametrize(
    "endpoint, method, path, kind, expected", ADMIN_REQUESTS, ids=[f"{m} {p}" for _, m, p, _, _ in ADMIN_REQUESTS]
)
@pytest.mark.parametrize("role", ["anonymous", "user", "member", "admin"])
def test_access_matrix(app, client, site, role, endpoint, method, path, kind, expected):
    _as(client, role)
    before = len(_events(app))
    response = _send(client, site, method, path, kind)
    if role == "anonymous":
        assert response.status_code == 302
        assert "/login" in response.headers["Location"]
    elif role in ("user", "member"):
        assert response.status_code == 403, _text(response)[:300]
        assert "Not allowed" in _text(response)
    else:
        assert response.status_code == expected, _text(response)[:2000]
    if role != "admin" or method == "GET":
        assert len(_events(app)) == before  # refused or read-only: nothing recorded, nothing changed
    else:
        assert len(_events(app)) == before + 1


def test_every_console_url_turns_away_non_admins(app, client, site):
    """Every rule under /console (also those of other console modules): log in or 403, before any work."""
    from tests.support.browser import csrf_token

    rules = [rule for rule in app.url_map.iter_rules() if rule.rule.startswith("/console")]
    assert rules

    def url(rule) -> str:
        # Any value will do for the path's parts: the refusal must come before the lookup.
        with app.test_request_context():
            return url_for(rule.endpoint, **dict.fromkeys(rule.arguments, site["entry"]))

    for role in ("anonymous", "user", "member"):
        client.delete_cookie("session")
        _as(client, role)
        token = csrf_token(client, "/login")
        for rule in rules:
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                data = {"csrf_token": token} if method == "POST" else None
                response = client.open(url(rule), method=method, data=data)
                if role == "anonymous":
                    assert response.status_code == 302 and "/login" in response.headers["Location"], (role, rule)
                else:
                    assert response.status_code == 403, (role, method, rule.rule, response.status_code)
    assert _events(app) == []


def test_post_without_csrf_token_is_refused(app, client, site):
    _as(client, "admin")
    response = client.post("/console/splits/nlvr2/dev/policy", data=_policy(per_day="1"))
    assert response.status_code == 400
    assert _split(app).per_day is None
    assert _events(app) == []


def test_console_link_only_for_admins(client, site):
    _as(client, "member")
    assert 'href="/console/"' not in _text(client.get("/"))
    client.delete_cookie("session")
    _as(client, "admin")
    assert 'href="/console/"' in _text(client.get("/"))


# --- overview -------------------------------------------------------------------------------------------


def test_overview_lists_splits_with_policies(app, client, site):
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=3, total=20, is_open=False)
    _as(client, "admin")
    page = _text(client.get("/console/"))
    row = re.search(r'<tr id="split-nlvr2-dev">(.*?)</tr>', page, re.S).group(1)
    assert "3 / day" in row and "unlimited / month" in row and "20 in total" in row
    assert "closed" in row and "public" in row
    hidden = re.search(r'<tr id="split-nlvr2-test-u">(.*?)</tr>', page, re.S).group(1)
    assert "hidden" in hidden and "none" in hidden and "held" in hidden and "open" in hidden


# --- policy ---------------------------------------------------------------------------------------------


def test_edit_policy_changes_split_and_is_audited(app, client, site):
    _as(client, "admin")
    response = post_form(
        client,
        "/console/splits/nlvr2/test-u/policy",
        _policy(per_day="2", per_month="10", total="", rejected_per_day="5", feedback="ladder", is_open=None),
        form_page="/console/splits/nlvr2/test-u",
    )
    assert response.status_code == 303
    split = _split(app, "test-u")
    assert (split.per_day, split.per_month, split.total, split.rejected_per_day) == (2, 10, None, 5)
    assert split.feedback == "ladder" and split.is_open is False
    [event] = _events(app, "split.policy")
    assert event.target == "nlvr2/test-u"
    assert event.actor_id == _user_id(app, "admin")
    details = json.loads(event.details)
    assert details == {
        "via": "web",
        "per_day": "5 → 2",
        "per_month": "20 → 10",  # a hidden split starts at 5 and 20
        "rejected_per_day": "50 → 5",
        "feedback": "none → ladder",
        "is_open": "open → closed",
    }
    assert "Saved the policy" in _text(client.get(response.headers["Location"]))


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("per_day", "-3", "per_day must be a whole number &gt;= 0"),
        ("total", "-1", "total must be a whole number &gt;= 0"),
        ("per_month", "ten", "&#39;ten&#39; is not a whole number"),
        ("rejected_per_day", "", "cannot be unlimited"),
        ("feedback", "loud", "Not a valid choice"),
    ],
)
def test_bad_policy_is_refused_with_the_problem_named(app, client, site, field, value, problem):
    _as(client, "admin")
    data = _policy(per_day="7")  # a valid change beside the bad one must not be stored either
    data[field] = value
    response = post_form(client, "/console/splits/nlvr2/dev/policy", data, form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 422
    assert problem in _text(response)
    split = _split(app)
    assert split.per_day is None and split.total is None and split.rejected_per_day == 50
    assert _events(app) == []


def test_policy_of_unknown_split_is_404(app, client, site):
    _as(client, "admin")
    response = post_form(client, "/console/splits/nlvr2/nope/policy", _policy(), form_page="/login")
    assert response.status_code == 404
    assert "unknown split &#39;nope&#39;" in _text(response)
    assert client.get("/console/splits/nope/dev").status_code == 404
    assert _events(app) == []


# --- reveal ---------------------------------------------------------------------------------------------


def test_reveal_publishes_held_scores_once(app, client, site):
    assert "Test Model" not in _text(client.get("/leaderboards/nlvr2/test-u"))
    version = _split(app, "test-u").board_version
    _as(client, "admin")
    response = post_form(client, "/console/splits/nlvr2/test-u/reveal", form_page="/console/splits/nlvr2/test-u")
    assert response.status_code == 303
    split = _split(app, "test-u")
    assert split.revealed_at is not None and split.board_version == version + 1
    [event] = _events(app, "split.reveal")
    assert event.target == "nlvr2/test-u" and json.loads(event.details) == {"via": "web"}
    assert "Test Model" in _text(client.get("/leaderboards/nlvr2/test-u"))

    again = post_form(client, "/console/splits/nlvr2/test-u/reveal", form_page="/console/splits/nlvr2/test-u")
    assert again.status_code == 409
    assert "already revealed" in _text(again)
    assert len(_events(app, "split.reveal")) == 1


def test_reveal_of_public_split_is_refused(app, client, site):
    _as(client, "admin")
    response = post_form(client, "/console/splits/nlvr2/dev/reveal", form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 409
    assert "public split" in _text(response)
    assert _split(app).revealed_at is None
    assert _events(app) == []


# --- adding a split -------------------------------------------------------------------------------------


def test_add_split_from_uploaded_gold(app, client, site):
    gold = synthetic.nlvr2_gold(160, split="test1", seed=3)
    _as(client, "admin")
    response = _upload(
        client,
        "/console/splits/new",
        {"benchmark": "nlvr2", "slug": "test-p", "name": "Test-P", "hidden": "y"},
        {"gold": (gold, "test1.json")},
        "/console/splits/new",
    )
    assert response.status_code == 303
    assert response.headers["Location"].endswith("/console/splits/nlvr2/test-p")
    page = _text(client.get(response.headers["Location"]))
    assert "Added split nlvr2/test-p (160 examples" in page
    split = _split(app, "test-p")
    assert split.hidden and split.name == "Test-P" and split.example_count == 160
    assert (Path(app.config["HIDDEN_LABELS_DIR"]) / split.gold_path).read_bytes() == gold
    [event] = _events(app, "split.add")
    details = json.loads(event.details)
    assert event.target == "nlvr2/test-p" and details["via"] == "web" and details["hidden"] is True
    assert details["gold"] == {"sha256": hashlib.sha256(gold).hexdigest(), "bytes": len(gold)}
    assert '"label"' not in event.details and "True" not in event.details  # a checksum, never the labels
    assert "Test-P" in _text(client.get("/leaderboards/nlvr2"))


def test_add_split_with_annotations_and_name_defaults(app, client, site, annotated_gold):
    gold, annotations = annotated_gold
    _as(client, "admin")
    response = _upload(
        client,
        "/console/splits/new",
        {"benchmark": "nlvr2", "slug": "annotated"},
        {"gold": (gold, "g.json"), "annotations": (annotations, "a.txt")},
        "/console/splits/new",
    )
    assert response.status_code == 303, _text(response)[:2000]
    split = _split(app, "annotated")
    assert split.name == "annotated"
    with app.app_context():
        names = set(db.session.scalars(select(Subset.name).where(Subset.split_id == split.id)))
    assert any(name.startswith("category:") for name in names)
    assert "annotations" in json.loads(_events(app, "split.add")[0].details)


def test_add_gqa_split_with_a_choices_file(app, client, site):
    """The form's choices file is checked against the gold file: a bad one is refused (422, its line named),
    a good one stored beside the gold and recorded by checksum in the audit log."""
    from app.evaluation import get_task

    gqa = get_task("gqa")
    gold = gqa.synthetic_gold(200, seed=2)
    choices = synthetic.gqa_choices(gold, seed=2)
    with app.app_context():
        catalog.add_benchmark("gqa", "gqa", "GQA")
    _as(client, "admin")
    first = next(qid for qid, question in json.loads(gold).items() if question["isBalanced"])
    broken = json.dumps({**json.loads(choices), first: {"valid": "yes", "plausible": []}}, indent=1).encode()
    refused = _upload(
        client,
        "/console/splits/new",
        {"benchmark": "gqa", "slug": "testdev"},
        {"gold": (gold, "dev.json"), "choices": (broken, "dev_choices.json")},
        "/console/splits/new",
    )
    assert refused.status_code == 422 and "invalid choices file" in _text(refused)
    assert re.search(rf"line \d+: question &#39;{first}&#39;: &#39;valid&#39; must be an array", _text(refused))
    assert _split(app, "testdev") is None
    response = _upload(
        client,
        "/console/splits/new",
        {"benchmark": "gqa", "slug": "testdev"},
        {"gold": (gold, "dev.json"), "choices": (choices, "dev_choices.json")},
        "/console/splits/new",
    )
    assert response.status_code == 303, _text(response)[:2000]
    split = _split(app, "testdev")
    assert split.choices_sha256 is not None
    details = json.loads(_events(app, "split.add")[-1].details)
    assert details["choices"] == {"sha256": hashlib.sha256(choices).hexdigest(), "bytes": len(choices)}


@pytest.fixture
def annotated_gold():
    gold = synthetic.nlvr2_gold(200, seed=11)
    return gold, synthetic.nlvr2_annotations(gold, seed=11)


def _gold_files(app) -> set:
    return {p for p in Path(app.config["HIDDEN_LABELS_DIR"]).rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "fields, files, status, problem",
    [
        (
            {"benchmark": "nlvr2", "slug": "bad"},
            {"gold": (b'{"identifier": "dev-1-0-0", "label": "True"}\nnot json\n', "bad.json")},
            422,
            "line 2",
        ),
        ({"benchmark": "nlvr2", "slug": "dev"}, {"gold": (synthetic.nlvr2_gold(16), "g.json")}, 409, "already exists"),
        (
            {"benchmark": "nlvr2", "slug": "Bad Slug!"},
            {"gold": (synthetic.nlvr2_gold(16), "g.json")},
            422,
            "must be lower-case letters",
        ),
        ({"benchmark": "nope", "slug": "x"}, {"gold": (synthetic.nlvr2_gold(16), "g.json")}, 422, "Not a valid choice"),
        ({"benchmark": "nlvr2", "slug": "x"}, {}, 422, "Choose the split&#39;s gold file"),
        ({"benchmark": "nlvr2", "slug": "x"}, {"gold": (b"\x00\x01\x02binary", "g.json")}, 422, "invalid gold"),
        (
            {"benchmark": "nlvr2", "slug": "x"},
            {
                "gold": (synthetic.nlvr2_gold(16), "g.json"),
                "annotations": (b"a sentence nobody wrote\n- negation\n", "a.txt"),
            },
            422,
            "invalid gold or annotation file",
        ),
    ],
)
def test_bad_split_upload_is_refused_and_nothing_stored(app, client, site, fields, files, status, problem):
    _as(client, "admin")
    splits_before = _count(app, Split)
    files_before = _gold_files(app)
    response = _upload(client, "/console/splits/new", fields, files, "/console/splits/new")
    assert response.status_code == status, _text(response)[:2000]
    assert problem in _text(response)
    assert _count(app, Split) == splits_before
    assert _gold_files(app) == files_before
    assert _events(app) == []


def _count(app, model) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model))


def _user_id(app, role: str) -> int:
    with app.app_context():
        return db.session.scalar(select(User.id).where(User.email == ROLES[role]))


# --- adding a subset ------------------------------------------------------------------------------------


def test_add_subset_rescores_and_says_so(app, client, site):
    _as(client, "admin")
    response = _upload(
        client,
        "/console/splits/nlvr2/dev/subsets",
        {"name": "first-forty"},
        {"ids": (_ids_file(site["dev_gold"], 40), "ids.txt")},
        "/console/splits/nlvr2/dev",
    )
    assert response.status_code == 303
    page = _text(client.get(response.headers["Location"]))
    assert "Added subset first-forty (40 examples); rescored 1 submission." in page
    with app.app_context():
        scores = db.session.scalars(
            select(Score).where(Score.submission_id == site["entry"], Score.subset == "first-forty")
        ).all()
        assert "accuracy" in {score.metric for score in scores}
    [event] = _events(app, "subset.add")
    details = json.loads(event.details)
    assert event.target == "nlvr2/dev" and details["subset"] == "first-forty" and details["ids"]["bytes"] > 0


@pytest.mark.parametrize(
    "name, ids, status, problem",
    [
        ("extra", b"dev-0-0-0-0\nno-such-example\n", 422, "line 2"),
        ("extra", b"\n\n", 422, "file is empty"),
        ("all", b"dev-0-0-0-0\n", 422, "not be &#39;all&#39;"),
        ("balanced", b"dev-0-0-0-0\n", 409, "already exists"),
        ("", b"dev-0-0-0-0\n", 422, "This field is required"),
    ],
)
def test_bad_subset_is_refused_and_nothing_stored(app, client, site, name, ids, status, problem):
    _as(client, "admin")
    subsets_before, scores_before = _count(app, Subset), _count(app, Score)
    response = _upload(
        client,
        "/console/splits/nlvr2/dev/subsets",
        {"name": name},
        {"ids": (ids, "ids.txt")},
        "/console/splits/nlvr2/dev",
    )
    assert response.status_code == status, _text(response)[:2000]
    assert problem in _text(response)
    assert (_count(app, Subset), _count(app, Score)) == (subsets_before, scores_before)
    assert _events(app) == []


# --- hiding entries -------------------------------------------------------------------------------------


def test_hide_and_unhide_entry_with_reason(app, client, site):
    _as(client, "admin")
    page = _text(client.get("/console/splits/nlvr2/dev"))
    assert f'id="entry-{site["entry"]}"' in page and "Dev Model" in page
    response = post_form(
        client,
        f"/console/entries/{site['entry']}/hide",
        {"reason": "duplicate of entry 3"},
        form_page="/console/splits/nlvr2/dev",
    )
    assert response.status_code == 303
    assert response.headers["Location"].endswith(f"/console/splits/nlvr2/dev#entry-{site['entry']}")
    page = _text(client.get(response.headers["Location"]))
    assert f"Hid entry {site['entry']} (Dev Model)." in page and "duplicate of entry 3" in page
    assert "Dev Model" not in _text(client.get("/leaderboards/nlvr2/dev"))
    [event] = _events(app, "entry.hide")
    assert event.target == f"submission {site['entry']}"
    assert json.loads(event.details) == {"via": "web", "reason": "duplicate of entry 3"}

    response = post_form(client, f"/console/entries/{site['entry']}/unhide", form_page="/console/splits/nlvr2/dev")
    assert response.status_code == 303
    assert "is shown again" in _text(client.get(response.headers["Location"]))
    assert "Dev Model" in _text(client.get("/leaderboards/nlvr2/dev"))
    assert [e.action for e in _events(app)] == ["entry.hide", "entry.unhide"]


def test_hide_needs_a_reason_and_a_real_entry(app, client, site):
    _as(client, "admin")
    response = post_form(
        client, f"/console/entries/{site['entry']}/hide", {"reason": "  "}, form_page="/console/splits/nlvr2/dev"
    )
    assert response.status_code == 422
    assert "Reason: This field is required" in _text(response)
    missing = post_form(client, "/console/entries/999999/hide", {"reason": "spam"}, form_page="/login")
    assert missing.status_code == 404
    assert "no submission 999999" in _text(missing)
    huge = post_form(client, f"/console/entries/{2**70}/unhide", form_page="/login")
    assert huge.status_code == 404
    with app.app_context():
        assert db.session.get(Submission, site["entry"]).hidden_at is None
    assert _events(app) == []


def test_verify_and_unverify_entry_from_the_split_page(app, client, site):
    _as(client, "admin")
    page = _text(client.get("/console/splits/nlvr2/dev"))
    assert f'action="/console/entries/{site["entry"]}/verify"' in page
    refused = post_form(
        client, f"/console/entries/{site['entry']}/verify", {"note": " "}, form_page="/console/splits/nlvr2/dev"
    )
    assert refused.status_code == 422 and "Note: This field is required" in _text(refused)
    bad_link = post_form(
        client,
        f"/console/entries/{site['entry']}/verify",
        {"note": "ok", "url": "javascript:alert(1)"},
        form_page="/console/splits/nlvr2/dev",
    )
    assert bad_link.status_code == 422 and "(url)" in _text(bad_link)
    with app.app_context():
        rejected = db.session.scalar(select(Submission.id).where(Submission.status == "rejected"))
    unpublished = post_form(
        client, f"/console/entries/{rejected}/verify", {"note": "ok"}, form_page="/console/splits/nlvr2/dev"
    )
    assert unpublished.status_code == 409 and "not published" in _text(unpublished)
    assert _events(app) == []
    response = post_form(
        client,
        f"/console/entries/{site['entry']}/verify",
        {"note": "Reran the code", "url": "https://example.org/run"},
        form_page="/console/splits/nlvr2/dev",
    )
    assert response.status_code == 303
    page = _text(client.get(response.headers["Location"]))
    assert "is marked verified" in page and "Reran the code" in page
    assert f'action="/console/entries/{site["entry"]}/unverify"' in page
    assert "Reran the code" in _text(client.get("/leaderboards/nlvr2/dev"))
    response = post_form(client, f"/console/entries/{site['entry']}/unverify", form_page="/console/splits/nlvr2/dev")
    assert "no longer marked verified" in _text(client.get(response.headers["Location"]))
    events = _events(app)
    assert [(e.action, e.actor_id) for e in events] == [("entry.verify", _user_id(app, "admin"))] + [
        ("entry.unverify", _user_id(app, "admin"))
    ]
    assert json.loads(events[0].details) == {"via": "web", "note": "Reran the code", "url": "https://example.org/run"}


def test_hiding_from_the_submission_page_is_audited_too(app, client, site):
    _as(client, "admin")
    location = f"/submissions/{site['entry']}"
    assert post_form(client, f"{location}/hide", {"reason": "spam"}, form_page=location).status_code == 303
    [event] = _events(app, "entry.hide")
    assert event.actor_id == _user_id(app, "admin") and json.loads(event.details)["reason"] == "spam"


def test_team_written_fields_are_escaped(app, client, site):
    with app.app_context():
        member = db.session.scalar(select(User).where(User.email == ROLES["member"]))
        entry = submissions.submit(
            member,
            None,
            "nlvr2",
            "dev",
            submissions.Upload(
                data=synthetic.predictions("nlvr2", site["dev_gold"], 0.6, seed=4),
                model_name="<script>alert(1)</script>",
                description="d",
            ),
        ).submission
        submissions.publish(member, entry.id)
        submissions.hide(
            db.session.scalar(select(User).where(User.email == ROLES["admin"])),
            entry.id,
            "<img src=x onerror=alert(2)>",
        )
    _as(client, "admin")
    for path in ("/console/splits/nlvr2/dev", "/console/audit"):
        page = _text(client.get(path))
        assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in _text(client.get("/console/splits/nlvr2/dev"))


# --- rejected attempts and the audit log ----------------------------------------------------------------


def test_rejected_attempts_list(app, client, site):
    with app.app_context():
        stored = db.session.scalar(select(Submission).where(Submission.status == "rejected"))
        first = submissions.problems_of(stored)[0]["message"]
        count = len(submissions.problems_of(stored))
    _as(client, "admin")
    page = _text(client.get("/console/rejected"))
    row = re.search(r"<tbody>(.*?)</tbody>", page, re.S).group(1)
    assert "Lab" in row and "nlvr2/dev" in row and f">{count}</a>" in row
    assert first.replace("'", "&#39;") in row
    assert "Dev Model" not in row  # scored entries are not listed


def test_rejected_attempts_preview_is_bounded(app, client, site):
    with app.app_context():
        stored = db.session.scalar(select(Submission).where(Submission.status == "rejected"))
        stored.errors = json.dumps([{"line": 1, "message": "x" * 5000}])
        db.session.commit()
    _as(client, "admin")
    page = _text(client.get("/console/rejected"))
    assert "x" * 299 + "…" in page and "x" * 301 not in page


def test_audit_log_is_paginated_newest_first(app, client, site):
    with app.app_context():
        for number in range(60):
            audit_log.record(None, "test.event", f"target {number:02d}", {"via": "cli"})
        db.session.commit()
    _as(client, "admin")
    first = _text(client.get("/console/audit"))
    targets = re.findall(r"<td class=\"nowrap\">target (\d\d)</td>", first)
    assert targets == [f"{n:02d}" for n in range(59, 9, -1)]
    assert "Page 1 of 2" in first and "command line" in first and 'rel="next"' in first
    second = _text(client.get("/console/audit?page=2"))
    assert re.findall(r"<td class=\"nowrap\">target (\d\d)</td>", second) == [f"{n:02d}" for n in range(9, -1, -1)]
    assert 'rel="prev"' in second and 'rel="next"' not in second
    assert "Page 2 of 2" in _text(client.get("/console/audit?page=99"))
    assert "Page 1 of 2" in _text(client.get("/console/audit?page=abc"))


def test_audit_log_shows_actor_and_details(app, client, site):
    _as(client, "admin")
    post_form(client, "/console/splits/nlvr2/dev/policy", _policy(per_day="9"), form_page="/console/splits/nlvr2/dev")
    page = _text(client.get("/console/audit"))
    row = re.search(r"<tbody>(.*?)</tbody>", page, re.S).group(1)
    assert ROLES["admin"] in row and "split.policy" in row and "nlvr2/dev" in row
    assert "per_day: unlimited → 9" in row
