"""What an upload is answered when its store hangs (issue 35): a 503 within the budget, with Retry-After,
naming the store's failure and saying nothing was stored. Shared by the folder's and the bucket's hang tests."""

from __future__ import annotations


def assert_refused_for_a_hang(answer: dict, reason: str, budget: float) -> None:
    """`answer`: the upload thread's {"response", "took"}; `reason`: what the store did, as the error says."""
    response = answer["response"]
    assert response.status_code == 503, response.json
    assert reason in response.json["error"]
    assert "your file was not stored and your quota is unchanged" in response.json["error"]
    assert response.headers["Retry-After"] == "30"
    assert answer["took"] < budget * 3, answer["took"]
