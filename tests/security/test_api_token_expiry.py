"""API token expiry (issue 27): an expired token is refused at the second it expires, an expired or revoked one
is never noted as used, and the account form makes tokens only with the expiries it offers.

A test whose docstring says FAILS demonstrated a problem found in a hostile review of issue 27 (each is fixed,
and the test now guards the fix); every other one pins behaviour that held under attack."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
import time_machine
from sqlalchemy import func, select

from app.db import db
from app.models import ApiToken, Team, utcnow
from app.services.people import accounts
from tests.support.blind_test_world import api_upload, public_split
from tests.support.browser import login, post_form
from tests.support.users import PASSWORD, bearer, make_user


def test_expired_api_tokens_are_refused_at_the_second_they_expire(mail_app):
    with mail_app.app_context():
        gold = public_split()
        lab = Team(name="Lab", slug="lab")
        db.session.add(lab)
        db.session.commit()
        token_row, token = accounts.create_token(make_user("ann@example.org", team=lab), "ci", expires_in_days=1)
        expires = token_row.expires_at
    client = mail_app.test_client()
    with time_machine.travel(expires.replace(tzinfo=UTC) if expires.tzinfo is None else expires, tick=False):
        assert client.get("/api/v1/me", headers=bearer(token)).status_code == 401
        assert api_upload(client, token, gold).status_code == 401


def test_an_expired_or_revoked_token_is_refused_and_never_noted_as_used(app, client):
    with app.app_context():
        public_split()
        ann = make_user("ann@example.org")
        expiring, expiring_token = accounts.create_token(ann, "expiring", expires_in_days=7)
        revoked, revoked_token = accounts.create_token(ann, "revoked")
        accounts.revoke_token(ann, revoked.id)
        ids = (expiring.id, revoked.id)
    with time_machine.travel(utcnow() + timedelta(days=7, seconds=1), tick=False):
        for token in (expiring_token, revoked_token):
            answer = client.get("/api/v1/me", headers=bearer(token))
            assert answer.status_code == 401 and answer.headers["WWW-Authenticate"].startswith("Bearer")
            assert client.get("/api/v1/submissions", headers=bearer(token)).status_code == 401
    with app.app_context():
        assert [db.session.get(ApiToken, i).last_used_at for i in ids] == [None, None]


@pytest.mark.parametrize("days", ["1", "3650", "0", "-7", "7.5", "1e3", "99999999999999999999", "seven"])
def test_the_account_form_makes_tokens_only_with_the_expiries_it_offers(app, days):
    with app.app_context():
        make_user("ann@example.org")
    browser = app.test_client()
    assert login(browser, "ann@example.org", PASSWORD).status_code == 302
    answer = post_form(browser, "/account/tokens", {"name": "odd", "expires_in_days": days}, form_page="/account")
    assert answer.status_code in (400, 422), (days, answer.status_code)
    assert "hd_" not in answer.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(ApiToken)) == 0
