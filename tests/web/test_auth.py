"""Registration, login and logout through the pages, with CSRF on as in production."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from flask_login import login_required
from werkzeug.security import check_password_hash

from app.db import db
from app.models import User
from app.services.people import accounts
from app.web.auth import safe_next
from tests.support.browser import csrf_token, login, logout, post_form, register

pytestmark = pytest.mark.postgres(
    reason=(
        "the login throttle's per-dialect upsert (services/people/throttle.py) and unique emails under each "
        "dialect's constraints"
    )
)

PASSWORD = "correct horse battery"


def make_user(app, email="ada@example.org", password=PASSWORD) -> int:
    with app.app_context():
        return accounts.create_user(email, password).id


def session_cookie(response) -> str:
    cookies = [c for c in response.headers.getlist("Set-Cookie") if c.startswith("session=")]
    assert cookies, "no session cookie was set"
    return cookies[-1]


def test_register_login_logout_flow(app, client):
    response = register(client, "Ada@Example.org", PASSWORD)
    assert response.status_code == 200
    assert "A mail is on its way to ada@example.org" in response.get_data(as_text=True)
    assert client.get("/account").status_code == 302  # not logged in: an address with an account is answered alike

    response = login(client, "ADA@example.org", PASSWORD)
    assert response.status_code == 302 and response.headers["Location"] == "/"
    page = client.get("/").get_data(as_text=True)
    assert "ada@example.org" in page and "Log out" in page

    response = logout(client)
    assert response.status_code == 302 and response.headers["Location"] == "/"
    page = client.get("/").get_data(as_text=True)
    assert "Log in" in page and "ada@example.org" not in page
    assert client.get("/account").status_code == 302

    response = login(client, "ADA@example.org", PASSWORD)
    assert response.status_code == 302 and response.headers["Location"] == "/"
    assert client.get("/account").status_code == 200


@pytest.mark.one_backend
def test_logout_needs_post(client):
    """On SQLite alone: a method check; the login's throttle upsert runs on both in the login tests above."""
    assert client.get("/logout").status_code == 405


@pytest.mark.parametrize(
    ("email", "password", "status", "message"),
    [
        ("not-an-email", PASSWORD, 422, "valid email"),
        ("bob@example.org", "short", 422, "at least 8 characters"),
    ],
)
def test_register_refuses_bad_input(app, client, email, password, status, message):
    make_user(app)
    response = register(client, email, password)
    assert response.status_code == status
    assert message in response.get_data(as_text=True)
    assert client.get("/account").status_code == 302  # not logged in


def test_register_with_missing_fields_is_400(client):
    response = register(client, "", "")
    assert response.status_code == 400
    assert "This field is required" in response.get_data(as_text=True)


@pytest.mark.real_password_hash  # the production hash (scrypt), not the tests' cheap one
def test_password_is_stored_hashed(app, client):
    register(client, "ada@example.org", PASSWORD)
    with app.app_context():
        user = db.session.scalar(db.select(User).where(User.email == "ada@example.org"))
        assert user.password_hash != PASSWORD and PASSWORD not in user.password_hash
        assert user.password_hash.startswith("scrypt:")
        assert check_password_hash(user.password_hash, PASSWORD)


@pytest.mark.one_backend
@pytest.mark.parametrize("path", ["/login", "/register", "/logout", "/teams", "/account/tokens"])
def test_post_without_csrf_token_is_refused(app, client, path):
    """On SQLite alone: a form token check; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    login(client, "ada@example.org", PASSWORD)
    response = client.post(path, data={"email": "ada@example.org", "password": PASSWORD, "name": "x"})
    assert response.status_code == 400
    assert client.get("/account").status_code == 200  # still logged in: the logout was refused too


@pytest.mark.one_backend
def test_post_with_a_forged_csrf_token_is_refused(app, client):
    """On SQLite alone: a form token check; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    response = client.post("/login", data={"email": "ada@example.org", "password": PASSWORD, "csrf_token": "forged"})
    assert response.status_code == 400


def test_wrong_password_and_unknown_email_get_the_same_401(app, client):
    make_user(app)
    wrong = login(client, "ada@example.org", "not the password")
    unknown = login(client, "nobody@example.org", PASSWORD)
    for response in (wrong, unknown):
        assert response.status_code == 401
        assert "Invalid email or password." in response.get_data(as_text=True)
    assert client.get("/account").status_code == 302


def test_login_is_throttled_after_ten_attempts_a_minute(app, client):
    make_user(app)
    for _ in range(10):
        assert login(client, "ada@example.org", "wrong password").status_code == 401
    response = login(client, "ada@example.org", PASSWORD)
    assert response.status_code == 429
    assert "Too many requests" in response.get_data(as_text=True)
    assert client.get("/account").status_code == 302
    assert client.get("/login").status_code == 200  # only POSTs count


@pytest.mark.one_backend
@pytest.mark.parametrize(
    "target",
    [
        "//evil.example",
        "https://evil.example",
        "/\\evil.example",
        "http:evil.example",
        "/\t/evil.example",
        "javascript:alert(1)",
        "evil.example",
        "///evil.example",
    ],
)
def test_next_never_leaves_the_site(app, client, target):
    """On SQLite alone: where the login redirects; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    response = post_form(
        client, f"/login?next={quote(target, safe='')}", {"email": "ada@example.org", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


@pytest.mark.one_backend
@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example", "/\\evil.example"])
def test_next_in_the_form_never_leaves_the_site(app, client, target):
    """On SQLite alone: where the login redirects; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    response = post_form(client, "/login", {"email": "ada@example.org", "password": PASSWORD, "next": target})
    assert response.headers["Location"] == "/"


@pytest.mark.one_backend
def test_local_next_is_honoured(app, client):
    """On SQLite alone: where the login redirects; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    response = post_form(client, "/login?next=%2Fteams%3Fx%3D1", {"email": "ada@example.org", "password": PASSWORD})
    assert response.headers["Location"] == "/teams?x=1"


def test_safe_next():
    assert safe_next("/leaderboards/nlvr2") == "/leaderboards/nlvr2"
    assert safe_next(None) == "/"
    assert safe_next("https://evil.example", default="/teams") == "/teams"


@pytest.mark.one_backend
def test_protected_page_sends_to_login_and_back(app, client):
    """On SQLite alone: where the login redirects; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    response = client.get("/account")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login?next=/account"
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert 'name="next" type="hidden" value="/account"' in page
    response = post_form(client, "/login?next=%2Faccount", {"email": "ada@example.org", "password": PASSWORD})
    assert response.headers["Location"] == "/account"


@pytest.mark.one_backend
def test_api_paths_get_401_json_instead_of_a_redirect(app, client):
    """On SQLite alone: the answer to no session; the login's throttle upsert runs on both in the login tests above."""
    app.add_url_rule("/api/probe", "probe", login_required(lambda: "ok"))
    response = client.get("/api/probe")
    assert response.status_code == 401
    assert response.json["error"] == "authentication required"


@pytest.mark.one_backend
def test_session_cookie_is_httponly_and_samesite_lax(app, client):
    """On SQLite alone: the cookie's flags; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    cookie = session_cookie(login(client, "ada@example.org", PASSWORD))
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie


@pytest.mark.one_backend
def test_session_is_rotated_on_login(app, client):
    """On SQLite alone: the session's handling; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    csrf_token(client, "/login")
    with client.session_transaction() as session:
        session["planted"] = "by an attacker"
    before = client.get_cookie("session").value
    response = login(client, "ada@example.org", PASSWORD)
    assert response.status_code == 302
    after = client.get_cookie("session").value
    assert after != before
    with client.session_transaction() as session:
        assert "planted" not in session
        assert session.get("_user_id")


@pytest.mark.one_backend
def test_logout_clears_the_session(app, client):
    """On SQLite alone: the session's handling; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    login(client, "ada@example.org", PASSWORD)
    logout(client)
    with client.session_transaction() as session:
        assert "_user_id" not in session


@pytest.mark.one_backend
def test_login_page_still_renders_when_logged_in(app, client):
    """On SQLite alone: a page's words; the login's throttle upsert runs on both in the login tests above."""
    make_user(app)
    login(client, "ada@example.org", PASSWORD)
    page = client.get("/login").get_data(as_text=True)
    assert "logging in again switches account" in page


def test_authenticate(ctx):
    user = accounts.create_user("Ada@Example.org ", PASSWORD)
    assert accounts.authenticate("ada@example.org", PASSWORD).id == user.id
    assert accounts.authenticate("ada@example.org", "wrong") is None
    assert accounts.authenticate("nobody@example.org", PASSWORD) is None
    assert accounts.authenticate("ada@example.org", "x" * 5000) is None
    assert accounts.get_user_by_email(" ADA@example.org").id == user.id
