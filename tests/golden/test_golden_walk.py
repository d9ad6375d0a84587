"""Behaviour unchanged, measured: the demo walked now (every page for three roles, the API's read and write
answers, the exports, the command line) equals the recording in tests/golden/recorded byte for byte.

One test per recorded answer, so a failure names the page; the walk itself runs once per worker.
Re-record with `python -m tests.golden.record` only for an intended change of behaviour.
"""

from __future__ import annotations

import difflib
import fcntl
import os

import pytest

from tests.golden import walk

RECORDED = walk.load()
KEYS = [answer.key for answer in RECORDED]
assert len(set(KEYS)) == len(KEYS), "the walk must not make the same request twice as one role"


@pytest.fixture(scope="session")
def current(tmp_path_factory) -> dict[str, walk.Answer]:
    """The walk, made once per test run: the first worker to ask makes it under a lock and leaves it in the
    run's shared temporary folder for the others (pytest-xdist's recipe for a session fixture made once)."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's folder sits in the run's own (new each run); alone, the run's folder is it.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    made = shared / "golden-walk.jsonl.xz"
    with open(shared / "golden-walk.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            walk.save(walk.walk(tmp_path_factory.mktemp("golden")), made)
    return {answer.key: answer for answer in walk.load(made)}


def test_the_walk_reaches_the_same_requests(current):
    missing = [key for key in KEYS if key not in current]
    extra = [key for key in current if key not in set(KEYS)]
    assert not missing and not extra, f"requests no longer made: {missing[:20]}; new requests: {extra[:20]}"


def test_the_recording_covers_every_role_and_kind():
    roles = {answer.role for answer in RECORDED}
    assert roles == {"anonymous", "member", "maintainer", "cli", "writes"}
    requests = [answer.request for answer in RECORDED]
    assert sum(r.startswith("GET /api/") for r in requests) >= 20
    assert any("format=latex" in r or ".tex" in r or "latex" in r for r in requests), "no LaTeX export walked"
    assert sum(answer.status == 200 for answer in RECORDED) >= 300


@pytest.mark.parametrize("key", KEYS)
def test_answer_unchanged(current, key):
    before = RECORDED[KEYS.index(key)]
    now = current.get(key)
    assert now is not None, f"{key}: no longer requested by the walk"
    assert (now.status, now.content_type) == (before.status, before.content_type), key
    if now.body != before.body:
        diff = "\n".join(
            list(difflib.unified_diff(before.body.splitlines(), now.body.splitlines(), "recorded", "now", lineterm=""))[
                :80
            ]
        )
        pytest.fail(f"{key}: the body changed\n{diff}")
