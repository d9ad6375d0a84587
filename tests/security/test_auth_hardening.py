"""Accounts and requests: open redirects, session fixation, login throttling, API tokens (hashed at rest,
shown once, revocable), and upload limits enforced before a body is read whole."""

from __future__ import annotations

import gzip
import html
import io
import re
from urllib.parse import quote, unquote, urlsplit

import pytest
from sqlalchemy import select, text

from app import synthetic
from app.db import db
from app.models import ApiToken
from tests.security import crawler
from tests.support.browser import csrf_token, login, post_form
from tests.support.security_world import EMAILS, build, table_counts
from tests.support.users import PASSWORD, make_user

REDIRECTS = [
    "//evil.example",
    "https://evil.example/",
    "/\\evil.example",
    "\\\\evil.example",
    "http:evil.example",
    "/\t/evil.example",
    "javascript:alert(1)",
    "/%2F%2Fevil.example",
    "%2F%2Fevil.example",
    "///evil.example",
    "https:/evil.example",
    "/\r\nLocation: https://evil.example",
    "evil.example",
    "／/evil.example",
]


def _is_local(location: str) -> bool:
    parts = urlsplit(location)
    return (
        location.startswith("/")
        and not location.startswith(("//", "/\\"))
        and not parts.scheme
        and not parts.netloc
        and "\\" not in location
        and not any(ord(c) < 0x21 for c in location)
    )


@pytest.fixture
def account(app):
    """Just the owner's account (the redirect and session tests need no benchmark)."""
    with app.app_context():
        make_user(EMAILS["owner"])


@pytest.mark.parametrize("target", REDIRECTS)
def test_login_and_register_never_redirect_off_site(app, account, target):
    client = app.test_client()
    response = post_form(
        client, f"/login?next={quote(target, safe='')}", {"email": EMAILS["owner"], "password": PASSWORD}
    )
    assert response.status_code == 302 and _is_local(response.headers["Location"]), response.headers["Location"]
    client = app.test_client()
    response = post_form(client, "/login", {"email": EMAILS["owner"], "password": PASSWORD, "next": target})
    assert _is_local(response.headers["Location"]), response.headers["Location"]
    client = app.test_client()
    response = post_form(
        client,
        f"/register?next={quote(target, safe='')}",
        {"email": f"new{abs(hash(target))}@example.org", "password": "long enough password"},
    )
    # Registering logs nobody in (the answer is the same for a taken address): the page's way on is a login link.
    assert response.status_code == 200
    (link,) = re.findall(r'<p><a href="(/login[^"]*)">Log in</a></p>', response.get_data(as_text=True))
    next_ = urlsplit(html.unescape(link)).query.partition("next=")[2]
    assert not next_ or _is_local(unquote(next_)), link


def test_session_is_fresh_after_login(app, account):
    """Whatever an attacker planted in a visitor's session (or the session itself) does not survive login."""
    client = app.test_client()
    csrf_token(client, "/login")
    with client.session_transaction() as session:
        session["planted"] = "by an attacker"
    planted_cookie = client.get_cookie("session").value
    response = login(client, EMAILS["owner"], PASSWORD)
    assert response.status_code == 302
    assert client.get_cookie("session").value != planted_cookie
    with client.session_transaction() as session:
        assert "planted" not in session and session["_user_id"]
    # The attacker's copy of the cookie from before the login is not logged in by the victim's login.
    stale = app.test_client()
    stale.set_cookie("session", planted_cookie)
    assert stale.get("/account").status_code == 302


def test_logout_ends_the_session(app, account):
    client = crawler.logged_in_client(app, "owner")
    assert client.get("/account").status_code == 200
    post_form(client, "/logout", form_page="/account")
    assert client.get("/account").status_code == 302
    with client.session_transaction() as session:
        assert "_user_id" not in session


def test_login_attempts_are_throttled_per_address(app, account):
    client = app.test_client()
    statuses = [login(client, f"guess{i}@example.org", "wrong password").status_code for i in range(10)]
    assert statuses == [401] * 10
    # The eleventh attempt in the minute is refused, even with the right password and another email.
    assert login(client, EMAILS["owner"], PASSWORD).status_code == 429
    assert client.get("/account").status_code == 302
    other_address = app.test_client()
    assert login(other_address, EMAILS["owner"], PASSWORD, environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code == 302


def test_api_tokens_are_hashed_at_rest_shown_once_and_revocable(app):
    world = build(app)
    client = crawler.logged_in_client(app, "owner")
    response = post_form(client, "/account/tokens", {"name": "laptop"}, form_page="/account")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    plaintext = re.search(r'id="new-token"[^>]*value="(hd_[^"]+)"', page).group(1)
    assert response.headers["Cache-Control"] == "no-store"
    assert plaintext not in client.get("/account").get_data(as_text=True)  # shown once
    # Nothing in the database holds a plaintext token: not the new one, not the world's.
    with app.app_context():
        dump = (
            "\n".join(line for line in db.session.connection().connection.iterdump())
            if db.engine.dialect.name == "sqlite"
            else _postgres_dump()
        )
        rows = db.session.scalars(select(ApiToken)).all()
        assert all(len(row.token_hash) == 64 and row.prefix == row.prefix[:10] for row in rows)
    for token in [plaintext, *world.tokens.values()]:
        assert token not in dump
    headers = {"Authorization": f"Bearer {plaintext}"}
    assert client.get("/api/v1/submissions", headers=headers).status_code == 200
    with app.app_context():
        token_id = db.session.scalar(select(ApiToken.id).where(ApiToken.name == "laptop"))
    post_form(client, f"/account/tokens/{token_id}/revoke", form_page="/account")
    answer = client.get("/api/v1/submissions", headers=headers)
    assert answer.status_code == 401 and "revoked" in answer.json["error"]
    # Another user cannot revoke (or learn about) someone else's token.
    other = crawler.logged_in_client(app, "other")
    with app.app_context():
        owners_token = db.session.scalar(
            select(ApiToken.id).where(ApiToken.name == "security tests").order_by(ApiToken.id)
        )
    assert post_form(other, f"/account/tokens/{owners_token}/revoke", form_page="/account").status_code == 404
    assert client.get("/api/v1/submissions", headers=world.headers("owner")).status_code == 200


def _postgres_dump() -> str:
    tables = [row[0] for row in db.session.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))]
    return "\n".join(str(row) for table in tables for row in db.session.execute(text(f'SELECT * FROM "{table}"')))


class CountingStream(io.RawIOBase):
    """An endless request body that counts how much of it the server read."""

    def __init__(self):
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), 65536)
        buffer[:size] = b"x" * size
        self.consumed += size
        return size


@pytest.mark.parametrize("path", ["/api/v1/submissions", "/submit"])
def test_oversized_bodies_are_refused_before_they_are_read(app, path):
    world = build(app)
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    client = crawler.logged_in_client(app, "owner")
    before = table_counts(app)
    stream = CountingStream()
    response = client.post(
        path,
        content_type="multipart/form-data; boundary=----x",
        headers=world.headers("owner"),
        environ_overrides={"wsgi.input": stream, "CONTENT_LENGTH": str(200 * 1024 * 1024)},
    )
    assert response.status_code == 413
    assert stream.consumed == 0
    # Without a declared length (chunked), reading stops at the limit.
    stream = CountingStream()
    response = client.post(
        path,
        content_type="multipart/form-data; boundary=----x",
        headers=world.headers("owner"),
        environ_overrides={
            "wsgi.input": stream,
            "CONTENT_LENGTH": "",
            "HTTP_TRANSFER_ENCODING": "chunked",
            "wsgi.input_terminated": True,
        },
    )
    assert response.status_code in (400, 413)
    assert stream.consumed <= 2 * 1024 * 1024
    assert table_counts(app) == before


def test_upload_over_the_file_limit_is_413_and_stores_nothing(app):
    world = build(app)
    app.config["MAX_UPLOAD_MB"] = 1
    app.config["MAX_CONTENT_LENGTH"] = 4 * 1024 * 1024
    before = table_counts(app)
    big = b"x" * (1024 * 1024 + 10)
    response = app.test_client().post(
        "/api/v1/submissions",
        headers=world.headers("owner"),
        content_type="multipart/form-data",
        data={"benchmark": "nlvr2", "split": "dev", "model_name": "m", "file": (io.BytesIO(big), "p.csv")},
    )
    assert response.status_code == 413 and "1 MB" in response.json["error"]
    assert table_counts(app) == before


def test_compressed_uploads_are_not_inflated(app):
    """Compressed files are not accepted: a gzip file is refused as binary, and a gzip request encoding is
    not decoded, so a small body can never expand past the limit."""
    world = build(app)
    data = synthetic.predictions("nlvr2", world.gold["dev"], 0.8)
    packed = gzip.compress(data)
    client = app.test_client()
    response = client.post(
        "/api/v1/submissions",
        headers=world.headers("owner"),
        content_type="multipart/form-data",
        data={"benchmark": "nlvr2", "split": "dev", "model_name": "m", "file": (io.BytesIO(packed), "p.csv.gz")},
    )
    assert response.status_code == 422 and "binary" in response.json["error"]
    bomb = gzip.compress(b"0" * (50 * 1024 * 1024))
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    response = client.post(
        "/api/v1/submissions",
        headers={**world.headers("owner"), "Content-Encoding": "gzip"},
        content_type="multipart/form-data; boundary=----x",
        data=bomb,
    )
    assert response.status_code in (400, 413, 415, 422)


def test_registrations_are_throttled_per_address(app):
    client = app.test_client()
    statuses = [
        post_form(client, "/register", {"email": f"bot{i}@example.org", "password": "short"}).status_code
        for i in range(10)
    ]
    assert 429 not in statuses
    response = post_form(client, "/register", {"email": "bot@example.org", "password": "long enough password"})
    assert response.status_code == 429
    assert table_counts(app)["users"] == 0
