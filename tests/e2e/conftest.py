"""Browser tests: the real app under gunicorn on a free loopback port, driven by Playwright in Debian's
Chromium (never a downloaded browser). One server for the whole module keeps them reasonably fast.

Without /usr/bin/chromium (or the playwright package) they skip with the reason, except when the
environment variable CI is set: CI always has Chromium, so there they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from flask_migrate import upgrade

from app import synthetic
from app.db import db
from tests.load.servers import Deployment, Gunicorn
from tests.support.smtp_sink import SmtpSink

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ADMIN = ("maintainer@example.org", "maintainer-password")
MAIL_SITE_URL = "http://holdout.test"  # the server's port is chosen when it starts: links are mapped onto it


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the browser tests must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def sync_api():
    if not CHROMIUM.exists():
        _unavailable(f"Chromium not found at {CHROMIUM}: install Debian's chromium (make test does)")
    try:
        from playwright import sync_api
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -r requirements-dev.txt)")
    return sync_api


@dataclass
class Site:
    """The server under test and what the tests need to know of its data."""

    base: str
    deployment: Deployment
    dev_gold: bytes
    sink: SmtpSink
    seeded: list[int] = field(default_factory=list)

    def app(self):
        return self.deployment.app()

    def mailed_link(self, address: str, part: str, count: int = 1) -> str:
        """The link containing `part` in the `count`th mail to `address` (waiting for it), on this server."""
        letter = self.sink.wait_for(address, count, timeout=20)[count - 1]
        (link,) = [link for link in self.sink.links(letter) if part in link]
        assert link.startswith(MAIL_SITE_URL + "/"), link
        return self.base + link[len(MAIL_SITE_URL) :]


def _prepare(site: Site) -> None:
    """Migrate; NLVR2 with a public dev split and three published entries of another team; a maintainer."""
    from app.services import catalog
    from app.services.intake import submissions
    from app.services.people import accounts, teams

    app = site.app()
    with app.app_context():
        upgrade()
        catalog.add_benchmark(
            "nlvr2",
            "nlvr2",
            "NLVR2",
            "Natural Language for Visual Reasoning for Real.",
            "https://arxiv.org/abs/1811.00491",
        )
        catalog.add_split("nlvr2", "dev", site.dev_gold, name="Dev")
        accounts.create_user(*ADMIN, admin=True)
        rival = accounts.create_user("rival@example.org", "rival-password")
        team = teams.create_team("Baseline Lab", creator=rival)
        for number, accuracy in enumerate((0.62, 0.71, 0.78)):
            entry = submissions.store_scored(
                catalog.get_split("nlvr2", "dev"),
                team,
                synthetic.predictions("nlvr2", site.dev_gold, accuracy, seed=10 + number),
                model_name=f"Baseline {number + 1}",
                user=rival,
                description="A baseline from the paper.",
                paper_url="https://example.org/paper",
                publish=True,
            )
            site.seeded.append(entry.id)
        db.engine.dispose()


@pytest.fixture(scope="module")
def site(sync_api, tmp_path_factory):
    folder = tmp_path_factory.mktemp("e2e")
    deployment = Deployment(f"sqlite:///{folder / 'holdout.sqlite3'}", folder)
    env = deployment.env
    for name in ("WEB_CONCURRENCY", "SESSION_COOKIE_SECURE"):
        env.pop(name, None)
    sink = SmtpSink().start()  # mail (address checks, resets) goes to a real SMTP server on loopback
    env.update({"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": str(sink.port), "SITE_URL": MAIL_SITE_URL})
    site = Site("", deployment, synthetic.nlvr2_gold(800, seed=21), sink)
    _prepare(site)
    server = Gunicorn(env, folder / "gunicorn.log", workers=2)
    site.base = server.base
    try:
        server.wait_until_up()
        yield site
    finally:
        server.stop()
        sink.stop()


@pytest.fixture(scope="module")
def browser(sync_api):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def local_page(browser, site, **options) -> Iterator:
    """A page in a fresh browser profile (no cookies; `options` for browser.new_context) where everything
    stays on loopback: every request for an external font, script or style is refused and counted, and a
    page that made one fails the test."""
    context = browser.new_context(base_url=site.base, **options)
    context.set_default_timeout(15_000)
    external: list[str] = []

    def refuse(route):
        external.append(route.request.url)
        route.abort()

    context.route(lambda url: not url.startswith(site.base), refuse)
    try:
        yield context.new_page()
    finally:
        context.close()
    assert external == [], f"pages asked for external resources: {external}"


@pytest.fixture
def page(browser, site):
    """A fresh browser profile on a desktop-sized window; everything stays on loopback."""
    with local_page(browser, site, accept_downloads=True, viewport={"width": 1280, "height": 900}) as opened:
        yield opened


def screenshot(page, name: str, *, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    try:
        page.screenshot(path=str(path), full_page=full_page)
    except Exception as exc:  # playwright is imported lazily (its Error class with it)
        # Chromium now and then answers "Unable to capture screenshot" while a frame is still being composited
        # on a loaded machine (seen once in CI on a page that had rendered): a second capture finds the frame.
        if "Unable to capture screenshot" not in str(exc):
            raise
        page.wait_for_timeout(200)
        page.screenshot(path=str(path), full_page=full_page)
    return path
