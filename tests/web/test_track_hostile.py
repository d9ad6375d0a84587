"""Tracks (issue 38) read by a hostile user and a careful researcher: the sentences a track's board says
together agree with its ranks (a search inside a track), and what a track's answer depends on in its ETag."""

from __future__ import annotations

import html
import re

import pytest

from tests.web.test_track_pages import BOARD, _api, _build

pytestmark = pytest.mark.postgres(reason="a selection reads the entries' JSON fields")


@pytest.fixture(scope="module")
def world(module_app):
    with module_app.app_context():
        return _build()


@pytest.fixture
def client(module_app):
    return module_app.test_client()


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_a_search_inside_a_track_says_its_ranks_are_the_tracks(client, world):
    """?track=small&q=...: the rows found keep their ranks on the track's board (1..N' among its N' entries), and
    the search's sentence says so, not "those of the whole board" (which the rows contradict)."""
    track = {e["model_name"]: e["rank"] for e in _api(client, "track=small")["entries"]}
    whole = {e["model_name"]: e["rank"] for e in _api(client, "")["entries"]}
    found = next(name for name in track if track[name] != whole[name])  # a row whose two ranks differ
    page = client.get(f"{BOARD}?track=small&q={found}")
    assert page.status_code == 200
    said = _text(page.get_data(as_text=True))
    assert f"1 of 5 entries match “{found}”" in said
    assert "Ranks are those of the whole board" not in said
    assert "Ranks are those of the 5 entries selected, ranked among themselves" in said
    assert _api(client, f"track=small&q={found}")["entries"][0]["rank"] == track[found]
    # Without a track the sentence is as it was.
    assert "Ranks are those of the whole board" in _text(client.get(f"{BOARD}?q={found}").get_data(as_text=True))
