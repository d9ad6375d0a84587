"""What must not grow with the number of stored submissions (issue 15, "Scale, measured"): rescoring streams
them in chunks, a backup streams the uploads it lists; measured as growth ratios of peak memory, never time."""

from __future__ import annotations

import gc
import json
import multiprocessing
import tracemalloc
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import insert

from app import create_app, synthetic
from app.db import db
from app.evaluation import get_task
from app.models import Score, Submission
from app.services import catalog
from app.services.catalog import rescoring
from app.services.maintenance import backups
from app.services.people import teams
from app.services.storage import checksums, upload_files
from tests.conftest import make_config

pytestmark = [
    pytest.mark.postgres(
        reason=(
            "streaming many rows: server-side cursors on PostgreSQL vs SQLite's, and the backup's PostgreSQL branch"
        )
    ),
]

EXAMPLES = 2000


def _stored(split, team, count: int, seed: int) -> None:
    """`count` scored submissions in the format store_scored writes (the task's encoder, its scores)."""
    task = get_task("nlvr2")
    inputs = catalog.scoring_inputs(split)
    rng = np.random.default_rng(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for at in range(0, count, 500):
        stacked = rng.random((min(500, count - at), inputs.gold.n)) < 0.5
        results = task.score_batch(inputs.gold, stacked, inputs.subsets)
        ids = (
            db.session.execute(
                insert(Submission).returning(Submission.id),
                [
                    {
                        "split_id": split.id,
                        "team_id": team.id,
                        "status": "scored",
                        "model_name": f"m{at + i}",
                        "file_sha256": f"{at + i:064x}",
                        "file_size": 1,
                        "predictions": task.encode(row),
                        "created_at": start + timedelta(minutes=at + i),
                    }
                    for i, row in enumerate(stacked)
                ],
            )
            .scalars()
            .all()
        )
        db.session.execute(
            insert(Score),
            [
                {"submission_id": sid, "subset": subset, "metric": metric, "value": value}
                for sid, result in zip(ids, results, strict=True)
                for subset, metrics in result.items()
                for metric, value in metrics.items()
            ],
        )
    db.session.commit()


def _peak_of_adding_a_subset(app, count: int, tmp_name: str) -> tuple[int, int]:
    with app.app_context():
        gold = synthetic.nlvr2_gold(EXAMPLES, split="test", seed=3)
        catalog.add_benchmark(tmp_name, "nlvr2", tmp_name)
        catalog.add_split(tmp_name, "test-p", gold, name="Test-P")
        split = catalog.get_split(tmp_name, "test-p")
        _stored(split, teams.create_team(f"team {tmp_name}"), count, seed=count)
        ids = b"\n".join(json.loads(line)["identifier"].encode() for line in gold.splitlines()[::2])
        db.session.remove()
        tracemalloc.start()
        try:
            _, rescored = catalog.add_subset(tmp_name, "test-p", "every other set", ids)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return rescored, peak


def test_adding_a_subset_streams_the_stored_submissions(app, monkeypatch):
    """Four times the submissions, about the same peak memory: they are read CHUNK at a time, not all at once
    (reading them all would hold every stored prediction in memory: 1,000,000 NLVR2 ones are ~1 GB)."""
    monkeypatch.setattr(rescoring, "CHUNK", 200)
    small, small_peak = _peak_of_adding_a_subset(app, 1000, "small")
    large, large_peak = _peak_of_adding_a_subset(app, 4000, "large")
    assert (small, large) == (1000, 4000)
    assert large_peak < 1.5 * small_peak, (small_peak, large_peak)


def _uploads(app, count: int) -> None:
    """`count` scored submissions, each with its own original upload."""
    with app.app_context():
        gold = synthetic.nlvr2_gold(400, split="test", seed=4)
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        catalog.add_split("nlvr2", "test-p", gold, name="Test-P")
        split = catalog.get_split("nlvr2", "test-p")
        team = teams.create_team("uploaders")
        rows = []
        for i in range(count):
            data = f"upload {i}\n".encode()
            digest = checksums.sha256(data)
            upload_files.keep(data, digest).finish()
            rows.append(
                {
                    "split_id": split.id,
                    "team_id": team.id,
                    "status": "scored",
                    "model_name": f"m{i}",
                    "file_sha256": digest,
                    "file_size": len(data),
                    "predictions": b"\0" * 50,
                }
            )
        db.session.execute(insert(Submission), rows)
        db.session.commit()
        db.session.remove()


@contextmanager
def _deployment(folder: Path, database_backend, name: str, template: str | None = None):
    """(folder, database URL, app) of a new database (a copy of `template`, or never migrated)."""
    folder.mkdir()
    url = database_backend.new_database(folder, template=template, name=name)
    app = create_app(make_config(folder, url))
    try:
        yield folder, url, app
    finally:
        with app.app_context():
            db.engine.dispose()
        database_backend.drop(url)


def _peak_in_app(folder: Path, url: str, step: str, archive: Path, count: int) -> int:
    """Peak traced memory of a backup to `archive` or a restore from it, on the deployment at folder/url."""
    app = create_app(make_config(folder, url))
    with app.app_context():
        backups.BATCH = 50
        # What earlier steps of this process left for the cyclic collector is collected before the measure,
        # not at some moment inside it (where it would read as memory the step held).
        gc.collect()
        tracemalloc.start()
        try:
            summary = backups.backup(archive) if step == "backup" else backups.restore(archive)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        db.engine.dispose()
    assert summary.uploads == count
    return peak


def _peak_alone(*args) -> int:
    """_peak_in_app in a process of its own, as `flask backup` and `flask restore` run. Also the stricter
    check: a new process's table of interned strings is small, so code that interns a name per file (pathlib
    does, for every path it parses) makes it grow and be copied within the step (~4 MB at 6,000 files, ~2.7 MB
    at 4,000), where in a long-lived test process it may or may not, by the process's history. Each step is
    forked from one server process that has imported the app and nothing more (cheaper than a new
    interpreter per step, ~2.5 s each, and as fresh)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with context.Pool(1) as pool:
        return pool.apply(_peak_in_app, args)


COUNTS = (500, 2000)  # 1,500 uploads apart: 300 B each would be 450 KB; the difference measured is under 10 KB


@pytest.fixture(scope="module")
def backed_up(database_backend, migrated_database, tmp_path_factory):
    """Per backend, once for the module: deployments with 500 and 2,000 uploads, each backed up in a fresh
    process; {count: (archive, peak traced memory of the backup)}. The backup test checks the peaks, the
    restore test restores the archives (both used to build their own)."""
    folder = tmp_path_factory.mktemp("growth")
    found = {}
    for count in COUNTS:
        archive = folder / f"backup-{count}.tar.gz"
        with _deployment(folder / str(count), database_backend, f"growth{count}", migrated_database) as deployed:
            source, url, app = deployed
            _uploads(app, count)
            found[count] = archive, _peak_alone(source, url, "backup", archive, count)
    return found


def test_a_backup_holds_nothing_per_upload_in_memory(backed_up):
    """Four times the uploads, about the same peak memory: the list of uploads is read BATCH at a time, the
    archive keeps no TarInfo per member written, and the list of files (name, sha256, size) is spooled to
    files.jsonl, not held (before: ~1.6 KB per upload, ~1.1 KB of it the manifest's entry)."""
    peaks = {count: peak for count, (_, peak) in backed_up.items()}
    per_upload = (peaks[COUNTS[1]] - peaks[COUNTS[0]]) / (COUNTS[1] - COUNTS[0])
    assert per_upload < 300, peaks


@pytest.mark.one_backend
def test_a_restore_holds_nothing_per_upload_in_memory(backed_up, tmp_path, database_backend):
    """The same for a restore: files are checked against files.jsonl a line at a time (each moved aside once
    matched, so a name listed twice or a file not listed is still caught) and placed one at a time. On SQLite
    alone: what grows with the uploads is the list and the files, read and placed the same way on either
    database (the rows go in through one INSERT per batch, as tests/service/test_backups.py checks on both)."""
    peaks = {}
    for count, (archive, _) in backed_up.items():
        with _deployment(tmp_path / f"restored{count}", database_backend, f"restored{count}") as deployed:
            folder, url, _ = deployed
            peaks[count] = _peak_alone(folder, url, "restore", archive, count)
    per_upload = (peaks[COUNTS[1]] - peaks[COUNTS[0]]) / (COUNTS[1] - COUNTS[0])
    assert per_upload < 300, peaks
