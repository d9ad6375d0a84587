"""The golden walk: every page of the demo as an anonymous visitor, a team member and a maintainer, the JSON
API's answers (read and write), the exports and the command line's help and listings, recorded at a frozen
clock so that a restructuring can be checked byte for byte against the behaviour before it.

`python -m tests.golden.record` (re)writes tests/golden/recorded/walk.jsonl.xz from the current code; the test
(tests/golden/test_golden_walk.py) walks again and compares each answer with the recording. Re-record only
when a change of behaviour is intended, and say so in the commit.

Pages are found as a visitor finds them: from every GET route of the URL map (filled with the demo's slugs
and ids) and every local link on the pages fetched, breadth first, in a fixed order. What differs between two
runs of the same code (CSRF tokens, API tokens, the temporary folder) is replaced by a placeholder.
"""

from __future__ import annotations

import html
import itertools
import json
import lzma
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import time_machine
from flask import url_for
from flask_migrate import upgrade
from sqlalchemy import select
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BuildError

from app import create_app
from app.db import db
from app.models import Benchmark, Submission, Team, User

RECORDING = Path(__file__).resolve().parent / "recorded" / "walk.jsonl.xz"
FROZEN_AT = datetime(2026, 11, 20, 12, 0, 0, tzinfo=UTC)
ROLES = {
    "anonymous": None,
    "member": ("member@demo.holdout", "holdout-demo"),
    "maintainer": ("admin@demo.holdout", "holdout-admin"),
}
MAX_PAGES_PER_ROLE = 601  # 600, and /compare (issue 38)
_LINK = re.compile(r"""\b(?:href|src|action)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_CSRF = re.compile(r'(name="csrf_token"[^>]*value=")[^"]+(")|(name="csrf-token" content=")[^"]+(")')


@dataclass(frozen=True)
class Answer:
    """One request and what came back (the body after normalisation)."""

    role: str
    request: str  # "GET /path?query", "POST /api/v1/submissions (name)", "CLI flask ..."
    status: int
    content_type: str
    body: str

    @property
    def key(self) -> str:
        return f"{self.role} {self.request}"


def _normalise(text: str, folder: Path, secrets: list[str]) -> str:
    text = _CSRF.sub(lambda m: (m.group(1) or m.group(3)) + "<CSRF>" + (m.group(2) or m.group(4)), text)
    for secret in secrets:
        text = text.replace(secret, "<SECRET>")
    text = text.replace(f"{socket.gethostname()}:{os.getpid()}", "<WORKER>")  # who ran a job (the jobs page)
    return text.replace(str(folder), "<TMP>")


@contextmanager
def frozen_clock() -> Iterator[None]:
    with time_machine.travel(FROZEN_AT, tick=False):
        yield


def build_demo(folder: Path):
    """A migrated SQLite database in `folder` with the demo loaded, at the frozen clock."""
    from app.services.maintenance import demo

    app = create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "golden-walk",
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'holdout.sqlite3'}",
            "HIDDEN_LABELS_DIR": str(folder / "hidden_labels"),
            "SUBMISSIONS_DIR": str(folder / "submissions"),
            "WTF_CSRF_ENABLED": True,
        }
    )
    with frozen_clock(), app.app_context():
        upgrade()
        demo.load_demo()
    return app


# A submission's own pages (and the maintainer's actions on it), by id.
_SUBMISSION_PATH = re.compile(r"^/(?:api/v1/submissions|submissions|console/entries)/(\d+)(?:/|$)")


def crowd_submissions(app) -> set[int]:
    """The crowded demo board's runs (demo_crowd): pages of the kinds every other entry has, so neither seeded nor
    followed, and the walk's budget goes to pages of other kinds."""
    from app.services.maintenance import demo_crowd

    names = [name for name, _ in demo_crowd.TEAMS]
    with app.app_context():
        found = select(Submission.id).join(Team, Submission.team_id == Team.id).where(Team.name.in_(names))
        return set(db.session.scalars(found))


def _contexts(app) -> list[dict]:
    with app.app_context():
        benchmarks = db.session.scalars(select(Benchmark).order_by(Benchmark.id)).all()
        pairs = [(b.slug, s.slug) for b in benchmarks for s in sorted(b.splits, key=lambda s: s.id)]
        crowd = crowd_submissions(app)
        submission_ids = sorted(set(db.session.scalars(select(Submission.id))) - crowd)
        team_ids = sorted(db.session.scalars(select(Team.id)))
        team_slugs = list(db.session.scalars(select(Team.slug).order_by(Team.id)))
        user_ids = sorted(db.session.scalars(select(User.id)))
    contexts: list[dict] = [
        {"benchmark": b, "benchmark_slug": b, "slug": b, "split": s, "split_slug": s} for b, s in pairs
    ]
    contexts += [{"submission_id": i} for i in submission_ids]
    contexts += [{"team_id": i} for i in team_ids]
    contexts += [{"team_slug": slug} for slug in team_slugs]
    contexts += [{"user_id": i} for i in user_ids]
    return contexts


# Not walked: files served as they are (the site's static files, Swagger UI's vendored bundle) and a benchmark's
# bundle (a .zip of its gold files, linked from the console: tests/web/test_console_bundles.py checks it). A
# submission's original file, the same route for each id, is walked for a few ids: the rest of the walk is worth more.
NOT_WALKED = {"static", "api_docs.script", "api_docs.stylesheet", "console.bundle_download"}
# Two entries compared and the per-example files (issue 38) answer CSV or JSON that their own tests check
# (tests/service/test_comparisons.py); the walk keeps its budget for the pages it had (it sees /compare's page).
NOT_WALKED |= {"api_v1.compare", "public.compare_csv", "api_v1.example_results", "submissions.example_results"}
FEW_SEEDS = {"api_v1.submission_file": 6, "submissions.original_file": 6}


def seed_urls(app) -> list[str]:
    """Every GET route, filled with each matching set of the demo's values (static files once)."""
    contexts = _contexts(app)
    urls: list[str] = []
    with app.test_request_context():
        for rule in sorted(app.url_map.iter_rules(), key=lambda r: (r.rule, r.endpoint)):
            if "GET" not in (rule.methods or ()) or rule.endpoint in NOT_WALKED:
                continue
            args = set(rule.arguments)
            candidates = [{}] if not args else [ctx for ctx in contexts if args <= ctx.keys()]
            candidates = candidates[: FEW_SEEDS.get(rule.endpoint, len(candidates))]
            for ctx in candidates:
                try:
                    url = url_for(rule.endpoint, **{name: ctx[name] for name in args})
                except BuildError:
                    continue
                if url not in urls:
                    urls.append(url)
    return urls


def _links(body: str) -> list[str]:
    found = []
    for raw in _LINK.findall(body):
        link = html.unescape(raw).split("#", 1)[0]
        if link.startswith("/") and not link.startswith("//") and not link.startswith("/static/"):
            found.append(link)
    return found


def _endpoint(app, url: str) -> str | None:
    try:
        return app.url_map.bind("localhost").match(urlsplit(url).path, method="GET")[0]
    except HTTPException:  # a 404, a 405 (a form's action) or a redirect: no endpoint to name
        return None


def _client(app, role: str):
    client = app.test_client()
    credentials = ROLES[role]
    if credentials:
        page = client.get("/login").get_data(as_text=True)
        token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
        response = client.post(
            "/login", data={"email": credentials[0], "password": credentials[1], "csrf_token": token}
        )
        assert response.status_code == 302, f"{role} could not log in ({response.status_code})"
    return client


def _api_token(app, role: str) -> str | None:
    from app.services.people import accounts

    if ROLES[role] is None:
        return None
    with app.app_context():
        user = accounts.get_user_by_email(ROLES[role][0])
        _, token = accounts.create_token(user, "golden walk")
    return token


def walk_role(app, role: str, seeds: list[str], folder: Path) -> list[Answer]:
    """GET every seed and every local link found, breadth first, as `role` (API routes with its token)."""
    client = _client(app, role)
    token = _api_token(app, role)
    secrets = [token, token[:10]] if token else []  # the account page shows a token's first characters
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    queue, seen, answers = list(seeds), set(), []
    crowd = crowd_submissions(app)
    while queue and len(answers) < MAX_PAGES_PER_ROLE:
        url = queue.pop(0)
        # /metrics counts this process's requests and their durations: never the same twice.
        if url in seen or urlsplit(url).path in ("/logout", "/metrics") or "/swagger-ui-" in url:
            continue
        if _endpoint(app, url) in NOT_WALKED:
            continue
        own = _SUBMISSION_PATH.match(urlsplit(url).path)
        if own is not None and int(own.group(1)) in crowd:
            continue
        seen.add(url)
        response = client.get(url, headers=headers if url.startswith("/api/") else {})
        body = response.get_data(as_text=True)
        answers.append(
            Answer(
                role, f"GET {url}", response.status_code, response.content_type or "", _normalise(body, folder, secrets)
            )
        )
        if (response.content_type or "").startswith("text/html"):
            queue.extend(link for link in _links(body) if link not in seen)
    return answers


def _writes(app, folder: Path) -> list[Answer]:
    """The API's write answers as the member (role "writes"): a valid upload, a refused one, publishing
    and what the board says then."""
    from app.services import catalog

    token = _api_token(app, "member")
    secrets = [token, token[:10]]
    headers = {"Authorization": f"Bearer {token}"}
    client = app.test_client()
    with app.app_context():
        _, sample, _ = catalog.sample_file("demo-nlvr2", "dev")
    answers = []

    def record(request: str, response) -> None:
        body = response.get_data(as_text=True)
        answers.append(
            Answer(
                "writes", request, response.status_code, response.content_type or "", _normalise(body, folder, secrets)
            )
        )

    def upload(name: str, data: bytes):
        from io import BytesIO

        return client.post(
            "/api/v1/submissions",
            headers=headers,
            data={"benchmark": "demo-nlvr2", "split": "dev", "model_name": "golden", "file": (BytesIO(data), name)},
            content_type="multipart/form-data",
        )

    record("POST /api/v1/submissions (bad.csv)", upload("bad.csv", b"identifier,prediction\nnope,maybe\n"))
    good = upload("sample.csv", sample)
    record("POST /api/v1/submissions (sample.csv)", good)
    submission_id = good.get_json().get("id")
    if submission_id:
        record(
            f"POST /api/v1/submissions/{submission_id}/publish",
            client.post(f"/api/v1/submissions/{submission_id}/publish", headers=headers),
        )
        record(
            f"GET /api/v1/submissions/{submission_id}",
            client.get(f"/api/v1/submissions/{submission_id}", headers=headers),
        )
        record("GET /api/v1/leaderboards/demo-nlvr2/dev", client.get("/api/v1/leaderboards/demo-nlvr2/dev"))
        record("GET /leaderboards/demo-nlvr2/dev", client.get("/leaderboards/demo-nlvr2/dev"))
    return answers


def _cli(app, folder: Path) -> list[Answer]:
    """`flask --help`, each group's and command's help, and the listings that only read."""
    runner = app.test_cli_runner()
    invocations: list[list[str]] = [["--help"]]
    commands = app.cli.list_commands(None)  # type: ignore[arg-type]
    for name in commands:
        command = app.cli.get_command(None, name)  # type: ignore[arg-type]
        invocations.append([name, "--help"])
        for sub in sorted(getattr(command, "commands", {}) or {}):
            invocations.append([name, sub, "--help"])
    invocations += [
        ["benchmarks", "list"],
        ["splits", "list"],
        ["references", "list", "demo-nlvr2", "dev"],
        ["references", "list", "demo-vcr", "val"],
    ]
    answers = []
    for args in invocations:
        result = runner.invoke(args=args)
        answers.append(
            Answer(
                "cli",
                "CLI flask " + " ".join(args),
                result.exit_code,
                "text/plain",
                _normalise(result.output, folder, []),
            )
        )
    return answers


def walk(folder: Path) -> list[Answer]:
    """Build the demo in `folder` and walk it; the same code gives the same answers, byte for byte."""
    app = build_demo(folder)
    with frozen_clock():
        seeds = seed_urls(app)
        answers: list[Answer] = []
        for role in ROLES:
            answers += walk_role(app, role, seeds, folder)
        answers += _cli(app, folder)
        answers += _writes(app, folder)
    with app.app_context():
        db.engine.dispose()
    return answers


def save(answers: list[Answer], path: Path = RECORDING) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(asdict(answer), ensure_ascii=False, sort_keys=True) + "\n" for answer in answers)
    # Written aside and renamed, so a reader never sees half a file.
    temporary = path.with_name(path.name + ".part")
    temporary.write_bytes(lzma.compress(lines.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    temporary.replace(path)


def load(path: Path = RECORDING) -> list[Answer]:
    text = lzma.decompress(path.read_bytes()).decode("utf-8")
    # Lines end at "\n" alone: splitlines() would also cut at U+2028 and the like, which bodies may hold raw
    # (Swagger UI's bundle does).
    return [Answer(**json.loads(line)) for line in text.split("\n") if line]


def pairs(recorded: list[Answer], current: list[Answer]) -> Iterator[tuple[str, Answer | None, Answer | None]]:
    """Each request with its recorded and current answer (None where one side lacks it), in walk order."""
    now = {answer.key: answer for answer in current}
    before = {answer.key: answer for answer in recorded}
    for key in dict.fromkeys(itertools.chain(before, now)):
        yield key, before.get(key), now.get(key)
