"""The console's benchmark page and its bundle (issue 37): the bundle shown and downloaded (no-store), a bundle
uploaded for a dry run that lists every change and changes nothing, then applied only as the archive reviewed
(audited via bundle-web), and every refusal re-showing the form with each problem named and nothing stored."""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import zipfile

import pytest
from sqlalchemy import func, select

from app.db import db
from app.evaluation import get_task
from app.models import AuditEvent, Benchmark, GoldVersion, Reference, Split
from app.services import catalog
from app.services.maintenance import bundles
from app.services.people import accounts
from app.web.console.benchmarks import _applied
from tests.support.browser import csrf_token, login

PASSWORD = "password123"
ADMIN, USER = "admin@example.org", "user@example.org"
PAGE = "/console/benchmarks/nb"


@pytest.fixture
def site(app):
    """NLVR2-typed benchmark `nb`: a public dev split and a hidden test-u (50 synthetic examples each); an admin
    and a user who is not one. Returns the benchmark's bundle as the console's download gives it."""
    nlvr2 = get_task("nlvr2")
    with app.app_context():
        catalog.add_benchmark("nb", "nlvr2", "New bench")
        catalog.add_split("nb", "dev", nlvr2.synthetic_gold(50, seed=1), name="Dev")
        catalog.add_split("nb", "test-u", nlvr2.synthetic_gold(50, seed=2, split="test"), hidden=True, name="Test-U")
        accounts.create_user(ADMIN, PASSWORD, admin=True)
        accounts.create_user(USER, PASSWORD)
        db.session.commit()
        _name, archive = bundles.bundle_archive("nb")
    return archive


# --- building archives ----------------------------------------------------------------------------------


def _entries(archive: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        return {name: opened.read(name) for name in opened.namelist()}


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _edited(archive: bytes, *edits: tuple[str, str], files: dict[str, bytes] | None = None) -> bytes:
    """The archive with benchmark.yaml's text edited (each (old, new) once) and files replaced, the YAML's
    sha256 of a replaced file following it."""
    entries = _entries(archive)
    text = entries["benchmark.yaml"].decode()
    for name, data in (files or {}).items():
        text = text.replace(hashlib.sha256(entries[name]).hexdigest(), hashlib.sha256(data).hexdigest())
        entries[name] = data
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    entries["benchmark.yaml"] = text.encode()
    return _zip(entries)


PER_DAY_7 = ("      per_day: 5\n", "      per_day: 7\n")  # test-u's policy (dev's per_day is none)


def _flipped(gold: bytes, count: int) -> bytes:
    rows = [json.loads(line) for line in gold.decode().splitlines()]
    for row in rows[:count]:
        row["label"] = "False" if row["label"] == "True" else "True"
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


# --- requests -------------------------------------------------------------------------------------------


def _as_admin(client) -> None:
    assert login(client, ADMIN, PASSWORD).status_code == 302


def _upload(client, path: str, archive: bytes, fields: dict | None = None, *, token: bool = True):
    data = {**(fields or {}), "archive": (io.BytesIO(archive), "bundle.zip")}
    if token:
        data["csrf_token"] = csrf_token(client, "/login")
    return client.post(path, data=data, content_type="multipart/form-data")


def _reviewed(page: str) -> str:
    """The digest the review page's apply form sends back (its hidden reviewed_sha256)."""
    (digest,) = re.findall(r'name="reviewed_sha256" type="hidden" value="([0-9a-f]{64})"', page)
    return digest


def _apply(client, archive: bytes, reviewed: str, reason: str = "", **kwargs):
    return _upload(client, "/console/bundles/apply", archive, {"reviewed_sha256": reviewed, "reason": reason}, **kwargs)


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def _state(app) -> tuple:
    """What the catalog holds, in numbers, and test-u's daily quota."""
    with app.app_context():
        counts = tuple(
            db.session.scalar(select(func.count()).select_from(model))
            for model in (Benchmark, Split, Reference, GoldVersion, AuditEvent)
        )
        per_day = db.session.scalar(select(Split.per_day).where(Split.slug == "test-u"))
        return (*counts, per_day)


def _bundle_events(app) -> list[AuditEvent]:
    with app.app_context():
        events = [e for e in db.session.scalars(select(AuditEvent)) if json.loads(e.details).get("via") == "bundle-web"]
        db.session.expunge_all()
        return events


# --- tests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["anonymous", "user"])
def test_every_bundle_route_turns_away_who_is_not_an_admin(app, client, site, role):
    if role == "user":
        assert login(client, USER, PASSWORD).status_code == 302
    before = _state(app)
    edited = _edited(site, PER_DAY_7)
    answers = [
        client.get(PAGE),
        client.get(PAGE + "/bundle.zip"),
        client.get("/console/bundles/new"),
        _upload(client, PAGE + "/bundle", edited),
        _upload(client, "/console/bundles/new", edited),
        _apply(client, edited, hashlib.sha256(edited).hexdigest()),
    ]
    for response in answers:
        if role == "anonymous":
            assert response.status_code == 302 and "/login" in response.headers["Location"]
        else:
            assert response.status_code == 403
        assert b"PK\x03\x04" not in response.data  # no archive, nothing of a gold file
    assert _state(app) == before


def test_the_benchmark_page_shows_its_splits_and_its_bundle(app, client, site):
    _as_admin(client)
    response = client.get(PAGE)
    assert response.status_code == 200
    page = _text(response)
    with app.app_context():
        yaml = bundles.bundle_text("nb")
    assert "New bench" in page and "nlvr2" in page
    assert yaml in page  # benchmark.yaml as its export writes it
    assert 'href="/console/splits/nb/dev"' in page and 'href="/console/splits/nb/test-u"' in page
    assert 'href="/console/benchmarks/nb/bundle.zip"' in page
    assert 'name="csrf_token"' in page and 'type="file"' in page
    # Linked from the console's index and from each split page.
    assert 'href="/console/benchmarks/nb"' in _text(client.get("/console/"))
    assert 'href="/console/bundles/new"' in _text(client.get("/console/"))
    assert 'href="/console/benchmarks/nb"' in _text(client.get("/console/splits/nb/test-u"))
    assert client.get("/console/benchmarks/no-such").status_code == 404


def test_the_bundle_downloads_uncached_and_uploaded_back_changes_nothing(app, client, site):
    _as_admin(client)
    response = client.get(PAGE + "/bundle.zip")
    assert response.status_code == 200
    assert response.mimetype == "application/zip"
    assert response.headers["Content-Disposition"] == 'attachment; filename="nb-bundle.zip"'
    assert response.headers["Cache-Control"] == "no-store"
    assert "ETag" not in response.headers
    assert response.data == site
    before = _state(app)
    review = _upload(client, PAGE + "/bundle", response.data)
    assert review.status_code == 200
    page = _text(review)
    assert "nb: nothing to change" in page
    assert 'action="/console/bundles/apply"' not in page  # nothing to apply
    assert _state(app) == before


def test_a_dry_run_lists_the_changes_and_changes_nothing_then_applying_the_same_file_makes_them(app, client, site):
    _as_admin(client)
    edited = _edited(
        site,
        PER_DAY_7,
        ("    references: []\n", "    references:\n      - name: Human\n        scores: {all: {accuracy: 96.2}}\n"),
    )
    before = _state(app)
    review = _upload(client, PAGE + "/bundle", edited)
    assert review.status_code == 200, _text(review)[:2000]
    page = _text(review)
    digest = hashlib.sha256(edited).hexdigest()
    # Every change as the CLI prints it (target: summary), the archive's digest, and the apply form holding it.
    assert "nb/test-u: policy: per_day 7" in re.sub(r"<[^>]+>", "", page)
    assert "nb/dev: reference 'Human' added" in re.sub(r"<[^>]+>", "", page)
    assert digest in page and _reviewed(page) == digest
    assert "A gold file changes" not in page  # no label correction: no reason asked for
    assert _state(app) == before  # a dry run stores nothing, not even an audit event

    applied = _apply(client, edited, digest)
    assert applied.status_code == 303 and applied.headers["Location"].endswith(PAGE)
    assert _state(app)[-1] == 7
    landing = _text(client.get(PAGE))
    assert (
        "Applied the bundle of nb (2 changes): nb/dev: reference 'Human' added; nb/test-u: policy: per_day 7."
        in landing
    )
    events = _bundle_events(app)
    assert sorted((e.action, e.target) for e in events) == [("reference.add", "nb/dev"), ("split.policy", "nb/test-u")]
    assert "bundle-web" in _text(client.get("/console/audit"))


def test_applying_another_file_than_the_one_reviewed_is_refused_and_changes_nothing(app, client, site):
    _as_admin(client)
    reviewed = _edited(site, PER_DAY_7)
    other = _edited(site, ("      per_day: 5\n", "      per_day: 70\n"))
    _upload(client, PAGE + "/bundle", reviewed)
    before = _state(app)
    response = _apply(client, other, hashlib.sha256(reviewed).hexdigest())
    assert response.status_code == 409
    page = _text(response)
    assert "is not the one whose dry run was reviewed" in page
    assert 'action="/console/bundles/apply"' in page and 'action="/console/bundles/new"' in page  # the forms again
    assert _state(app) == before


def test_a_bad_bundle_is_refused_with_every_problem_and_its_line(app, client, site):
    _as_admin(client)
    entries = _entries(site)
    entries["splits/dev/labels.jsonl"] += b"\n"  # its sha256 no longer the one written
    text = entries["benchmark.yaml"].decode().replace("      per_day: 5\n", "      per_dey: 5\n", 1)
    entries["benchmark.yaml"] = text.encode()
    before = _state(app)
    response = _upload(client, PAGE + "/bundle", _zip(entries))
    assert response.status_code == 422
    page = _text(response)
    problems = re.findall(r"<li>(.*?)</li>", page.split('class="problems"')[1].split("</ul>")[0])
    assert len(problems) >= 2
    lines = text.splitlines()
    assert any(
        p.startswith("splits[1].policy")
        and "per_dey" in p
        and f"(benchmark.yaml:{lines.index('      per_dey: 5') + 1})" in p
        for p in problems
    ), problems
    sha_line = next(i for i, line in enumerate(lines, 1) if "sha256:" in line)
    assert any(p.startswith("splits[0].labels.sha256") and f"(benchmark.yaml:{sha_line})" in p for p in problems)
    assert 'type="file"' in page  # the form again
    assert _state(app) == before


def test_a_gold_change_is_shown_and_needs_a_reason_to_apply(app, client, site):
    _as_admin(client)
    gold = _entries(site)["splits/dev/labels.jsonl"]
    edited = _edited(site, files={"splits/dev/labels.jsonl": _flipped(gold, 3)})
    review = _upload(client, PAGE + "/bundle", edited)
    page = _text(review)
    assert "nb/dev: gold file corrected (version 2): 3 labels changed" in re.sub(r"<[^>]+>", "", page)
    assert "A gold file changes (a label correction): give the reason" in page
    before = _state(app)
    refused = _apply(client, edited, _reviewed(page))
    assert refused.status_code == 422
    assert "a label correction needs a reason" in _text(refused)
    assert _state(app) == before
    assert _apply(client, edited, _reviewed(page), reason="three labels fixed").status_code == 303
    assert _state(app)[3] == before[3] + 1  # a new gold version


def test_an_empty_or_non_zip_file_is_a_clear_422(app, client, site):
    _as_admin(client)
    before = _state(app)
    empty = _upload(client, "/console/bundles/new", b"")
    assert empty.status_code == 422 and "the file is empty" in _text(empty)
    text = _upload(client, "/console/bundles/new", b"format: 1\nslug: nb\n")
    assert text.status_code == 422 and "not a valid .zip file" in _text(text)
    assert _state(app) == before


def test_a_bundle_over_the_upload_limit_gets_the_usual_413(app, client, site):
    _as_admin(client)
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024
    response = _upload(client, PAGE + "/bundle", site + b"\0" * 100 * 1024)
    assert response.status_code == 413
    page = _text(response)
    assert "larger than this server accepts" in page
    assert "flask bundle apply" in page and "prediction file" not in page  # a hint for a maintainer's file


def test_a_form_without_its_csrf_token_is_refused(app, client, site):
    _as_admin(client)
    edited = _edited(site, PER_DAY_7)
    before = _state(app)
    assert _upload(client, PAGE + "/bundle", edited, token=False).status_code == 400
    assert _apply(client, edited, hashlib.sha256(edited).hexdigest(), token=False).status_code == 400
    assert _state(app) == before


def test_a_new_benchmark_from_a_bundle_and_a_bundle_of_another_benchmark_on_a_page(app, client, site):
    _as_admin(client)
    other = _edited(site, ("slug: nb\n", "slug: nb2\n"), ("name: New bench\n", "name: Second bench\n"))
    before = _state(app)
    wrong_page = _upload(client, PAGE + "/bundle", other)
    assert wrong_page.status_code == 422
    assert "describes the benchmark 'nb2', not 'nb'" in _text(wrong_page)
    assert client.get("/console/bundles/new").status_code == 200
    review = _upload(client, "/console/bundles/new", other)
    assert review.status_code == 200
    assert "nb2: benchmark added (nlvr2)" in re.sub(r"<[^>]+>", "", _text(review))
    assert _state(app) == before
    applied = _apply(client, other, _reviewed(_text(review)))
    assert applied.status_code == 303 and applied.headers["Location"].endswith("/console/benchmarks/nb2")
    with app.app_context():
        assert [s.slug for s in catalog.get_benchmark("nb2").splits] == ["dev", "test-u"]


def test_the_flash_after_applying_stays_small_whatever_the_changes_say():
    """The flash rides in the session cookie (a browser drops one over 4 KB): a change's summary can list every
    subset a split derives (hundreds for a field with many values), so each is cut short; the audit log has all."""
    subsets = ", ".join(f"category:value-{number}" for number in range(400))
    outcome = bundles.Outcome("nb", applied=True)
    for slug in ("a", "b", "c", "d", "e", "f"):
        outcome.add(f"nb/{slug}", f"split added: 400 examples, public; subsets: {subsets}")
    said = _applied(outcome)
    assert len(said.encode()) < 2000
    assert said.startswith("Applied the bundle of nb (6 changes): nb/a: split added: 400 examples, public; subsets:")
    assert said.endswith("; and 1 more (the audit log has each).")
