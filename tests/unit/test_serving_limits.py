"""The limits in front agree with the app's: the nginx example refuses a body the app would refuse, lets
through every upload route the app has, and gunicorn bounds the request line and headers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.http.request_limits import BODY_LIMIT, request_body_limit

ROOT = Path(__file__).resolve().parents[2]
NGINX = (ROOT / "serving" / "nginx.conf").read_text()
DEFAULT_UPLOAD_MB = 50


def _kib(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([km])", value).groups()
    return int(number) * (1024 if unit == "m" else 1)


def _upload_locations() -> list[tuple[str, str, int]]:
    """(kind, pattern, limit in KiB) of every nginx location that raises the body limit."""
    found = re.findall(r"location (=|~) (\S+) \{ client_max_body_size (\w+);", NGINX)
    return [(kind, pattern, _kib(size)) for kind, pattern, size in found]


def test_the_default_body_limit_is_the_apps():
    default = re.search(r"^    client_max_body_size (\w+);", NGINX, re.MULTILINE)
    assert default and _kib(default.group(1)) * 1024 == BODY_LIMIT


def test_every_upload_route_and_only_those_may_take_an_upload(app):
    locations = _upload_locations()
    assert locations and all(limit * 1024 == request_body_limit(DEFAULT_UPLOAD_MB) for _, _, limit in locations)
    upload_rules = [
        rule for rule in app.url_map.iter_rules() if getattr(app.view_functions[rule.endpoint], "accepts_upload", False)
    ]
    assert {rule.endpoint for rule in upload_rules} == {
        "submissions.new",
        "api_v1.create_submission",
        "console.new_split",
        "console.add_subset",
        "console.new_bundle",
        "console.apply_bundle",
        "console.review_bundle",
    }
    for rule in upload_rules:
        path = re.sub(r"<[^>]+>", "x", rule.rule)
        matches = [p for kind, p, _ in locations if (p == path if kind == "=" else re.fullmatch(p.strip("^$"), path))]
        assert len(matches) == 1, f"{rule.rule}: {matches}"


def test_gunicorn_bounds_the_request_line_and_headers():
    # Read, not run: running it would point this process's metrics at a new folder.
    tree = ast.parse((ROOT / "gunicorn.conf.py").read_text())
    settings = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
    assert settings["limit_request_line"] <= 8190
    assert settings["limit_request_fields"] <= 100
    assert settings["limit_request_field_size"] <= 8190
