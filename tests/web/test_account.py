"""API tokens on the account page: shown once, stored hashed, revocable."""

from __future__ import annotations

import re

import pytest

from app.db import db
from app.http.security import bearer_token
from app.models import ApiToken
from app.services.errors import InvalidInput, NotFound
from app.services.people import accounts
from tests.support.browser import login, post_form

PASSWORD = "correct horse battery"
TOKEN = re.compile(r"hd_[A-Za-z0-9_-]{43}")


def logged_in(app, email="ada@example.org"):
    with app.app_context():
        accounts.create_user(email, PASSWORD)
    client = app.test_client()
    assert login(client, email, PASSWORD).status_code == 302
    return client


def bearer_user(app, token: str):
    with app.app_context():
        user = accounts.user_for_token(bearer_token(f"Bearer {token}"))
        return user.email if user else None


def test_new_token_is_shown_once_and_stored_hashed(app):
    client = logged_in(app)
    assert "No tokens yet" in client.get("/account").get_data(as_text=True)
    response = post_form(client, "/account/tokens", {"name": "upload script"}, form_page="/account")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    tokens = TOKEN.findall(response.get_data(as_text=True))
    assert len(set(tokens)) == 1
    token = tokens[0]

    page = client.get("/account").get_data(as_text=True)
    assert token not in page
    assert "upload script" in page and token[:10] in page and "never" in page
    with client.session_transaction() as session:
        assert token not in repr(dict(session))

    with app.app_context():
        row = db.session.scalar(db.select(ApiToken))
        assert row.token_hash == accounts.token_digest(token)
        assert row.prefix == token[:10]
        assert token not in (row.token_hash, row.prefix, row.name)
    assert bearer_user(app, token) == "ada@example.org"


def test_revoked_token_no_longer_authenticates(app):
    client = logged_in(app)
    tokens = {}
    for name in ("old", "kept"):
        response = post_form(client, "/account/tokens", {"name": name}, form_page="/account")
        tokens[name] = TOKEN.search(response.get_data(as_text=True)).group(0)
    with app.app_context():
        old_id = db.session.scalar(db.select(ApiToken.id).where(ApiToken.name == "old"))
    assert bearer_user(app, tokens["old"]) == "ada@example.org"

    response = post_form(client, f"/account/tokens/{old_id}/revoke", form_page="/account")
    assert response.status_code == 302 and response.headers["Location"] == "/account"
    assert bearer_user(app, tokens["old"]) is None
    assert bearer_user(app, tokens["kept"]) == "ada@example.org"
    page = client.get("/account").get_data(as_text=True)
    assert "Token &#39;old&#39; is revoked" in page
    assert page.count("Revoke</button>") == 1  # only "kept" still has a button
    # Revoking again is harmless and keeps the first time.
    with app.app_context():
        first = db.session.get(ApiToken, old_id).revoked_at
    assert post_form(client, f"/account/tokens/{old_id}/revoke", form_page="/account").status_code == 302
    with app.app_context():
        assert db.session.get(ApiToken, old_id).revoked_at == first


def test_someone_elses_token_cannot_be_revoked(app):
    with app.app_context():
        bob = accounts.create_user("bob@example.org", PASSWORD)
        token, plaintext = accounts.create_token(bob, "bob's")
        token_id = token.id
    ada = logged_in(app)
    assert post_form(ada, f"/account/tokens/{token_id}/revoke", form_page="/account").status_code == 404
    assert post_form(ada, "/account/tokens/9999/revoke", form_page="/account").status_code == 404
    assert bearer_user(app, plaintext) == "bob@example.org"
    assert "bob&#39;s" not in ada.get("/account").get_data(as_text=True)


@pytest.mark.parametrize("name", ["", " ", "x" * 81])
def test_token_name_must_have_1_to_80_characters(app, name):
    client = logged_in(app)
    response = post_form(client, "/account/tokens", {"name": name}, form_page="/account")
    assert response.status_code in (400, 422)
    assert not TOKEN.search(response.get_data(as_text=True))
    with app.app_context():
        assert db.session.scalar(db.select(ApiToken)) is None


def test_token_services(ctx):
    ada = accounts.create_user("ada@example.org", PASSWORD)
    bob = accounts.create_user("bob@example.org", PASSWORD)
    token, plaintext = accounts.create_token(ada, "  laptop ")
    assert token.name == "laptop" and plaintext.startswith("hd_") and len(plaintext) == 46
    assert token.prefix == plaintext[:10] and token.token_hash == accounts.token_digest(plaintext)
    assert accounts.user_for_token(bearer_token(f"Bearer {plaintext}")).id == ada.id
    with pytest.raises(InvalidInput):
        accounts.create_token(ada, "x" * 81)
    with pytest.raises(NotFound):
        accounts.revoke_token(bob, token.id)
    assert accounts.revoke_token(ada, token.id).revoked_at is not None
    assert accounts.user_for_token(bearer_token(f"Bearer {plaintext}")) is None
    assert [t.name for t in accounts.list_tokens(ada)] == ["laptop"]
