"""No route, page, API answer, export, error message or log line carries a hidden split's gold labels or
per-example correctness to anyone but a maintainer; gold files are private and never served.

The crawler walks every GET route of the URL map (tests/security/crawler.py) as an anonymous visitor, a
member of another team, the owner and a maintainer, on the world of tests/support/security_world.py.
"""

from __future__ import annotations

import io
import json
import logging
import re
import stat
from pathlib import Path

import pytest
from sqlalchemy import select

from app import create_app
from app.db import db
from app.models import Split, Submission
from app.services.catalog import entry_fields, tracks
from app.services.storage import checksums
from app.settings import from_environment
from tests.security import crawler
from tests.security.leaks import LeakDetector
from tests.support.security_world import HIDDEN, ROLES, build

pytestmark = pytest.mark.postgres(
    reason=(
        "errors differ by dialect (PostgreSQL's messages quote values and abort the transaction): none may leak a label"
    )
)


@pytest.fixture
def world(app):
    return build(app)


@pytest.mark.one_backend
def test_the_detector_finds_what_it_looks_for(world):
    """The checks below can fail: each kind of leak, written as a page or a file would, is caught.

    On SQLite alone: no database error is raised here; the crawl (the next test) runs on both dialects."""
    detector = LeakDetector(world)
    rows = world.rows("test-none")
    identifier, label = rows[3]["identifier"], rows[3]["label"]
    for leak in (
        f"{identifier},{label}",
        f'{{"{identifier}": {label.lower()}}}',
        f"<tr><td>{identifier}</td><td>{label}</td></tr>",
        f'"identifier": "{identifier}", "label": "{label}"',
        json.dumps([True, False] * 20),
        "0110" * 10,
        ", ".join("1" if i % 3 else "0" for i in range(40)),
        world.gold["test-full"].decode().splitlines()[0],
    ):
        assert detector.leaks(f"<p>before</p>{leak}<p>after</p>"), leak
    # ...and an identifier beside something else is fine: the team's own (negated) line, or a message.
    assert not detector.leaks(world.negated_line("test-none", 3))
    assert not detector.leaks(f"line 6: invalid prediction 'maybe' for '{identifier}'; expected true or false")
    # A constant prediction for every identifier (a sample file) carries no label; a right label among them does.
    constant = "".join(f"{i},true\n" for i in world.labels["test-full"])
    assert not detector.leaks(constant)
    negative = next(i for i, label in world.labels["test-full"].items() if not label)
    assert detector.leaks(f"{negative},false\n")


def test_no_response_outside_the_admins_carries_labels_or_per_example_results(app, world, caplog):
    caplog.set_level(logging.DEBUG)
    detector = LeakDetector(world)
    urls = crawler.get_urls(app, world)
    covered = {endpoint for endpoint, _ in urls}
    get_rules = {rule.endpoint for rule in app.url_map.iter_rules() if "GET" in rule.methods}
    get_rules -= crawler.VENDORED_FILES  # a pinned package's bytes (tests/web/test_api_docs.py)
    assert covered == get_rules, f"no URL could be built for {sorted(get_rules - covered)}"
    # The crawl fetches a few submissions' files; these, of the hidden splits, are checked one by one below.
    for split in HIDDEN:
        for kind in ("published", "unpublished", "rejected"):
            sid = world.submissions[f"owner:{split}:{kind}"]
            for endpoint, url in (
                ("api_v1.submission_file", f"/api/v1/submissions/{sid}/file"),
                ("submissions.original_file", f"/submissions/{sid}/file"),
            ):
                if (endpoint, url) not in urls:
                    urls.append((endpoint, url))
    # Two entries compared and one entry's per-example results, on every split (issue 38): on a hidden one no
    # identifier at all, for any role, maintainers included.
    per_example_urls = _per_example_urls(world)
    urls += [entry for entry in per_example_urls if entry not in urls]
    # A track and an ad-hoc condition on every split's board (issue 38): a held board stays held, a counts-only
    # one shows counts, whichever entries are asked for.
    track_urls = _track_urls(app)
    urls += [entry for entry in track_urls if entry not in urls]

    problems, statuses, bodies = [], {}, {}
    for role in ROLES:
        for visit in crawler.crawl(app, world, role, urls):
            statuses[(role, visit.url)] = visit.status
            if (visit.endpoint, visit.url) in per_example_urls:
                bodies[(role, visit.url)] = visit.text
            assert visit.status < 500, f"{role} GET {visit.url} answered {visit.status}"
            if visit.endpoint in OWN_FILES and visit.status == 200 and role != "admin":
                # A team's own prediction file, byte for byte, holds labels only as far as the team's guesses do:
                # nothing it did not send. It must be its own, though.
                assert _own_upload(app, world, role, visit), f"{role} GET {visit.url}: another team's file"
                continue
            if visit.endpoint == "console.bundle_download" and visit.status == 200:
                # A benchmark's bundle holds its gold files whole, hidden ones too, by design (issue 37): for
                # maintainers alone (deflated, the text checks below would not see them, so it is said here).
                assert role == "admin", f"{role} GET {visit.url}: a bundle with gold files"
                continue
            found = detector.gold_bytes(visit.text) if role == "admin" else detector.leaks(visit.text)
            problems += [f"{role} GET {visit.url}: {leak}" for leak in found]
    for role, what, body in world.answers:
        problems += [f"{role} {what}: {leak}" for leak in detector.leaks(body)]
    for record in caplog.records:
        line = record.getMessage() + (record.exc_text or "")
        problems += [f"log {record.name}: {leak}" for leak in detector.leaks(line)]
    assert not problems, "\n".join(problems[:40])

    # The crawl saw the real pages, not only refusals: the owner's hidden submissions, the admin's console.
    for split in HIDDEN:
        for kind in ("published", "unpublished", "rejected"):
            sid = world.submissions[f"owner:{split}:{kind}"]
            assert statuses[("owner", f"/submissions/{sid}")] == 200
            assert statuses[("owner", f"/api/v1/submissions/{sid}")] == 200
            assert statuses[("other", f"/api/v1/submissions/{sid}")] == 404
            if kind != "rejected":  # a rejected file is not kept
                assert statuses[("owner", f"/api/v1/submissions/{sid}/file")] == 200
                assert statuses[("owner", f"/submissions/{sid}/file")] == 200
            assert statuses[("other", f"/api/v1/submissions/{sid}/file")] == 404
            assert statuses[("anonymous", f"/submissions/{sid}/file")] == 404
    assert statuses[("admin", "/console/")] == 200
    # Every hidden split's identifiers carry its prefix (hfull-, hladder-, hnone-): one search finds any of them.
    hidden_id = re.compile("|".join(rf"\b{prefix}-\d" for prefix, _ in HIDDEN.values()))
    for (role, url), text in bodies.items():
        named = hidden_id.search(text)
        assert named is None, f"{role} GET {url}: a hidden split's identifier at {named.start()}"
    for role in ROLES:  # the track boards answered (held, or their entries' released figures), never refused
        assert {statuses[(role, url)] for _, url in track_urls} == {200}, role
    for split in HIDDEN:  # the comparison itself answered (held, or the released figures), never an error
        pair = _pair(world, split)
        assert {statuses[(role, f"/compare?{pair}")] for role in ROLES} == {200}
        assert {statuses[(role, f"/compare.csv?{pair}")] for role in ROLES} == {404}
    assert statuses[("anonymous", f"/compare.csv?{_pair(world, 'dev')}")] == 200  # public: the ids are there
    assert statuses[("anonymous", "/leaderboards/nlvr2/test-full")] == 200
    # Maintainer-only pages that name gold labels (the label audit): the crawl reached them as a
    # maintainer, and nobody else got them.
    for split in HIDDEN:
        audit_page = f"/console/splits/nlvr2/{split}/labels"
        assert statuses[("admin", audit_page)] == 200
        assert {statuses.get((role, audit_page)) for role in ROLES if role != "admin"} <= {302, 403}


def _pair(world, split: str) -> str:
    return f"a={world.submissions[f'owner:{split}:published']}&b={world.submissions[f'other:{split}:published']}"


def _per_example_urls(world) -> list[tuple[str, str]]:
    """Every comparison and per-example file of the published entries of every split, with its endpoint."""
    urls = []
    for split in ("dev", *HIDDEN):
        pair = _pair(world, split)
        urls += [
            ("public.compare", f"/compare?{pair}"),
            ("public.compare_csv", f"/compare.csv?{pair}"),
            ("api_v1.compare", f"/api/v1/compare?{pair}"),
        ]
        for role in ("owner", "other"):
            sid = world.submissions[f"{role}:{split}:published"]
            urls += [
                ("submissions.example_results", f"/submissions/{sid}/examples.csv"),
                ("api_v1.example_results", f"/api/v1/submissions/{sid}/examples"),
            ]
    return urls


def _track_urls(app) -> list[tuple[str, str]]:
    """A filterable field, filled on every published entry, and a track over it; then every split's board, its
    API answer and exports for the track, an ad-hoc condition and the verified track, with their endpoints."""
    with app.app_context():
        entry_fields.add_field("nlvr2", entry_fields.checked_spec("zero_shot", "Zero-shot", "yesno", filterable=True))
        published = select(Submission).where(Submission.published_at.is_not(None))
        for n, submission in enumerate(db.session.scalars(published)):
            submission.fields = entry_fields.stored({"zero_shot": n % 2 == 0})
        db.session.commit()
        tracks.add_track("nlvr2", "zero-shot", "Zero-shot", ["zero_shot:yes"])
    urls = []
    for split in ("dev", *HIDDEN):
        for query in ("track=zero-shot", "where=zero_shot:no", "track=verified"):
            urls += [
                ("public.leaderboard", f"/leaderboards/nlvr2/{split}?{query}"),
                ("api_v1.leaderboard", f"/api/v1/leaderboards/nlvr2/{split}?{query}"),
            ]
            urls += [("public.export", f"/leaderboards/nlvr2/{split}/export.{fmt}?{query}") for fmt in ("csv", "json")]
    return urls


OWN_FILES = {"api_v1.submission_file", "submissions.original_file"}  # a submission's file as uploaded (issue 27)


def _own_upload(app, world, role: str, visit) -> bool:
    """Whether a file answered to a team's member is one of its team's uploads, byte for byte."""
    submission_id = int(visit.url.split("/submissions/")[1].split("/")[0])
    with app.app_context():
        submission = db.session.get(Submission, submission_id)
        return (
            submission is not None
            and submission.team_id == world.team_ids[role]
            and checksums.sha256(visit.body) == submission.file_sha256
        )


@pytest.mark.one_backend
def test_feedback_policies_hold_in_the_api_and_on_pages(app, world):
    """What a team reads back of its hidden submissions: `full` every score to its count, `ladder` one
    figure, `none` nothing; the same on the submission page.

    On SQLite alone: no database error is raised here; the crawl (the next test) runs on both dialects."""
    client = crawler.logged_in_client(app, "owner")
    headers = world.headers("owner")
    scores = {}
    for split in HIDDEN:
        sid = world.submissions[f"owner:{split}:unpublished"]
        scores[split] = client.get(f"/api/v1/submissions/{sid}", headers=headers).json["scores"]
    assert set(scores["test-full"]) >= {"all", "balanced", "unbalanced"}
    for metrics in scores["test-full"].values():
        for value in metrics.values():
            assert value == round(value, 1)  # 160 examples: tenths identify every count (see ladder.py)
    assert set(scores["test-ladder"]) == {"all"} and set(scores["test-ladder"]["all"]) == {"accuracy"}
    assert scores["test-none"] is None

    page = client.get(f"/submissions/{world.submissions['owner:test-ladder:unpublished']}").get_data(as_text=True)
    assert "Accuracy" in page and "Consistency" not in page and "balanced" not in page
    page = client.get(f"/submissions/{world.submissions['owner:test-none:unpublished']}").get_data(as_text=True)
    assert "held until" in page and "Accuracy" not in page
    listing = client.get("/api/v1/submissions", headers=headers).json["submissions"]
    assert all("scores" not in item for item in listing)


@pytest.mark.one_backend
def test_hidden_scores_stay_off_public_boards_and_exports_until_revealed(app, world):
    """On SQLite alone: no database error is raised here; the crawl (the next test) runs on both dialects."""
    client = app.test_client()
    for split in ("test-ladder", "test-none"):
        board = client.get(f"/api/v1/leaderboards/nlvr2/{split}").json
        assert board["entries"] == [] and board["scores_public"] is False
        for fmt in ("csv", "json", "md", "tex"):
            response = client.get(f"/leaderboards/nlvr2/{split}/export.{fmt}")
            assert response.status_code in (200, 404, 409)
            assert "owner model" not in response.get_data(as_text=True)


def test_upload_errors_name_lines_and_identifiers_but_never_a_label(app, world):
    detector = LeakDetector(world)
    client = crawler.logged_in_client(app, "owner")
    rows = world.rows("test-none")
    lines = [world.negated_line("test-none", i) for i in range(len(rows))]
    unknown = "hnone-9999-0-0"
    faulty = lines[:3] + [lines[1], f"{unknown},false", f"{rows[4]['identifier']},perhaps", "a,b,c"]
    api = client.post(
        "/api/v1/submissions",
        headers=world.headers("owner"),
        content_type="multipart/form-data",
        data={
            "benchmark": "nlvr2",
            "split": "test-none",
            "model_name": "m",
            "file": (io.BytesIO(("\n".join(faulty) + "\n").encode()), "p.csv"),
        },
    )
    assert api.status_code == 422
    messages = " ".join(detail["message"] for detail in api.json["details"])
    assert "line 4" in messages and rows[1]["identifier"] in messages  # the duplicate, by line and id
    assert unknown in messages and "line 6" in messages and "perhaps" in messages
    assert rows[10]["identifier"] in messages  # a missing identifier is named...
    assert not detector.leaks(api.get_data(as_text=True))  # ...but no label is
    page = client.get(f"/submissions/{world.submissions['owner:test-none:rejected']}").get_data(as_text=True)
    assert "line 5" in page and not detector.leaks(page)


@pytest.fixture
def shared_gold(monkeypatch):
    """Every split's parsed gold kept in a folder (these splits are under label_files.SHARE_FROM)."""
    from app.services.catalog import label_files

    monkeypatch.setattr(label_files, "SHARE_FROM", 0)


@pytest.mark.one_backend
def test_gold_files_are_private_and_never_served(shared_gold, app, world):
    """On SQLite alone: no database error is raised here; the crawl (the next test) runs on both dialects."""
    folder = Path(app.config["HIDDEN_LABELS_DIR"])
    files = [path for path in folder.rglob("*") if path.is_file()]
    # Each gold file, and beside it what it parses to (a folder of arrays, as private: label_files.parsed_folder).
    gold = [path for path in files if not path.parent.name.endswith(".parsed")]
    assert len(gold) == 1 + len(HIDDEN)
    assert len({path.parent for path in files} - {path.parent for path in gold}) == len(gold)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for path in [folder, *[p for p in folder.rglob("*") if p.is_dir()]]:
        if path != folder:
            assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    with app.app_context():
        relative = db.session.scalar(db.select(Split.gold_path).where(Split.slug == "test-none"))
    detector = LeakDetector(world)
    client = crawler.logged_in_client(app, "admin")
    name = Path(relative).name
    for path in (
        f"/static/{relative}",
        f"/static/{name}",
        f"/static/../hidden_labels/{relative}",
        f"/static/..%2Fhidden_labels%2F{relative.replace('/', '%2F')}",
        f"/hidden_labels/{relative}",
        f"/{relative}",
        f"/static/%2e%2e/%2e%2e/{relative}",
    ):
        response = client.get(path)
        assert response.status_code in (400, 404), (path, response.status_code)
        assert not detector.gold_bytes(response.get_data(as_text=True))


def test_the_default_labels_folder_is_outside_every_served_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("HIDDEN_LABELS_DIR", raising=False)
    labels = Path(from_environment(str(tmp_path))["HIDDEN_LABELS_DIR"]).resolve()
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": "sqlite://"})
    for served in (app.static_folder, app.template_folder):
        served = Path(served).resolve()
        assert served not in labels.parents and labels != served and labels not in served.parents
    # And git keeps the folder's contents (everything but its README and ignore file) out of the repository.
    ignore = (Path(__file__).resolve().parents[2] / "hidden_labels" / ".gitignore").read_text().split()
    assert "*" in ignore


@pytest.mark.one_backend
def test_logging_a_gold_set_shows_no_labels(app, world, caplog):
    """On SQLite alone: no database error is raised here; the crawl (the next test) runs on both dialects."""
    from app.services import catalog

    with app.app_context():
        gold = catalog.gold_for(catalog.get_split("nlvr2", "test-none"))
    logging.getLogger("app").warning("gold: %r / %s", gold, gold)
    text = caplog.text
    assert "GoldSet(" in text and not LeakDetector(world).leaks(text)
    assert "True" not in text and "False" not in text


def test_a_500_answer_carries_no_traceback_or_exception_text(app, caplog):
    """An unexpected error is logged for the maintainers; the answer is the plain error page or JSON."""
    app.config["PROPAGATE_EXCEPTIONS"] = False
    secret = "hnone-1-0-0,True"

    def boom():
        raise RuntimeError(f"exploded while reading {secret}")

    app.add_url_rule("/boom-for-test", "boom_page", boom)
    app.add_url_rule("/api/v1/boom-for-test", "boom_api", boom)
    client = app.test_client()
    for path in ("/boom-for-test", "/api/v1/boom-for-test"):
        response = client.get(path)
        assert response.status_code == 500
        text = response.get_data(as_text=True)
        assert "Traceback" not in text and "exploded" not in text and secret not in text
    assert response.json["error"]
    assert "exploded" in caplog.text


@pytest.mark.one_backend
def test_other_teams_and_anonymous_visitors_see_no_hidden_submission(app, world):
    """The per-team pages and API answers of hidden-split submissions are the team's (and maintainers'):
    an anonymous visitor is sent to log in (page) or gets 401 (API without a token); a logged-in member of
    another team gets 404 on the page and, with a valid token, on the API, exactly as for a missing
    submission, and neither answer names the submission; the owner and a maintainer get it (200).

    On SQLite alone: no database error is raised here; the crawl (the next test) runs on both dialects."""
    with app.app_context():
        facts = {
            sid: (sub.file_sha256, sub.model_name)
            for sid, sub in ((sid, db.session.get(Submission, sid)) for sid in world.submissions.values())
        }
    clients = {role: crawler.logged_in_client(app, role) for role in ROLES}
    for split in HIDDEN:
        for kind in ("unpublished", "rejected"):
            sid = world.submissions[f"owner:{split}:{kind}"]
            sha256, model_name = facts[sid]
            where = (split, kind)
            page = clients["anonymous"].get(f"/submissions/{sid}")
            assert page.status_code == 302 and "/login" in page.headers["Location"], where
            api = clients["anonymous"].get(f"/api/v1/submissions/{sid}")
            assert api.status_code == 401 and api.json["error"], where
            page = clients["other"].get(f"/submissions/{sid}")
            api = clients["other"].get(f"/api/v1/submissions/{sid}", headers=world.headers("other"))
            missing = clients["other"].get("/api/v1/submissions/2000000000", headers=world.headers("other"))
            assert (page.status_code, api.status_code) == (404, 404), where
            assert api.json == {**missing.json, "error": api.json["error"]} and "id" not in api.json, where
            for answer in (page, api):
                text = answer.get_data(as_text=True)
                assert sha256 not in text and model_name not in text, where
            for role in ("owner", "admin"):
                page = clients[role].get(f"/submissions/{sid}")
                api = clients[role].get(f"/api/v1/submissions/{sid}", headers=world.headers(role))
                assert (page.status_code, api.status_code) == (200, 200), (role, *where)
                assert api.json["id"] == sid and api.json["sha256"] == sha256, (role, *where)
                assert sha256 in page.get_data(as_text=True), (role, *where)
