"""The login throttle holds across servers: two gunicorn servers with 2 workers each on one database
(SQLite file or PostgreSQL), 40 wrong passwords from one address sent in parallel to both. Exactly the
limit (10 a minute) is answered 401 and the rest 429, and then the right password is refused too; with
per-worker counters 4 workers let about 40 through (the issue measured 36 of 40)."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.services.people.throttle import AUTH_LIMIT
from tests.load.servers import TIMEOUT, Deployment, Gunicorn, prepare

pytestmark = pytest.mark.postgres(
    reason=(
        "the shared login throttle is an INSERT ... ON CONFLICT DO UPDATE per dialect (services/people/throttle.py),"
        " raced by two servers"
    )
)

ATTEMPTS = 40


@pytest.fixture
def servers(tmp_path, database_backend):
    deployment = prepare(
        Deployment(database_backend.new_database(tmp_path, name="throttle"), tmp_path),
        teams=1,
        per_day=None,
        examples=40,
    )
    pair = [Gunicorn(deployment.env, tmp_path / f"gunicorn-{name}.log", workers=2) for name in ("a", "b")]
    try:
        for server in pair:
            server.wait_until_up()
            server.wait_for_workers(2)
        yield pair
    finally:
        for server in pair:
            server.stop()
        database_backend.drop(deployment.database_url)


class Browser:
    """A cookie jar and the login form's CSRF token; the session cookie is signed with the key both servers
    share, so one browser may send its form to either."""

    def __init__(self, base: str):
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect()
        )
        with self.opener.open(f"{base}/login", timeout=TIMEOUT) as response:
            self.token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', response.read().decode()).group(1)

    def login(self, base: str, email: str, password: str) -> int:
        body = urllib.parse.urlencode({"email": email, "password": password, "csrf_token": self.token}).encode()
        try:
            with self.opener.open(
                urllib.request.Request(f"{base}/login", data=body, method="POST"), timeout=TIMEOUT
            ) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a successful login's 302 is the answer itself


@pytest.mark.slow
def test_the_login_throttle_is_shared_by_two_servers(servers):
    bases = [server.base for server in servers]
    browsers = [Browser(bases[0]) for _ in range(4)]

    def attempt(i: int) -> int:
        return browsers[i % len(browsers)].login(bases[i % 2], f"guess{i}@example.org", "wrong password")

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = Counter(pool.map(attempt, range(ATTEMPTS)))
    assert statuses == Counter({401: AUTH_LIMIT, 429: ATTEMPTS - AUTH_LIMIT}), statuses
    # The right password from the same address is refused as well, on either server.
    for base in bases:
        assert browsers[0].login(base, "user0@example.org", "password-0-long") == 429
