"""Idempotency-Key on uploads: a repeat of a key from the same account is answered as the first upload was
(201 with `Idempotent-Replayed: true`, or the same 422) and stores nothing; the same key with another upload
is a 422 naming the key; keys belong to an account; a malformed key is refused naming the header."""

from __future__ import annotations

import io

import pytest
from sqlalchemy import func, select

from app.db import db
from app.models import Submission
from tests.support.api_world import build_world

pytestmark = pytest.mark.postgres(
    reason="the key is unique per account in the database: NULLs and the constraint are the dialect's"
)


@pytest.fixture
def world(app):
    return build_world(app)


def _post(client, world, role, data, key, **fields):
    form = {"benchmark": "nlvr2", "split": "dev", "model_name": "my-model", **fields}
    form["file"] = (io.BytesIO(data), "predictions.csv")
    headers = {**world.headers(role), **({"Idempotency-Key": key} if key is not None else {})}
    return client.post("/api/v1/submissions", data=form, headers=headers, content_type="multipart/form-data")


def _rows(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission))


def test_a_repeated_key_gets_the_first_answer_and_stores_once(app, client, world):
    data = world.predictions()
    first = _post(client, world, "member", data, "key-1")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    again = _post(client, world, "member", data, "key-1")
    assert again.status_code == 201, again.json
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"]
    same = {k: v for k, v in again.json.items() if k != "quota"}
    assert same == {k: v for k, v in first.json.items() if k != "quota"}
    assert again.json["quota"]["used"] == first.json["quota"]["used"]  # the repeat used no quota
    assert _rows(app) == 1
    # Without a key, or with a new one, the same file is a new upload.
    assert _post(client, world, "member", data, None).status_code == 201
    assert _post(client, world, "member", data, "key-2").status_code == 201
    assert _rows(app) == 3


def test_the_same_key_with_another_upload_is_a_422_naming_it(app, client, world):
    assert _post(client, world, "member", world.predictions(seed=1), "k").status_code == 201
    for changed in ({"data": world.predictions(seed=2)}, {"model_name": "other"}, {"description": "new words"}):
        data = changed.pop("data", world.predictions(seed=1))
        response = _post(client, world, "member", data, "k", **changed)
        assert response.status_code == 422, response.json
        assert "Idempotency-Key 'k' was sent before with another upload" in response.json["error"]
    assert _rows(app) == 1


def test_keys_belong_to_an_account(app, client, world):
    data = world.predictions()
    first = _post(client, world, "member", data, "shared-key")
    other = _post(client, world, "other", data, "shared-key")
    assert first.status_code == other.status_code == 201
    assert first.json["id"] != other.json["id"] and "Idempotent-Replayed" not in other.headers
    assert _rows(app) == 2


def test_a_rejected_upload_is_refused_again_without_a_second_row(app, client, world):
    bad = b"identifier,prediction\nnot-an-id,True\n"
    first = _post(client, world, "member", bad, "bad-1")
    assert first.status_code == 422
    again = _post(client, world, "member", bad, "bad-1")
    assert again.status_code == 422 and again.json == first.json
    assert _rows(app) == 1


# The key one past the column's 255 characters would be PostgreSQL's error if it reached the database: it runs
# on both; the other malformed keys are refused by the same check and fit the column, so SQLite alone.
@pytest.mark.parametrize(
    "key",
    [
        pytest.param("has space", marks=pytest.mark.one_backend),
        "x" * 256,
        pytest.param("ключ", marks=pytest.mark.one_backend),
        pytest.param("tab\there", marks=pytest.mark.one_backend),
    ],
)
def test_a_malformed_key_is_refused_naming_the_header(app, client, world, key):
    response = _post(client, world, "member", world.predictions(), key)
    assert response.status_code == 422
    assert "Idempotency-Key header must be 1 to 255 visible ASCII characters" in response.json["error"]
    assert _rows(app) == 0


@pytest.mark.parametrize("closing", ["phase", "policy", "quota"])
def test_a_replay_gets_the_stored_answer_after_the_split_closes(app, client, world, closing):
    """As the README promises: the first answer again whatever happened since (issue 35: a replay after the
    split's closing time, or after `splits policy --closed`, was a 409; one after the quota filled up is
    answered too). A new upload is refused as before, and the same key with another file still is."""
    from datetime import timedelta

    from app.models import utcnow
    from app.services import catalog
    from app.services.catalog import phases

    data = world.predictions()
    first = _post(client, world, "member", data, "before-closing")
    assert first.status_code == 201
    with app.app_context():
        if closing == "phase":
            phases.set_phase("nlvr2", "dev", closes_at=(utcnow() - timedelta(minutes=1)).isoformat())
        elif closing == "policy":
            catalog.set_policy("nlvr2", "dev", is_open=False)
        else:
            catalog.set_policy("nlvr2", "dev", total=1)
    again = _post(client, world, "member", data, "before-closing")
    assert again.status_code == 201, again.json
    assert again.headers["Idempotent-Replayed"] == "true" and again.json["id"] == first.json["id"]
    refused = 429 if closing == "quota" else 409
    assert _post(client, world, "member", data, "after-closing").status_code == refused
    other = _post(client, world, "member", world.predictions(seed=3), "before-closing")
    assert other.status_code == 422 and "was sent before with another upload" in other.json["error"]
    assert _rows(app) == 1
