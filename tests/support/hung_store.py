"""An upload whose store hangs (issue 35), for the folder's and the bucket's hang tests alike.

``HeldWait`` keeps the upload's wait for its store from ending until the test has had its other requests
answered: "no lock is held while the store hangs" is then proven by order (the others were answered while the
upload still waited), not by a race between them and STORAGE_TIMEOUT on a busy machine. Once released, the
wait runs out the rest of the budget and the upload is answered a 503 with Retry-After, naming the store's
failure and saying nothing was stored (``assert_refused_for_a_hang``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

# Seconds the held wait waits for the others' answers: only reached when they wait for the upload (the bug).
HOLD_LIMIT = 30


class HeldWait:
    """Holds the first upload's ``wait`` (of ``pending``, the store's class of a write in flight) until
    ``release``; what the held upload then had left of its budget is ``remaining``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, pending: type) -> None:
        self.waiting, self._released = threading.Event(), threading.Event()
        self.released_in_time: bool | None = None
        self.remaining: float | None = None
        wait = pending.wait

        def held(kept: Any) -> None:
            if self.waiting.is_set():  # a later upload's (or the finish's) wait: not held
                return wait(kept)
            self.waiting.set()
            self.released_in_time = self._released.wait(HOLD_LIMIT)
            self.remaining = kept._remaining()
            return wait(kept)

        monkeypatch.setattr(pending, "wait", held)

    def release(self) -> None:
        self._released.set()

    def assert_others_went_on(self, what: str) -> None:
        """The others' requests were answered while the upload waited for its store, holding no lock."""
        assert self.released_in_time, f"{what} waited for the upload"


def assert_refused_for_a_hang(answer: dict, reason: str, held: HeldWait, budget: float) -> None:
    """``answer``: the upload thread's {"response", "store_hung"} (whether the store still hung when the upload
    was answered); ``reason``: what the store did, as the error says."""
    response = answer.get("response")
    assert response is not None, "the upload was not answered while its store hung"
    assert response.status_code == 503, response.json
    assert reason in response.json["error"]
    assert "your file was not stored and your quota is unchanged" in response.json["error"]
    assert response.headers["Retry-After"] == "30"
    # Bounded by the budget, not by the store: answered while it still hung, having waited at most the budget.
    assert answer["store_hung"], "the upload waited for the store to come back"
    assert held.remaining is not None and 0 <= held.remaining <= budget, held.remaining
