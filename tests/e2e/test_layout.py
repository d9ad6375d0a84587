"""Nothing covers a number (issue 34): on the demo's world in Chromium at 1280×800 and 390×844, no text box
overlaps another and none is cut, on every board, models view, team page and console page (tests/e2e/text_boxes.js
measures the boxes as drawn); the console's times are typed and shown as 24-hour UTC text. Screenshots of a few
pages land in tests/e2e/artifacts/ (git-ignored) for a person to look at.

Its own server, on a database with the demo loaded (`flask demo`, as `make run` serves), a failed job and a stuck
one (the Jobs page's Rerun buttons and "stuck" tags): the conftest's site is a single NLVR2 board."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from flask_migrate import upgrade
from sqlalchemy import select

from app.db import db
from app.models import Benchmark, Job, Split, Team, utcnow
from app.services.maintenance import demo
from tests.e2e.conftest import local_page, screenshot
from tests.load.servers import Deployment, Gunicorn

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
TEXT_BOXES = (Path(__file__).resolve().parent / "text_boxes.js").read_text()
CONSOLE_PAGES = (
    "/console/",
    "/console/splits/new",
    "/console/rejected",
    "/console/audit",
    "/console/jobs",
    "/console/flags",
    "/console/bundles/new",
    "/console/benchmarks/demo-nlvr2",  # a benchmark's bundle: one page will do (one template)
)
# A time as the console types and shows it: UTC, 24-hour clock.
CONSOLE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?$")


@pytest.fixture(scope="module")
def demo_site(sync_api, tmp_path_factory):
    """The demo under gunicorn; yields (base URL, {kind: [paths]})."""
    folder = tmp_path_factory.mktemp("layout")
    deployment = Deployment(f"sqlite:///{folder / 'holdout.sqlite3'}", folder)
    env = deployment.env
    for name in ("WEB_CONCURRENCY", "SESSION_COOKIE_SECURE"):
        env.pop(name, None)
    app = deployment.app()
    with app.app_context():
        upgrade()
        demo.load_demo()
        splits = [
            (split.benchmark.slug, split.slug, split.id)
            for split in db.session.scalars(select(Split).order_by(Split.id))
        ]
        held = [split.id for split in db.session.scalars(select(Split)) if split.hidden and not split.revealed_at]
        long_ago = utcnow() - timedelta(hours=2)
        # As the demo stood before issue 34: each held board's job waiting for hours (shown "stuck"); and a
        # rescoring that gave up, with a long error. The Jobs page shows them with Rerun buttons.
        db.session.add_all(
            Job(
                kind="board", key=f"board:{split_id}", args="{}", state="queued", queued_at=long_ago, run_after=long_ago
            )
            for split_id in held
        )
        db.session.add(
            Job(
                kind="rescore",
                key=f"rescore:{splits[0][2]}",
                args="{}",
                state="failed",
                attempts=4,
                queued_at=long_ago,
                run_after=long_ago,
                started_at=long_ago,
                finished_at=long_ago,
                worker="holdout-1:4242",
                error="OSError: [Errno 28] No space left on device: '/var/lib/holdout/submissions/3f9a2c.csv.gz'",
            )
        )
        db.session.commit()
        paths = {
            "board": [f"/leaderboards/{benchmark}/{split}" for benchmark, split, _ in splits],
            "models view": [
                f"/leaderboards/{slug}/models"
                for slug in db.session.scalars(select(Benchmark.slug).order_by(Benchmark.id))
            ],
            "team page": [f"/teams/{slug}" for slug in db.session.scalars(select(Team.slug).order_by(Team.id))],
            # Every split's console page (public, hidden, sealed differ); a label audit per family (one template,
            # whose columns are the family's label fields): the module's time is its pages' (CI's 8 minutes).
            "console page": [
                *CONSOLE_PAGES,
                *(f"/console/splits/{benchmark}/{split}" for benchmark, split, _ in splits),
                *(f"/console/splits/{benchmark}/{split}/labels" for benchmark, split in _first_of_each(splits)),
            ],
        }
        db.engine.dispose()
    server = Gunicorn(env, folder / "gunicorn.log", workers=2)
    try:
        server.wait_until_up()
        yield server.base, paths
    finally:
        server.stop()


def _first_of_each(splits: list[tuple[str, str, int]]) -> list[tuple[str, str]]:
    """Each benchmark's first split."""
    first: dict[str, str] = {}
    for benchmark, split, _ in splits:
        first.setdefault(benchmark, split)
    return list(first.items())


def _logged_in(page) -> None:
    email, password, _, _ = next(user for user in demo.DEMO_USERS if user[2])  # the demo's maintainer
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name="Log out").wait_for()


class _Site:  # what conftest's local_page needs of a site
    def __init__(self, base: str):
        self.base = base


# Pages a person looks at (tests/e2e/artifacts/layout-<size>-<name>.png).
SHOTS = {
    "/leaderboards/demo-gqa/models": "gqa-models",
    "/leaderboards/demo-nlvr2/test-p": "board-nlvr2-test-p",
    "/teams/aurora-lab": "team-aurora-lab",
    "/console/splits/demo-nlvr2/test-u": "console-split-nlvr2-test-u",
    "/console/jobs": "console-jobs",
}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x800", "390x844"])
def test_no_text_box_covers_or_cuts_another_on_any_page(browser, demo_site, viewport, sync_api):
    """Every board, models view, team page and console page of the demo, logged in as its maintainer (who sees
    every page and the console's buttons). Found before issue 34's fixes: the GQA models view's "reference" badge
    over 42.1, the Jobs page's Rerun cut to "Reru" at 1280 px, the progress chart's lowest y label on its first
    date and its last date cut at the chart's edge, and the console's datetime-local fields ("02/26/2027, 11:",
    _console_times)."""
    base, paths = demo_site
    phone = viewport["width"] < 500
    options = {"viewport": viewport, "device_scale_factor": 2 if phone else 1, "is_mobile": phone, "has_touch": phone}
    size = f"{viewport['width']}"
    found: dict[str, list[str]] = {}
    with local_page(browser, _Site(base), **options) as page:
        _logged_in(page)
        for kind, kind_paths in paths.items():
            for path in kind_paths:
                response = page.goto(path)
                assert response is not None and response.status == 200, (path, response and response.status)
                problems = page.evaluate(TEXT_BOXES, not phone)
                if kind == "console page":
                    problems += _console_times(page)
                if problems:
                    found[f"{kind} {path}"] = problems
                if path in SHOTS:
                    screenshot(page, f"layout-{size}-{SHOTS[path]}")
    report = "\n".join(f"{where}:\n  " + "\n  ".join(problems[:6]) for where, problems in found.items())
    assert not found, f"text covered or cut at {size} px on {len(found)} pages:\n{report}"


def _console_times(page) -> list[str]:
    """What is wrong with the console's time fields: each must be a text field holding '2027-02-26 23:59'
    (or nothing); a datetime-local one is drawn in the browser's locale, on a 12-hour clock here."""
    fields = page.evaluate(
        """() => [...document.querySelectorAll("input")]
             .filter(f => /_at$/.test(f.name) || ["datetime-local", "date", "time"].includes(f.type))
             .map(f => [f.name, f.type, f.value])"""
    )
    return [
        f"a time not typed and shown as 24-hour UTC text: {name}, type {kind!r}, value {value!r}"
        for name, kind, value in fields
        if kind != "text" or (value and not CONSOLE_TIME.match(value))
    ]
