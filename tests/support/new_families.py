"""Issue 25's five families, for the tests of their files (tests/security/test_hostile_family_files.py and
test_hidden_split_answers.py): which they are, which read JSON, and a prediction file sent to the API."""

from __future__ import annotations

import io

from tests.support.users import bearer

FAMILIES = ("vqa-v2", "gqa", "a-okvqa", "winoground", "nlvr2-contrast")
JSON_FAMILIES = ("vqa-v2", "gqa", "a-okvqa")


def upload(client, token: str, data: bytes, suffix: str):
    """A prediction file for benchmark "b", split "test", sent with the token's bearer header."""
    return client.post(
        "/api/v1/submissions",
        data={"benchmark": "b", "split": "test", "model_name": "m", "file": (io.BytesIO(data), f"p.{suffix}")},
        headers=bearer(token),
        content_type="multipart/form-data",
    )
