"""A crawler over app.url_map: every GET route, its URL parts filled with real ids and slugs of a world,
fetched as a given role, plus every local link the pages it gets point to (exports, filters, pages).

Built from the URL map when it runs, so routes added later are covered without editing this file.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import url_for
from sqlalchemy import select
from werkzeug.routing import BuildError

from app.db import db
from app.models import ApiToken, Submission, Team
from tests.support.browser import login
from tests.support.security_world import EMAILS, HIDDEN, World
from tests.support.users import PASSWORD

# Values tried for URL parts the world has no row for (an export format, say); unknown ones answer 404.
FORMAT_GUESSES = ("csv", "json", "md", "tex", "jsonl", "tsv", "txt", "html", "xml", "bib")
SPLITS = ("dev", *HIDDEN)
# Endpoints that serve a pinned package's files as they are, whatever the world, the role or the query: the API
# docs' Swagger UI (tests/web/test_api_docs.py checks they are the package's bytes). A megabyte of script:
# checks that send a route many queries leave them out (nothing there reads a query).
VENDORED_FILES = frozenset({"api_docs.script", "api_docs.stylesheet"})
MAX_PER_RULE = 60
FEW_PER_RULE = {"api_v1.submission_file": 8, "submissions.original_file": 8}
MAX_LINKS_PER_ROLE = 400
_LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


@dataclass
class Visit:
    role: str
    url: str
    endpoint: str | None
    status: int
    content_type: str
    headers: dict
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def logged_in_client(app, role: str):
    client = app.test_client()
    if role in EMAILS:
        response = login(client, EMAILS[role], PASSWORD)
        assert response.status_code == 302, f"{role} could not log in: {response.status_code}"
    return client


def _contexts(app, world: World) -> list[dict]:
    """Named values that belong together (a benchmark with one of its splits, a submission id...)."""
    with app.app_context():
        submission_ids = list(db.session.scalars(select(Submission.id)))
        team_ids = list(db.session.scalars(select(Team.id)))
        team_slugs = list(db.session.scalars(select(Team.slug)))
        token_ids = list(db.session.scalars(select(ApiToken.id)))
    contexts: list[dict] = [
        {"benchmark": "nlvr2", "benchmark_slug": "nlvr2", "split": split, "split_slug": split} for split in SPLITS
    ]
    contexts += [{"submission_id": i, "earlier_submission_id": i} for i in submission_ids]
    contexts += [{"team_id": i} for i in team_ids]
    contexts += [{"team_slug": slug} for slug in team_slugs]
    contexts += [{"token_id": i} for i in token_ids]
    contexts += [{"token": world.invite}]
    contexts += [{"reset_token": token, "verify_token": token} for token in _mailed_link_tokens(app)]
    return contexts


def _mailed_link_tokens(app) -> list[str]:
    """A live reset link and address-check link of the first account (as a mail would carry them), so the
    pages behind them are crawled as they answer a real reader."""
    from app.models import User
    from app.services.people import signed_links

    with app.app_context():
        user = db.session.scalars(select(User).order_by(User.id)).first()
        if user is None:
            return []
        return [
            signed_links.sign(signed_links.RESET, {"u": user.id, "g": user.reset_generation}),
            signed_links.sign(signed_links.VERIFY, {"u": user.id, "e": user.email}),
        ]


def _pool(name: str, converter, largest_id: int) -> list:
    kind = type(converter).__name__
    if "Integer" in kind or "Int" in kind:
        return list(range(1, largest_id + 1))
    if name in ("fmt", "format", "ext", "extension"):
        return list(FORMAT_GUESSES)
    if name in ("filename", "path"):
        return ["holdout.css", "upload.js"]
    if name.startswith("benchmark"):
        return ["nlvr2"]
    if name.startswith("split"):
        return list(SPLITS)
    return ["nlvr2", *SPLITS]


def _assignments(rule, contexts: list[dict], largest_id: int) -> Iterable[dict]:
    args = set(rule.arguments)
    if not args:
        yield {}
        return
    covering = [ctx for ctx in contexts if args & ctx.keys()]
    if covering:
        most = max(len(args & ctx.keys()) for ctx in covering)
        covering = [ctx for ctx in covering if len(args & ctx.keys()) == most]
    else:
        covering = [{}]
    count = 0
    for ctx in covering:
        fixed = {name: ctx[name] for name in args & ctx.keys()}
        rest = sorted(args - fixed.keys())
        pools = [_pool(name, rule._converters.get(name), largest_id) for name in rest]
        for combination in itertools.product(*pools):
            yield {**fixed, **dict(zip(rest, combination, strict=True))}
            count += 1
            if count >= MAX_PER_RULE:
                return


def get_urls(app, world: World, *, vendored: bool = False) -> list[tuple[str, str]]:
    """(endpoint, URL) for every GET rule, filled with the world's values; the vendored files only if asked
    (checks of headers and caching want them; checks of what a body says have nothing to find in a package's
    own bytes). A submission's original file, the same route for each id, is fetched for a few ids."""
    contexts = _contexts(app, world)
    largest_id = max([1, *[v for ctx in contexts for k, v in ctx.items() if k.endswith("_id")]])
    found: list[tuple[str, str]] = []
    with app.test_request_context():
        for rule in app.url_map.iter_rules():
            if "GET" not in rule.methods or (rule.endpoint in VENDORED_FILES and not vendored):
                continue
            taken = 0
            for values in _assignments(rule, contexts, largest_id):
                try:
                    url = url_for(rule.endpoint, **values)
                except BuildError:
                    continue
                if (rule.endpoint, url) not in found:
                    found.append((rule.endpoint, url))
                    taken += 1
                    if taken >= FEW_PER_RULE.get(rule.endpoint, MAX_PER_RULE):
                        break
    return found


def _endpoint(app, url: str) -> str | None:
    adapter = app.url_map.bind("localhost")
    try:
        return adapter.match(urlsplit(url).path, method="GET")[0]
    except Exception:  # noqa: BLE001 - a 404 or a redirect: no endpoint to name
        return None


def _links(visit: Visit) -> list[str]:
    if not visit.content_type.startswith("text/html"):
        return []
    links = []
    for raw in _LINK.findall(visit.text):
        link = html.unescape(raw).split("#", 1)[0]
        if link.startswith("/") and not link.startswith("//") and link != "/logout":
            links.append(link)
    return links


def crawl(app, world: World, role: str, urls: list[tuple[str, str]] | None = None) -> list[Visit]:
    """GET every URL as `role` (session and, for the API, its bearer token), then the local links found."""
    client = logged_in_client(app, role)
    headers = world.headers(role)
    queue = [url for _, url in (urls if urls is not None else get_urls(app, world))]
    seen: set[str] = set()
    visits: list[Visit] = []
    discovered = 0
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url, headers=headers)
        visit = Visit(
            role,
            url,
            _endpoint(app, url),
            response.status_code,
            response.content_type or "",
            dict(response.headers),
            response.get_data(),
        )
        visits.append(visit)
        for link in _links(visit):
            if link in seen or discovered >= MAX_LINKS_PER_ROLE:
                continue
            # Found by link, not by get_urls: a vendored file or another id's original file adds nothing.
            if _endpoint(app, link) in VENDORED_FILES | FEW_PER_RULE.keys():
                continue
            discovered += 1
            queue.append(link)
    return visits


def example_urls(app, world: World, rule, limit: int = 1) -> list[str]:
    """Up to `limit` URLs for any rule (GET or not), filled with the world's values."""
    contexts = _contexts(app, world)
    largest_id = max([1, *[v for ctx in contexts for k, v in ctx.items() if k.endswith("_id")]])
    urls: list[str] = []
    with app.test_request_context():
        for values in _assignments(rule, contexts, largest_id):
            try:
                urls.append(url_for(rule.endpoint, **values))
            except BuildError:
                continue
            if len(urls) >= limit:
                break
    return urls
