"""Security headers on every response, and pages that need nothing the strict CSP forbids."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from app.http.security import CONTENT_SECURITY_POLICY
from tests.security import crawler
from tests.support.security_world import build

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
        "base-uri 'self'; form-action 'self'; object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}
REFERRER_POLICIES = {"same-origin", "no-referrer", "strict-origin", "strict-origin-when-cross-origin"}

# What a strict CSP blocks: inline scripts and styles, event-handler attributes, javascript: URLs.
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
STYLE_ELEMENT = re.compile(r"<style\b", re.IGNORECASE)
STYLE_ATTRIBUTE = re.compile(r"<[a-z][^>]*\sstyle\s*=", re.IGNORECASE)
HANDLER_ATTRIBUTE = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.IGNORECASE)
SCRIPT_URL = re.compile(r"""(?:href|src|action)\s*=\s*["']?\s*javascript:""", re.IGNORECASE)
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.IGNORECASE)


def check_headers(headers, where: str) -> None:
    for name, value in EXPECTED.items():
        assert headers.get(name) == value, f"{where}: {name} is {headers.get(name)!r}"
    assert headers.get("Referrer-Policy") in REFERRER_POLICIES, where


def inline_problems(text: str) -> list[str]:
    problems = []
    for name, pattern in (
        ("inline script", INLINE_SCRIPT),
        ("style element", STYLE_ELEMENT),
        ("style attribute", STYLE_ATTRIBUTE),
        ("event handler", HANDLER_ATTRIBUTE),
        ("javascript: URL", SCRIPT_URL),
        ("external resource", EXTERNAL),
    ):
        match = pattern.search(text)
        if match:
            problems.append(f"{name}: {match.group(0)[:80]!r}")
    return problems


def test_policy_constant_is_the_documented_one():
    assert EXPECTED["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


def test_every_crawled_response_has_the_headers_and_no_inline_code(app):
    world = build(app)
    urls = crawler.get_urls(app, world, vendored=True)
    for role in ("anonymous", "owner", "admin"):
        for visit in crawler.crawl(app, world, role, urls):
            where = f"{role} GET {visit.url} ({visit.status})"
            check_headers(visit.headers, where)
            if visit.content_type.startswith("text/html"):
                assert not inline_problems(visit.text), (where, inline_problems(visit.text))


def test_error_answers_have_the_headers_too(app, client):
    app.config["MAX_CONTENT_LENGTH"] = 1024
    answers = {
        "404": client.get("/no/such/page"),
        "405": client.get("/logout"),
        "400 (CSRF)": client.post("/login", data={"email": "a@b.c", "password": "x"}),
        "401 (API)": client.get("/api/v1/submissions"),
        "413": client.post(
            "/api/v1/submissions",
            data={"file": (io.BytesIO(b"x" * 4096), "f.csv")},
            content_type="multipart/form-data",
            headers={"Authorization": "Bearer nope"},
        ),
        "static": client.get("/static/holdout.css"),
        "health": client.get("/healthz"),
    }
    for where, response in answers.items():
        check_headers(response.headers, where)


def test_a_stricter_referrer_policy_of_a_page_is_kept(app, client):
    """The invite page sends no Referer at all (its URL is a credential); the default must not undo that."""
    world = build(app)
    page = crawler.logged_in_client(app, "other").get(f"/invites/{world.invite}")
    assert page.status_code == 200
    assert page.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("path", sorted(str(p.relative_to(REPO)) for p in (REPO / "templates").rglob("*.html")))
def test_templates_use_no_inline_script_or_style(path):
    text = (REPO / path).read_text()
    assert not inline_problems(text), inline_problems(text)


@pytest.mark.parametrize("path", sorted(str(p.relative_to(REPO)) for p in (REPO / "static").rglob("*.js")))
def test_scripts_build_no_markup_from_strings(path):
    """Scripts set text, not HTML, and never evaluate strings (nor set style attributes, which CSP blocks)."""
    text = (REPO / path).read_text()
    for forbidden in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        'setAttribute("style"',
        "setAttribute('style'",
    ):
        assert forbidden not in text, forbidden
