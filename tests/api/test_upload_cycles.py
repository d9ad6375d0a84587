"""An upload goes when its request ends (issue 23): no reference cycle keeps the file, or the frames of the
parser that read it, for the garbage collector to find some requests later (a worker would hold 45 MB
files it has already answered)."""

from __future__ import annotations

import gc
import types

import pytest

from tests.support.api_world import build_world, post_file


@pytest.fixture
def world(app):
    return build_world(app)


def frames_and_exceptions_left_in_cycles(request) -> list[str]:
    """What of a request only the garbage collector would free: its frames and exceptions (with the garbage
    collector off meanwhile, so that none is freed before it is looked for)."""
    gc.collect()
    gc.disable()
    try:
        request()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return [
            f"frame {item.f_code.co_name}" if isinstance(item, types.FrameType) else f"{type(item).__name__}"
            for item in gc.garbage
            if isinstance(item, (types.FrameType, BaseException))
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


@pytest.mark.parametrize("split", ["dev", "test-u"])
def test_a_refused_file_leaves_no_cycle(client, world, split):
    lines = world.predictions(split).splitlines()
    lines[2] = b"junk,maybe"

    def refused():
        response = post_file(client, world, "member", b"\n".join(lines) + b"\n", split=split)
        assert response.status_code == 422, response.json

    assert frames_and_exceptions_left_in_cycles(refused) == []


@pytest.mark.parametrize("split", ["dev", "test-u"])
def test_a_scored_file_leaves_no_cycle(client, world, split):
    def scored():
        response = post_file(client, world, "member", world.predictions(split), split=split)
        assert response.status_code == 201, response.json

    assert frames_and_exceptions_left_in_cycles(scored) == []
