"""The access matrix of the submissions issue, extended to every console route found in the URL map:
anonymous visitors are sent to log in, team members get 403 and change nothing, maintainers get the page."""

from __future__ import annotations

from tests.security import crawler
from tests.support.browser import csrf_token
from tests.support.security_world import build, table_counts

ROLES = ("anonymous", "other", "owner", "admin")


def console_rules(app):
    return [
        rule
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("console.") or rule.rule.startswith("/console")
    ]


def test_every_console_route_for_every_role(app):
    world = build(app)
    rules = console_rules(app)
    assert {rule.endpoint for rule in rules} >= {"console.flags"}
    problems = []
    for role in ROLES:
        client = crawler.logged_in_client(app, role)
        token = csrf_token(client, "/login")
        for rule in rules:
            url = crawler.example_urls(app, world, rule)[0]
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                before = table_counts(app) if role != "admin" else None
                data = {"csrf_token": token} if method == "POST" else None
                response = client.open(url, method=method, data=data)
                status = response.status_code
                where = f"{role} {method} {url}: {status}"
                if role == "anonymous":
                    if status != 302 or "/login" not in response.headers.get("Location", ""):
                        problems.append(f"{where}, expected a redirect to /login")
                elif role in ("other", "owner"):
                    if status != 403:
                        problems.append(f"{where}, expected 403")
                elif method == "GET" and status != 200:
                    problems.append(f"{where}, expected 200")
                elif method == "POST" and (status in (302, 401, 403) or status >= 500):
                    problems.append(f"{where}, expected the action's own answer (a form error or a redirect)")
                if before is not None and table_counts(app) != before:
                    problems.append(f"{where} changed the database")
    assert not problems, "\n".join(problems)


def test_every_other_html_route_answers_each_role_without_500(app):
    """Outside the console: every route, every method, every role, with real ids: no 5xx, and pages that
    need a login send anonymous visitors to it rather than failing."""
    world = build(app)
    problems = []
    for role in ROLES:
        client = crawler.logged_in_client(app, role)
        token = csrf_token(client, "/login")
        for rule in app.url_map.iter_rules():
            if rule.endpoint.startswith(("console.", "api_v1.", "static")):
                continue
            for url in crawler.example_urls(app, world, rule, limit=3):
                for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                    if rule.endpoint == "auth.logout":
                        continue  # would end this role's session for the rest of the loop
                    data = {"csrf_token": token} if method == "POST" else None
                    response = client.open(url, method=method, data=data)
                    if response.status_code >= 500:
                        problems.append(f"{role} {method} {url}: {response.status_code}")
    assert not problems, "\n".join(problems)
