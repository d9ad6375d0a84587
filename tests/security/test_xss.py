"""XSS through every team-written field (model name, description, team name, paper and code URLs) on every
page and export that shows them; only http(s) URLs ever become links."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from markupsafe import escape
from sqlalchemy import update

from app.db import db
from app.models import Submission
from tests.security import crawler
from tests.support.security_world import build

MODEL = "=cmd|'/C calc'!A0 <script>alert('xss-model')</script> \\input{/etc/passwd}"
DESCRIPTION = "\"><img src=x onerror=alert('xss-desc')> [click](javascript:alert('md'))"
PAPER = "https://example.org/\"><script>alert('xss-paper')</script>"
CODE = "https://example.org/?q=<svg/onload=alert('xss-code')>"
TEAM = "<b onmouseover=alert('xss-team')>Lab</b>"
# A tag from a payload, as a browser would parse it (escaped text never contains a raw '<tag').
RAW_TAGS = re.compile(r"<script>alert\(|<img src=x onerror|<svg/onload|<b onmouseover", re.IGNORECASE)
ATTRIBUTE = re.compile(
    r"""\b(?:href|src|action|formaction|xlink:href)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE
)
BAD_SCHEMES = ("javascript:", "vbscript:", "data:text", "data:application")


def _scheme_links(text: str) -> list[str]:
    found = []
    for match in ATTRIBUTE.finditer(text):
        value = html.unescape(next(g for g in match.groups() if g is not None))
        cleaned = re.sub(r"[\x00-\x20]", "", value).lower()
        if cleaned.startswith(BAD_SCHEMES):
            found.append(value)
    return found


@pytest.fixture
def world(app):
    world = build(
        app,
        team_names={"owner": TEAM, "other": "Rivals"},
        published_fields={"model_name": MODEL, "description": DESCRIPTION, "paper_url": PAPER, "code_url": CODE},
    )
    return world


def test_the_services_refuse_non_web_urls(app, world):
    client = app.test_client()
    sid = world.submissions["owner:dev:published"]
    for url in (
        "javascript:alert(1)",
        " JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "//evil.example/x",
        "ftp://example.org/x",
        "http:/x",
        "https://",
    ):
        for field in ("paper_url", "code_url"):
            response = client.post(
                f"/api/v1/submissions/{sid}/publish", json={field: url}, headers=world.headers("owner")
            )
            assert response.status_code == 422, (field, url)
            assert field in response.json["error"]


def test_no_payload_runs_anywhere(app, world):
    """Even URLs that slipped past the services (older rows, another path) are never rendered as links."""
    with app.app_context():
        db.session.execute(
            update(Submission)
            .where(Submission.id == world.submissions["other:dev:published"])
            .values(paper_url="javascript:alert('xss-js')", code_url=" JaVaScRiPt:alert(1)")
        )
        db.session.execute(
            update(Submission)
            .where(Submission.id == world.submissions["other:test-full:published"])
            .values(paper_url="data:text/html,<script>alert(1)</script>", code_url="vbscript:msgbox(1)")
        )
        db.session.commit()
    urls = crawler.get_urls(app, world)
    problems, seen_model = [], set()
    for role in ("anonymous", "other", "owner", "admin"):
        for visit in crawler.crawl(app, world, role, urls):
            where = f"{role} GET {visit.url}"
            text = visit.text
            if "xss-model" in text:
                seen_model.add(visit.endpoint)
            if visit.content_type.startswith("text/html"):
                if RAW_TAGS.search(text):
                    problems.append(f"{where}: raw tag {RAW_TAGS.search(text).group(0)!r}")
                problems += [f"{where}: link to {link!r}" for link in _scheme_links(text)]
            elif visit.status == 200 and "xss-" in text:
                problems += _export_problems(where, visit)
    assert not problems, "\n".join(problems)
    # The payloads were really shown: on the leaderboard, the submission page, the API and the exports.
    assert {
        "public.leaderboard",
        "submissions.show",
        "api_v1.get_submission",
        "api_v1.leaderboard",
        "public.export",
    } <= seen_model


def _export_problems(where: str, visit) -> list[str]:
    problems = []
    kind = visit.content_type.split(";")[0]
    if "html" in kind or "xml" in kind or not kind:
        problems.append(f"{where}: team text served as {visit.content_type!r}")
    if visit.headers.get("X-Content-Type-Options") != "nosniff":
        problems.append(f"{where}: no nosniff")
    text = visit.text
    if kind == "text/csv":
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                if cell.startswith(("=", "+", "-", "@")) and not re.fullmatch(r"-?\d+(\.\d+)?", cell):
                    problems.append(f"{where}: CSV cell a spreadsheet would evaluate: {cell[:40]!r}")
    if kind == "text/markdown":
        if re.search(r"\]\(\s*<?\s*(javascript|vbscript|data):", text, re.IGNORECASE):
            problems.append(f"{where}: Markdown link to a script URL")
        # A backslash makes '<' literal in Markdown; an unescaped one would start inline HTML.
        if re.search(r"(?<!\\)(?:" + RAW_TAGS.pattern + ")", text, re.IGNORECASE):
            problems.append(f"{where}: raw HTML tag in Markdown")
    is_tex = kind in ("application/x-tex", "text/x-tex") or visit.url.endswith(".tex")
    if is_tex and ("\\input{" in text or re.search(r"\\href\{\s*(javascript|data)", text, re.IGNORECASE)):
        problems.append(f"{where}: LaTeX command from team text")
    return problems


def test_team_text_in_html_attributes_cannot_break_out(app, world):
    """The payloads are escaped where they land inside attributes too (title=, value=, href=)."""
    client = crawler.logged_in_client(app, "owner")
    page = client.get(f"/submissions/{world.submissions['owner:dev:published']}").get_data(as_text=True)
    assert str(escape(PAPER)) in page and PAPER not in page
    for match in ATTRIBUTE.finditer(page):
        value = next(g for g in match.groups() if g is not None)
        assert "<" not in value and '"' not in value, value
