"""Readable boards in a real browser (issue 24): a 60-entry board shows ten rows or more above the fold at
1280×800; no page is wider than a 390 px phone; a held board tells how many entries from how many teams wait
and under which policy; a refused upload's summary is an alert, in view and focused, each problem a link to
its field. Screenshots land in tests/e2e/artifacts/ (git-ignored) for a person to look at."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from app import synthetic
from app.db import db
from tests.e2e.conftest import ADMIN, local_page, screenshot

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
MEMBER = ("member@example.org", "member-password")
# Team-written text at its longest and least breakable: the pages must hold it without growing wider.
LONG_MODEL = "Ensemble-" + "x" * 150 + " (a model name of 200 characters at most)"[:40]
LONG_TEAM = "The Laboratory for Extremely Long Team Names in Visual Reasoning"
LONG_DESCRIPTION = "A description long enough to wrap many times. " * 10 + "https://example.org/" + "y" * 90
LONG_URL = "https://example.org/papers/" + "z" * 150


@dataclass
class World:
    long_entry: int  # the entry with the longest model name, team, description and links
    held_entries: int
    held_teams: int
    submission: int  # a published entry's page
    held_models: tuple[str, ...]  # model names of the held entries: none may be on the held board


@pytest.fixture(scope="module")
def world(site) -> World:
    """Beside the conftest's NLVR2 dev board (3 entries): 57 more entries there (60 in all) from five teams,
    one with the longest names and links, and a reference row; VCR with a public split of a few entries and a
    blind test under `none` holding 5 entries from 3 teams (2 of them published by one team); a member with a
    team of their own, for the upload."""
    from app.services import catalog
    from app.services.catalog import references
    from app.services.intake import submissions
    from app.services.people import accounts, teams

    app = site.app()
    with app.app_context():
        dev = catalog.get_split("nlvr2", "dev")
        crowd = [teams.create_team(name) for name in ("Crowd Lab", "Sweep Lab", "North Vision", LONG_TEAM)]
        long_entry = 0
        for number in range(57):
            longest = number == 20
            team = crowd[3] if longest else crowd[number % 3]
            entry = submissions.store_scored(
                dev,
                team,
                synthetic.predictions("nlvr2", site.dev_gold, 0.55 + 0.006 * number, seed=100 + number),
                model_name=LONG_MODEL if longest else f"Sweep model lr={number}e-5 seed={number % 5}",
                description=LONG_DESCRIPTION if longest else f"Run {number} of a sweep over learning rates.",
                paper_url=LONG_URL if longest else "https://example.org/paper",
                code_url=LONG_URL if longest else None,
                publish=True,
            )
            long_entry = entry.id if longest else long_entry
        references.add_reference("nlvr2", "dev", "Human (Suhr et al. 2019)", '{"all": {"accuracy": 96.2}}')

        catalog.add_benchmark("vcr", "vcr", "VCR", "Visual commonsense reasoning: an answer, then its rationale.")
        vcr_gold = synthetic.vcr_gold(300, seed=5)
        catalog.add_split("vcr", "val", vcr_gold, name="Val")
        catalog.add_split("vcr", "test", synthetic.vcr_gold(300, seed=6), hidden=True, name="Test")
        catalog.set_policy("vcr", "test", feedback="none")
        val, test = catalog.get_split("vcr", "val"), catalog.get_split("vcr", "test")
        for number, team in enumerate(crowd[:3]):
            submissions.store_scored(
                val,
                team,
                synthetic.predictions("vcr", vcr_gold, 0.5 + 0.1 * number, seed=number),
                model_name=f"VCR model {number}",
                description="A VCR baseline.",
                publish=True,
            )
        held_models = []
        test_gold = synthetic.vcr_gold(300, seed=6)
        for number, team in enumerate([crowd[0], crowd[0], crowd[1], crowd[2], crowd[2], crowd[1]]):
            name = f"Held VCR model {number}"
            submissions.store_scored(
                test,
                team,
                synthetic.predictions("vcr", test_gold, 0.6, seed=50 + number),
                model_name=name,
                description="Waiting for the reveal.",
                publish=number < 5,  # the sixth is not published: it does not wait on the board
            )
            held_models.append(name)

        member = accounts.create_user(*MEMBER)
        teams.create_team("Member Lab", creator=member)
        world = World(long_entry, 5, 3, site.seeded[0], tuple(held_models))
        db.engine.dispose()
    return world


@contextmanager
def window(browser, site, viewport: dict, *, login: tuple[str, str] | None = None) -> Iterator:
    """A fresh browser profile with the viewport (a phone's is a touch screen at 2×), optionally logged in;
    as in conftest's `page`, a request for anything off this machine is refused and fails the test."""
    phone = viewport["width"] < 500
    options = {"viewport": viewport, "device_scale_factor": 2 if phone else 1, "is_mobile": phone, "has_touch": phone}
    with local_page(browser, site, **options) as page:
        if login:
            page.goto("/login")
            page.get_by_label("Email").fill(login[0])
            page.get_by_label("Password").fill(login[1])
            page.get_by_role("button", name="Log in").click()
            page.get_by_role("button", name="Log out").wait_for()
        yield page


def _rows_in_view(page) -> list[int]:
    """The ids of the entries whose row lies wholly inside the window, the page scrolled to its top."""
    return page.evaluate(
        """() => [...document.querySelectorAll("tr.entry")].filter(row => {
             const box = row.getBoundingClientRect();
             return box.top >= 0 && box.bottom <= window.innerHeight && box.height > 0;
           }).map(row => Number(row.dataset.submissionId))"""
    )


def _page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_a_sixty_entry_board_shows_ten_rows_above_the_fold_at_1280_by_800(browser, site, world, sync_api):
    expect = sync_api.expect
    with window(browser, site, DESKTOP) as page:
        page.goto("/leaderboards/nlvr2/dev")
        expect(page.locator("tr.entry")).to_have_count(60)
        in_view = _rows_in_view(page)
        screenshot(page, "readable-board-1280x800", full_page=False)
        assert len(in_view) >= 10, f"{len(in_view)} of 60 rows above the fold"
        first = page.locator("tr.entry").first
        assert in_view[0] == int(first.get_attribute("data-submission-id"))
        # Each rank cell still shows the rank and its rank interval (how they are computed is not this test's).
        ranks = page.locator("tr.entry td.rank").evaluate_all(
            "cells => cells.map(cell => [cell.firstChild.textContent, cell.querySelector('.ci').textContent])"
        )
        assert len(ranks) == 60
        assert all(re.fullmatch(r"\d+", rank) and re.fullmatch(r"\d+(–\d+)?", ci) for rank, ci in ranks), ranks
        # Every default column, team, date and links fit the window: nothing to scroll sideways.
        wrap = page.locator(".table-wrap").first
        assert wrap.evaluate("box => box.scrollWidth <= box.clientWidth"), "the board scrolls sideways at 1280 px"
        assert _page_width(page) <= DESKTOP["width"]

        # The longest entry's name, team and links are on the page; its description opens on demand.
        row = page.locator(f'tr.entry[data-submission-id="{world.long_entry}"]')
        expect(row.locator("a.name")).to_have_attribute("title", LONG_MODEL)
        expect(row.locator("td.team .cut")).to_have_attribute("title", LONG_TEAM)
        expect(row.locator(f'a[href="{LONG_URL}"]')).to_have_count(2)
        description = row.locator("details.about .description")
        expect(description).to_be_hidden()
        height = row.bounding_box()["height"]
        row.locator("details.about summary").click()
        expect(description).to_be_visible()
        expect(description).to_contain_text("A description long enough to wrap")
        assert row.bounding_box()["height"] > height
        screenshot(page, "readable-board-description-open", full_page=False)
        # How ranks and intervals are computed, on demand too.
        explain = page.locator("details.explain-box")
        expect(explain.locator("ul.explain")).to_be_hidden()
        explain.locator("summary").click()
        expect(explain.locator("ul.explain")).to_contain_text("rank interval")


def test_no_page_is_wider_than_a_390_px_phone(browser, site, world, sync_api):
    """Every page a visitor, a team and a maintainer read, at 390×844: the page is never wider than the
    screen (document.documentElement.scrollWidth), wide tables scroll inside their own box."""
    pages = {
        "home": "/",
        "about-blind-test": "/about/blind-test",
        "board-nlvr2-dev": "/leaderboards/nlvr2/dev",
        "board-nlvr2-dev-page-of-teams": "/leaderboards/nlvr2/dev?view=teams",
        "board-vcr-val": "/leaderboards/vcr/val",
        "board-vcr-held": "/leaderboards/vcr/test",
        "models-nlvr2": "/leaderboards/nlvr2/models",
        "models-vcr": "/leaderboards/vcr/models",
        "submission": f"/submissions/{world.long_entry}",
        "submit": "/submit?split=vcr/val",
        "console": "/console",
        "console-split": "/console/splits/vcr/test",
        "console-board-split": "/console/splits/nlvr2/dev",
        "console-new-split": "/console/splits/new",
        "console-audit": "/console/audit",
        "console-rejected": "/console/rejected",
        "console-flags": "/console/flags",
    }
    wide = {}
    with window(browser, site, PHONE, login=ADMIN) as page:
        for name, path in pages.items():
            response = page.goto(path)
            assert response is not None and response.status == 200, (path, response and response.status)
            width = _page_width(page)
            screenshot(page, f"readable-phone-{name}", full_page=False)  # full pages of long boards: ~1 s each
            if width > PHONE["width"]:
                wide[path] = width
    with window(browser, site, PHONE) as page:  # a visitor without a login: the shared, cached pages
        for path in ("/", "/leaderboards/vcr", "/leaderboards/nlvr2/dev", f"/submissions/{world.submission}"):
            page.goto(path)
            if _page_width(page) > PHONE["width"]:
                wide[f"{path} (anonymous)"] = _page_width(page)
    assert not wide, f"pages wider than {PHONE['width']} px: {wide}"


def test_the_vcr_board_on_a_phone_scrolls_its_columns_inside_the_table(browser, site, world, sync_api):
    with window(browser, site, PHONE) as page:
        page.goto("/leaderboards/vcr/val")
        headers = page.locator("table.leaderboard thead th").all_inner_texts()
        assert [h.split("\n")[0].strip(" ↕↓↑") for h in headers[2:5]] == ["Q→A", "QA→R", "Q→AR"], headers
        box = page.locator(".table-wrap").first
        assert box.evaluate("box => getComputedStyle(box).overflowX") == "auto"
        assert _page_width(page) <= PHONE["width"]
        page.locator("table.leaderboard").scroll_into_view_if_needed()
        screenshot(page, "readable-phone-vcr-board", full_page=False)


def test_a_held_board_tells_its_counts_policy_and_where_to_read_more(browser, site, world, sync_api):
    expect = sync_api.expect
    with window(browser, site, DESKTOP) as page:
        page.goto("/leaderboards/vcr/test")
        held = page.locator("section.held")
        expect(held).to_contain_text(
            f"{world.held_entries} entries from {world.held_teams} teams are waiting; "
            "scores open when the maintainers reveal them."
        )
        expect(held).to_contain_text("Feedback policy none:")
        expect(page.locator("table.leaderboard")).to_have_count(0)
        text = page.locator("main").inner_text()
        assert not [name for name in world.held_models if name in text]
        screenshot(page, "readable-held-board", full_page=False)

        answer = page.request.get("/api/v1/leaderboards/vcr/test").json()
        assert answer["scores_public"] is False and answer["entries"] == []
        assert answer["held"]["entries"] == world.held_entries and answer["held"]["teams"] == world.held_teams
        assert answer["held"]["feedback"] == "none" and answer["held"]["policy"].startswith("Feedback policy none:")
        assert page.request.get("/api/v1/leaderboards/vcr/val").json()["held"] is None

        held.get_by_role("link", name="How the blind test works").click()
        expect(page).to_have_url(re.compile(r"/about/blind-test#feedback$"))
        expect(page.get_by_role("heading", name="Feedback policies")).to_be_in_viewport()
        assert page.request.get(answer["held"]["about_url"]).ok
        screenshot(page, "readable-about-blind-test", full_page=False)
    with window(browser, site, PHONE) as page:
        page.goto("/leaderboards/vcr/test")
        expect(page.locator("section.held")).to_be_in_viewport()
        screenshot(page, "readable-phone-held-board", full_page=False)


def _in_view_and_focused(page, selector: str) -> None:
    box = page.evaluate(
        """selector => { const node = document.querySelector(selector); const box = node.getBoundingClientRect();
             return {top: box.top, bottom: box.bottom, height: window.innerHeight,
                     focused: document.activeElement === node}; }""",
        selector,
    )
    assert box["focused"], f"{selector} does not have the focus"
    assert 0 <= box["top"] < box["height"] and box["bottom"] > 0, f"{selector} is out of view: {box}"


def _fill_upload(page, data: bytes, model: str) -> None:
    page.get_by_label("Benchmark and split").select_option("nlvr2/dev")
    page.get_by_label("Prediction file").set_input_files({"name": "bad.csv", "mimeType": "text/csv", "buffer": data})
    page.get_by_label("Model name").fill(model)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_refused_upload_puts_its_summary_in_view_focused_and_linked_to_the_field(
    browser, site, world, sync_api, viewport
):
    expect = sync_api.expect
    tag = "desktop" if viewport is DESKTOP else "phone"
    bad = synthetic.predictions("nlvr2", site.dev_gold, 0.7, seed=4).replace(b"True", b"maybe", 2)
    with window(browser, site, viewport, login=MEMBER) as page:
        # The page's own upload (the script's request): the summary comes back into view with the focus.
        page.goto("/submit")
        _fill_upload(page, bad, "Refused model")
        page.get_by_role("button", name="Upload and score").click()
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("line")
        expect(alert).to_be_focused()
        _in_view_and_focused(page, "#upload-errors")
        assert alert.get_attribute("tabindex") == "-1"
        links = alert.locator("a")
        assert links.count() >= 2  # the summary and each problem
        assert set(links.evaluate_all("links => links.map(link => link.getAttribute('href'))")) == {"#file"}
        screenshot(page, f"readable-refused-upload-{tag}", full_page=False)
        links.nth(1).click()
        expect(page.locator("#file")).to_be_focused()

        # The page the server answers (a form sent without the script): focused on load, links to the field.
        page.goto("/submit")
        _fill_upload(page, bad, "")
        page.evaluate("document.getElementById('upload-form').submit()")  # no submit event: a plain POST
        page.wait_for_load_state()
        expect(alert).to_be_focused()
        _in_view_and_focused(page, "#upload-errors")
        expect(alert.locator('a[href="#model_name"]')).to_contain_text("Model name")
        alert.locator('a[href="#model_name"]').click()
        expect(page.locator("#model_name")).to_be_focused()

        page.goto("/submit")
        _fill_upload(page, bad, "Refused again")
        page.evaluate("document.getElementById('upload-form').submit()")
        page.wait_for_load_state()
        expect(alert).to_be_focused()
        _in_view_and_focused(page, "#upload-errors")
        expect(alert.locator("li a").first).to_have_attribute("href", "#file")
        expect(page.locator("#dropzone .field-error")).to_contain_text("line")
        screenshot(page, f"readable-refused-upload-page-{tag}", full_page=False)
