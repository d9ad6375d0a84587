"""Issue 27: a team downloads the files it uploaded, byte for byte, and nobody else can (404: nothing says the
submission exists); /me and the Submit page say how many submissions are left on each open split."""

from __future__ import annotations

from tests.support.api_world import PASSWORD, build_world, post_file
from tests.support.browser import login

# A byte-order mark, CRLF line ends, a line without its end: a file whose bytes an editor would "fix".
BOM = b"\xef\xbb\xbf"


def _odd(data: bytes) -> bytes:
    return BOM + data.replace(b"\n", b"\r\n").rstrip(b"\r\n")


def _session(app, role: str):
    client = app.test_client()
    assert login(client, f"{role}@example.org", PASSWORD).status_code == 302
    return client


def test_only_the_team_and_maintainers_get_a_file_and_it_is_the_uploaded_bytes(app, client):
    world = build_world(app)
    data = _odd(world.predictions())
    created = post_file(client, world, "member", data)
    assert created.status_code == 201, created.json
    sid = created.json["id"]
    url = f"/api/v1/submissions/{sid}/file"

    answer = client.get(url, headers=world.headers("member"))
    assert answer.status_code == 200 and answer.get_data() == data
    assert answer.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert answer.headers["Content-Disposition"] == f'attachment; filename="nlvr2-dev-submission-{sid}.csv"'
    assert answer.headers["Cache-Control"] == "no-store"
    assert client.get(url, headers=world.headers("admin")).get_data() == data  # maintainers open any submission

    # Another team's member: 404, worded as for a submission that does not exist.
    refused, missing = (
        client.get(f"/api/v1/submissions/{i}/file", headers=world.headers("other")) for i in (sid, sid + 1000)
    )
    assert (refused.status_code, refused.json["error"]) == (404, f"no submission {sid}")
    assert (missing.status_code, missing.json["error"]) == (404, f"no submission {sid + 1000}")
    assert client.get(url).status_code == 401  # the API's answer to a request without a token, whatever the id

    # The browser's way, with a session: the link on the submission page.
    member = _session(app, "member")
    page = member.get(f"/submissions/{sid}").get_data(as_text=True)
    assert f'href="/submissions/{sid}/file"' in page
    download = member.get(f"/submissions/{sid}/file")
    assert download.status_code == 200 and download.get_data() == data
    assert download.headers["Cache-Control"] == "no-store"
    assert _session(app, "other").get(f"/submissions/{sid}/file").status_code == 404
    assert app.test_client().get(f"/submissions/{sid}/file").status_code == 404  # not logged in

    # A rejected file is not kept: its team is told so.
    assert post_file(client, world, "member", b"not,a\nprediction file\n").status_code == 422
    rejected = client.get("/api/v1/submissions?limit=1", headers=world.headers("member")).json["submissions"][0]
    assert rejected["status"] == "rejected"
    gone = client.get(f"/api/v1/submissions/{rejected['id']}/file", headers=world.headers("member"))
    assert gone.status_code == 404 and "rejected files are not kept" in gone.json["error"]


def test_me_and_the_submit_page_say_what_is_left_on_each_open_split(app, client):
    world = build_world(app)
    sent = post_file(client, world, "member", world.predictions("test-u"), split="test-u")
    assert sent.status_code == 201, sent.json
    quotas = client.get("/api/v1/me", headers=world.headers("member")).json["quotas"]
    by_split = {(q["benchmark"], q["split"], q["team"]): q for q in quotas}
    assert set(by_split) == {("nlvr2", "dev", "Lab"), ("nlvr2", "test-u", "Lab")}
    hidden = by_split[("nlvr2", "test-u", "Lab")]
    # The hidden split's default policy: 5 a day, 20 a month, no total (null: unlimited), one used.
    assert hidden["limits"] == {"per_day": 5, "per_month": 20, "total": None}
    assert hidden["used"] == {"today": 1, "month": 1, "total": 1}
    assert hidden["left"] == {"today": 4, "month": 19, "total": None}
    assert hidden["left"] == sent.json["quota"]["left"]  # what the upload's answer said, counted the same way
    assert by_split[("nlvr2", "dev", "Lab")]["left"] == {"today": None, "month": None, "total": None}
    assert client.get("/api/v1/me", headers=world.headers("admin")).json["quotas"] == []  # in no team

    page = _session(app, "member").get("/submit?split=nlvr2/test-u").get_data(as_text=True)
    box = page.split('data-split="nlvr2/test-u"')[1].split("</div>")[0]
    assert 'today <strong class="left-today">4</strong>' in box and "this month <strong>19</strong>" in box
