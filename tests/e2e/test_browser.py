"""In a real browser: a participant registers, forms a team, uploads predictions while the progress bar runs,
publishes, finds the entry on the leaderboard, sorts it and downloads the CSV; a maintainer adds a split
from the console. Screenshots of each page land in tests/e2e/artifacts/ for a person to look at."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from sqlalchemy import select

from app import synthetic
from app.db import db
from app.models import Score
from tests.e2e.conftest import ADMIN, local_page, screenshot

# One gunicorn server and one Chromium for the module (`site`, `browser`), started once: make test hands
# a module whole to one worker (--dist loadfile).

# Reports every change of the upload page's progress bar to the test, across the navigation that follows.
WATCH_PROGRESS = """
document.addEventListener("DOMContentLoaded", () => {
  const bar = document.getElementById("upload-progress");
  if (!bar) { return; }
  const report = () => window.holdoutProgress(bar.hidden, Number(bar.value));
  new MutationObserver(report).observe(bar, {attributes: true, attributeFilter: ["value", "hidden"]});
});
"""


def _scores(site, submission_ids, metric: str) -> dict[int, float]:
    app = site.app()
    with app.app_context():
        rows = db.session.execute(
            select(Score.submission_id, Score.value).where(
                Score.submission_id.in_(submission_ids), Score.subset == "all", Score.metric == metric
            )
        ).all()
        db.engine.dispose()
    return dict(rows)


def _row_ids(page) -> list[int]:
    return [
        int(value)
        for value in page.locator("tr.entry").evaluate_all("rows => rows.map(row => row.dataset.submissionId)")
    ]


def _no_horizontal_scroll(page) -> bool:
    """The page itself fits the window; wide tables scroll inside their own box."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def _log_in(page, email: str, password: str) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))


def test_participant_uploads_publishes_sorts_and_downloads(page, site, sync_api, browser):
    expect = sync_api.expect
    email, password = "ada@example.org", "ada-password-1"

    page.goto("/register")
    expect(page).to_have_title("Register · Holdout")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Create account").click()
    # The same answer whether the address had an account or not, and no session until the mailed link is followed.
    expect(page.get_by_text(f"A mail is on its way to {email}")).to_be_visible()
    page.goto(site.mailed_link(email, "/account/verify/"))
    expect(page.get_by_text(f"Thank you: {email} is confirmed.")).to_be_visible()
    _log_in(page, email, password)
    page.goto("/teams")

    page.get_by_label("Team name").fill("Vision Lab")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_text("Created team Vision Lab.")).to_be_visible()

    # Upload, watching the progress bar from the click to the scores page.
    progress: list[tuple[bool, float]] = []
    page.expose_function("holdoutProgress", lambda hidden, value: progress.append((hidden, value)))
    page.add_init_script(WATCH_PROGRESS)
    page.get_by_role("link", name="Submit").click()
    expect(page).to_have_title("Submit predictions · Holdout")
    predictions = synthetic.predictions("nlvr2", site.dev_gold, 0.74, seed=3)
    page.get_by_label("Benchmark and split").select_option("nlvr2/dev")
    page.get_by_label("Prediction file").set_input_files(
        {"name": "predictions.csv", "mimeType": "text/csv", "buffer": predictions}
    )
    page.get_by_label("Model name").fill("Ada <Net>")
    page.get_by_role("button", name="Upload and score").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+$"))
    submission_id = int(page.url.rsplit("/", 1)[1])
    shown = [value for hidden, value in progress if not hidden]
    assert shown, f"the progress bar never showed: {progress}"
    assert shown[-1] == 100 and shown == sorted(shown), progress

    expect(page.locator("h1")).to_have_text("Ada <Net>")
    expect(page.get_by_role("heading", name="Scores")).to_be_visible()
    accuracy = _scores(site, [submission_id], "accuracy")[submission_id]
    expect(page.locator("main")).to_contain_text(f"{accuracy:.1f}")
    screenshot(page, "submission-scored")

    page.get_by_label("Description").fill("A small model with a big heart.")
    page.get_by_label("Paper URL").fill("https://example.org/ada")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("main")).to_contain_text("published")
    screenshot(page, "submission-published")

    # The entry on the leaderboard.
    page.goto("/leaderboards/nlvr2/dev")
    expect(page).to_have_title(re.compile(r"NLVR2.*Dev.*· Holdout"))
    row = page.locator(f'tr.entry[data-submission-id="{submission_id}"]')
    expect(row).to_contain_text("Ada <Net>")
    expect(row).to_contain_text("Vision Lab")
    assert _row_ids(page)[:1] and set(_row_ids(page)) == {*site.seeded, submission_id}
    assert _no_horizontal_scroll(page)
    screenshot(page, "leaderboard")

    # Sort by consistency: descending, then ascending on a second click of the same header.
    consistency = _scores(site, _row_ids(page), "consistency")
    page.locator('a.sort[href*="sort=all:consistency&"]').click()
    expect(page).to_have_url(re.compile(r"sort=all(:|%3A)consistency&order=desc"))
    descending = [consistency[i] for i in _row_ids(page)]
    assert len(descending) == 4 and descending == sorted(descending, reverse=True)
    page.locator('a.sort[href*="sort=all:consistency&"]').click()
    expect(page).to_have_url(re.compile(r"sort=all(:|%3A)consistency&order=asc"))
    ascending = [consistency[i] for i in _row_ids(page)]
    assert ascending == sorted(ascending)
    screenshot(page, "leaderboard-sorted")

    # The CSV export, as a download.
    with page.expect_download() as download_info:
        page.get_by_role("link", name="CSV", exact=True).click()
    download = download_info.value
    assert download.suggested_filename == "nlvr2-dev.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    entries = [r for r in rows if r["type"] == "entry"]
    assert {r["model"] for r in entries} == {"Ada <Net>", "Baseline 1", "Baseline 2", "Baseline 3"}
    ours = next(r for r in entries if r["model"] == "Ada <Net>")
    assert ours["team"] == "Vision Lab" and ours["paper_url"] == "https://example.org/ada"
    assert float(ours["all:accuracy"]) == round(accuracy, 6)
    assert float(ours["all:accuracy ci_low"]) <= accuracy <= float(ours["all:accuracy ci_high"])
    assert sorted(int(r["rank"]) for r in entries)[0] == 1

    # The same leaderboard on a phone: the page fits the screen, the table scrolls in its box.
    phone = browser.new_context(
        base_url=site.base,
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        small = phone.new_page()
        small.goto("/leaderboards/nlvr2/dev")
        expect(small.locator(f'tr.entry[data-submission-id="{submission_id}"]')).to_be_attached()
        assert _no_horizontal_scroll(small)
        screenshot(small, "leaderboard-phone")
        small.goto(f"/submissions/{submission_id}")
        screenshot(small, "submission-phone")
    finally:
        phone.close()


def test_maintainer_adds_a_split_from_the_console(page, site, sync_api):
    expect = sync_api.expect
    page.goto("/login")
    page.get_by_label("Email").fill(ADMIN[0])
    page.get_by_label("Password").fill(ADMIN[1])
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="Console").click()
    expect(page).to_have_title("Console · Holdout")
    expect(page.locator("#split-nlvr2-dev")).to_contain_text("Dev")
    assert _no_horizontal_scroll(page)
    screenshot(page, "console-overview")

    page.get_by_role("navigation", name="Console").get_by_role("link", name="Add a split").click()
    expect(page).to_have_title("Add a split · Console · Holdout")
    gold = synthetic.nlvr2_gold(240, split="test1", seed=9)
    page.get_by_label("Benchmark").select_option("nlvr2")
    page.get_by_label("Split slug").fill("test-p")
    page.get_by_label("Display name").fill("Test-P")
    page.get_by_label("Gold file (JSON lines)").set_input_files(
        {"name": "test1.json", "mimeType": "application/json", "buffer": gold}
    )
    page.get_by_role("button", name="Add the split").click()
    expect(page).to_have_url(re.compile(r"/console/splits/nlvr2/test-p$"))
    expect(page.get_by_role("status")).to_contain_text("Added split nlvr2/test-p (240 examples")
    expect(page.locator("main")).to_contain_text("balanced")
    screenshot(page, "console-split")
    page.set_viewport_size({"width": 390, "height": 844})
    assert _no_horizontal_scroll(page)
    screenshot(page, "console-split-phone")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Hide a published entry with a reason, see it leave the leaderboard, and bring it back.
    hidden_id = site.seeded[0]
    page.goto("/console/splits/nlvr2/dev")
    row = page.locator(f"#entry-{hidden_id}")
    row.get_by_label(f"Reason for hiding entry {hidden_id}").fill("Same predictions as another entry.")
    row.get_by_role("button", name="Hide").click()
    expect(page.get_by_role("status")).to_contain_text(f"Hid entry {hidden_id}")
    expect(page.locator(f"#entry-{hidden_id}")).to_contain_text("Same predictions as another entry.")
    screenshot(page, "console-entries")
    page.goto("/leaderboards/nlvr2/dev")
    expect(page.locator(f'tr.entry[data-submission-id="{hidden_id}"]')).to_have_count(0)
    page.goto("/console/splits/nlvr2/dev")
    page.locator(f"#entry-{hidden_id}").get_by_role("button", name="Unhide").click()
    expect(page.get_by_role("status")).to_contain_text("is shown again")
    page.goto("/leaderboards/nlvr2/dev")
    expect(page.locator(f'tr.entry[data-submission-id="{hidden_id}"]')).to_have_count(1)

    page.goto("/console/audit")
    actions = page.locator("table.console-audit tbody tr td:nth-child(3)").all_inner_texts()
    assert actions[:3] == ["entry.unhide", "entry.hide", "split.add"], actions
    expect(page.locator("table.console-audit tbody tr").first).to_contain_text(ADMIN[0])
    screenshot(page, "console-audit")

    # The new split is on the benchmark's public page.
    page.goto("/leaderboards/nlvr2")
    expect(page.get_by_role("link", name="Test-P", exact=True)).to_be_visible()
    page.get_by_role("link", name="Test-P", exact=True).click()
    expect(page).to_have_url(re.compile(r"/leaderboards/nlvr2/test-p$"))


def test_a_forgotten_password_is_reset_from_a_mailed_link_that_works_once(page, site, sync_api, browser):
    expect = sync_api.expect
    email = "forgetful@example.org"
    with site.app().app_context():
        from app.services.people import accounts

        accounts.create_user(email, "the-old-password")
        db.engine.dispose()
    # A second browser is logged in already: the reset ends its session too.
    with local_page(browser, site) as elsewhere:
        elsewhere.goto("/login")
        elsewhere.get_by_label("Email").fill(email)
        elsewhere.get_by_label("Password").fill("the-old-password")
        elsewhere.get_by_role("button", name="Log in").click()
        expect(elsewhere.get_by_text(email)).to_be_visible()

        page.goto("/login")
        page.get_by_role("link", name="Forgot your password?").click()
        expect(page).to_have_title("Forgot your password · Holdout")
        page.get_by_label("Email").fill(email)
        page.get_by_role("button", name="Mail me a link").click()
        expect(page.get_by_text("If an account has this address")).to_be_visible()
        screenshot(page, "password-forgot-sent")

        link = site.mailed_link(email, "/password/reset/")
        page.goto(link)
        expect(page).to_have_title("Choose a new password · Holdout")
        page.get_by_label("New password").fill("the-new-password")
        screenshot(page, "password-reset")
        page.get_by_role("button", name="Set the new password").click()
        expect(page).to_have_url(re.compile(r"/login$"))
        expect(page.get_by_text("Your password is changed")).to_be_visible()
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill("the-new-password")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("button", name="Log out")).to_be_visible()

        elsewhere.goto("/account")
        expect(elsewhere).to_have_url(re.compile(r"/login"))
    page.goto(link)  # a second use
    expect(page.get_by_text("this reset link is not valid")).to_be_visible()


def test_error_page_in_the_browser(page, sync_api):
    response = page.goto("/no/such/page")
    assert response.status == 404
    sync_api.expect(page).to_have_title("Not found (404) · Holdout")
    screenshot(page, "error-404")


def test_a_phone_sees_rank_model_and_primary_score_and_the_rest_scrolls(browser, site, sync_api):
    """At 390 px the first entry's rank, model and primary score are inside the viewport (element boxes);
    scrolling the table sideways keeps the rank and model columns in place; a tap on a chart point opens
    the entry."""
    expect = sync_api.expect
    phone = browser.new_context(
        base_url=site.base,
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        small = phone.new_page()
        small.goto("/leaderboards/nlvr2/dev")
        table = small.locator("table.leaderboard")
        table.scroll_into_view_if_needed()
        first = small.locator("tbody tr.entry").first
        boxes = {
            name: first.locator(selector).bounding_box()
            for name, selector in (("rank", "td.rank"), ("model", "th.model"), ("primary", "td.primary"))
        }
        header = small.locator("thead th.primary").bounding_box()
        for name, box in [*boxes.items(), ("primary header", header)]:
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
        assert boxes["rank"]["x"] < boxes["model"]["x"] < boxes["primary"]["x"]
        assert _no_horizontal_scroll(small)
        screenshot(small, "leaderboard-phone-390", full_page=False)
        # The rest scrolls inside its box; rank and model stay where they were.
        small.locator(".table-wrap").evaluate("box => { box.scrollLeft = 400; }")
        moved = first.locator("th.model").bounding_box()
        assert abs(moved["x"] - boxes["model"]["x"]) < 1
        assert first.locator("td.primary").bounding_box()["x"] < boxes["primary"]["x"]
        screenshot(small, "leaderboard-phone-390-scrolled", full_page=False)
        # A tap on a chart point opens that entry's page.
        point = small.locator("figure.chart svg a").first
        point.scroll_into_view_if_needed()
        href = point.get_attribute("href")
        point.locator("circle").tap()
        expect(small).to_have_url(re.compile(re.escape(href) + "$"))
        small.goto("/leaderboards/nlvr2/models")
        expect(small.locator("table.models")).to_be_visible()
        screenshot(small, "models-phone", full_page=False)
    finally:
        phone.close()


def test_newcomer_follows_submit_downloads_the_sample_and_sees_the_quota_go_down(page, site, sync_api):
    """From the board's "How to submit": the sample file, the Submit button with the split chosen, the
    quota left before the upload and after it."""
    expect = sync_api.expect
    from app.services import catalog

    app = site.app()
    with app.app_context():
        catalog.set_policy("nlvr2", "dev", per_day=5, per_month=20)
        db.engine.dispose()

    page.goto("/register")
    page.get_by_label("Email").fill("newcomer@example.org")
    page.get_by_label("Password").fill("newcomer-password")
    page.get_by_role("button", name="Create account").click()
    page.goto(site.mailed_link("newcomer@example.org", "/account/verify/"))
    _log_in(page, "newcomer@example.org", "newcomer-password")
    page.goto("/teams")
    page.get_by_label("Team name").fill("Newcomers")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_text("Created team Newcomers.")).to_be_visible()

    page.goto("/leaderboards/nlvr2/dev")
    section = page.locator("#how-to-submit")
    expect(section).to_contain_text("How to submit")
    expect(section).to_contain_text("identifier,prediction")
    expect(section).to_contain_text("5 a day")
    screenshot(page, "how-to-submit")
    with page.expect_download() as download_info:
        section.locator('a[href="/leaderboards/nlvr2/dev/sample.csv"]').click()
    download = download_info.value
    assert download.suggested_filename == "nlvr2-dev-sample.csv"
    sample = download.path()

    section.get_by_role("link", name="Submit to Dev").click()
    expect(page).to_have_title("Submit predictions · Holdout")
    expect(page.get_by_label("Benchmark and split")).to_have_value("nlvr2/dev")
    policy = page.locator(".policy-box:visible")
    expect(policy).to_have_count(1)
    expect(policy).to_contain_text("Dev")
    expect(policy.locator(".quota-left:visible .left-today")).to_have_text("5")
    screenshot(page, "submit-with-policy")

    page.get_by_label("Prediction file").set_input_files(str(sample))
    page.get_by_label("Model name").fill("Constant baseline")
    page.get_by_role("button", name="Upload and score").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+$"))
    expect(page.locator("#quota")).to_contain_text("Left today: 4")

    page.get_by_role("link", name="Submit").first.click()
    page.get_by_label("Benchmark and split").select_option("nlvr2/dev")
    expect(page.locator(".policy-box:visible .quota-left:visible .left-today")).to_have_text("4")
