"""app.db.one_transaction: many service calls commit once or not at all, and a change rolled back takes the
files written for it (a gold file) with it; a direct commit inside is refused, never silently half-kept."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.db import db, one_transaction
from app.evaluation import get_task
from app.models import Benchmark, Split
from app.services import catalog
from app.services.catalog import label_files

pytestmark = pytest.mark.postgres(reason="commits held and rolled back under each dialect's transactions")


def _gold() -> bytes:
    return get_task("nlvr2").synthetic_gold(40, seed=3)


def _files() -> set[Path]:
    return {path for path in label_files.labels_dir().rglob("*") if path.is_file()}


def _counts() -> tuple[int, int]:
    return (
        db.session.scalar(select(func.count()).select_from(Benchmark)),
        db.session.scalar(select(func.count()).select_from(Split)),
    )


@pytest.mark.parametrize("ending", ["dry run", "error"])
def test_nothing_is_kept_when_the_block_rolls_back_not_even_the_gold_file(ctx, ending):
    before, files = _counts(), _files()
    failing = pytest.raises(RuntimeError, match="late failure") if ending == "error" else nullcontext()
    with failing, one_transaction(keep=ending != "dry run"):
        catalog.add_benchmark("tx", "nlvr2", "TX")
        catalog.add_split("tx", "dev", _gold())
        assert _counts() == (before[0] + 1, before[1] + 1) and len(_files()) > len(files)
        if ending == "error":
            raise RuntimeError("late failure")
    assert _counts() == before and _files() == files


def test_everything_is_kept_at_the_end_of_the_block(ctx):
    before = _counts()
    with one_transaction():
        catalog.add_benchmark("tx", "nlvr2", "TX")
        catalog.add_split("tx", "dev", _gold())
    db.session.expire_all()
    assert _counts() == (before[0] + 1, before[1] + 1)
    assert catalog.get_split("tx", "dev").example_count == 40


def test_a_direct_commit_inside_the_block_is_refused(ctx):
    before = _counts()
    with pytest.raises(RuntimeError, match="direct commit"), one_transaction():
        catalog.add_benchmark("tx", "nlvr2", "TX")
        db.session.commit()
    assert _counts() == before
