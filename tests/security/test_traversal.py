"""Path traversal through every path-like input: URL parts (benchmark and split slugs, export formats,
static file names, any string part of any route), upload file names, and slugs given to the CLI."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from flask import url_for
from werkzeug.routing import BuildError

from app import synthetic
from app.services import catalog
from app.services.errors import InvalidInput
from tests.security import crawler
from tests.security.leaks import LeakDetector
from tests.support.security_world import build

PAYLOADS = (
    "..",
    "../..",
    "../../../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e",
    "....//....//",
    "..\\..\\windows",
    "%252e%252e%252f",
    "/etc/passwd",
    "nlvr2/../../hidden_labels",
    "\x00",
    "~root",
)
SECRETS = ("root:x:0:0", "def from_environment", "SECRET_KEY =", "[extensions]")


def test_every_string_url_part_refuses_traversal(app):
    world = build(app)
    detector = LeakDetector(world)
    client = crawler.logged_in_client(app, "admin")
    problems, tried = [], 0
    for rule in app.url_map.iter_rules():
        base = crawler.example_urls(app, world, rule)
        if not base or not rule.arguments:
            continue
        methods = sorted(rule.methods - {"HEAD", "OPTIONS"})
        # The real values of this URL's parts; each string part in turn gets every payload.
        good = app.url_map.bind("localhost").match(base[0], method=methods[0])[1]
        for name in sorted(rule.arguments):
            if "Int" in type(rule._converters[name]).__name__:
                continue
            for payload in PAYLOADS:
                with app.test_request_context():
                    try:
                        url = url_for(rule.endpoint, **{**good, name: payload})
                    except BuildError:
                        continue
                for method in methods:
                    tried += 1
                    response = client.open(url, method=method, data={} if method == "POST" else None)
                    body = response.get_data(as_text=True)
                    if response.status_code >= 500 or (response.status_code == 200 and rule.endpoint == "static"):
                        problems.append(f"{method} {url}: {response.status_code}")
                    problems += [f"{method} {url}: {leak}" for leak in detector.gold_bytes(body)]
                    problems += [f"{method} {url}: served {secret!r}" for secret in SECRETS if secret in body]
    assert tried > 50
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "path",
    [
        "/static/../app/config.py",
        "/static/%2e%2e/app/config.py",
        "/static/..%2fapp%2fconfig.py",
        "/static/..%5capp%5cconfig.py",
        "/static//etc/passwd",
        "/static/%2fetc%2fpasswd",
        "/static/../../etc/passwd",
        "/static/../hidden_labels/README.md",
        "/static/.%2e/migrations/env.py",
        "/../app/config.py",
        "/leaderboards/nlvr2/dev/export.csv/../../../app/config.py",
        "/leaderboards/nlvr2/dev/export.%2e%2e%2fconfig",
    ],
)
def test_raw_traversal_paths_serve_nothing(client, path):
    response = client.get(path)
    assert response.status_code in (301, 302, 308, 400, 404), response.status_code
    body = response.get_data(as_text=True)
    assert not any(secret in body for secret in SECRETS)


def test_upload_file_names_are_never_used_as_paths(app, tmp_path):
    world = build(app)
    target = tmp_path / "escaped.csv"
    names = [
        f"../../../../../../{target}",
        str(target),
        "..\\..\\..\\escaped.csv",
        "../../hidden_labels/x.jsonl",
        "/etc/passwd",
        "con",
        "a\x00b.csv",
    ]
    client = crawler.logged_in_client(app, "owner")
    for i, name in enumerate(names):
        data = synthetic.predictions("nlvr2", world.gold["dev"], 0.6, seed=100 + i)
        form = {"benchmark": "nlvr2", "split": "dev", "model_name": "m", "file": (io.BytesIO(data), name)}
        api = client.post(
            "/api/v1/submissions", headers=world.headers("owner"), content_type="multipart/form-data", data=form
        )
        assert api.status_code == 201, api.get_data(as_text=True)
    assert not target.exists()
    assert not (Path(app.config["HIDDEN_LABELS_DIR"]) / "x.jsonl").exists()
    stored = [p for p in Path(app.config["SUBMISSIONS_DIR"]).rglob("*") if p.is_file()]
    assert stored and all(len(p.stem) == 64 and p.suffix == ".gz" and p.parent.name == p.name[:2] for p in stored)
    for root, _, files in os.walk(app.config["SUBMISSIONS_DIR"]):
        assert not any("escaped" in f or "passwd" in f for f in files), (root, files)


@pytest.mark.parametrize("slug", ["../x", "..", "a/../b", "a/b", "/abs", "x\x00", ".hidden", "UPPER", "a" * 65])
def test_slugs_that_become_file_names_are_refused(ctx, slug):
    with pytest.raises(InvalidInput, match="slug"):
        catalog.add_benchmark(slug, "nlvr2", "X")
    catalog.add_benchmark("ok", "nlvr2", "OK")
    with pytest.raises(InvalidInput, match="slug"):
        catalog.add_split("ok", slug, synthetic.nlvr2_gold(16))
    labels = Path(ctx.config["HIDDEN_LABELS_DIR"])
    assert not labels.exists() or not any(labels.rglob("*.jsonl"))


def test_the_cli_refuses_traversing_slugs(app, runner, tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_bytes(synthetic.nlvr2_gold(16))
    result = runner.invoke(args=["benchmarks", "add", "nlvr2", "--task", "nlvr2", "--name", "NLVR2"])
    assert result.exit_code == 0
    escape = tmp_path / "outside"
    result = runner.invoke(args=["splits", "add", "nlvr2", f"../../../../../../{escape}", "--labels", str(gold)])
    assert result.exit_code == 2 and "slug" in result.output
    assert not any(p.name.startswith("outside") for p in tmp_path.rglob("*"))
    labels = Path(app.config["HIDDEN_LABELS_DIR"])
    assert not labels.exists() or not any(labels.rglob("*.jsonl"))
