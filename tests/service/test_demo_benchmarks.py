"""The demo is made from every family folder's demo.py: a new folder's demo benchmark is loaded like the others
(its splits, the demo teams' scored submissions), with nothing written in app/services/maintenance/demo.py."""

from __future__ import annotations

from app.bundles import read_bundle
from app.services import catalog
from app.services.maintenance import demo
from tests.support.toy_family import DEMO_SLUG, NAME, toy_family


def test_a_new_folders_demo_benchmark_is_loaded_as_the_others(ctx, tmp_path):
    with toy_family(tmp_path):
        (spec,) = [spec for spec in demo.demo_benchmarks() if spec.slug == DEMO_SLUG]
        created = demo.load_demo(benchmarks=[spec])
        assert created["benchmarks"] == 1 and created["splits"] == 1
        assert created["submissions"] == len(demo.TEAMS)  # every demo team's model, no sweep
        benchmark = catalog.get_benchmark(DEMO_SLUG)
        assert benchmark.task_type == NAME and benchmark.default_split_id == catalog.get_split(DEMO_SLUG, "dev").id
        assert demo.load_demo(benchmarks=[spec])["submissions"] == 0  # idempotent, as the demo always was


def test_the_repositorys_demo_bundles_are_what_the_families_demo_files_make():
    """bundles/ is written by scripts/make_demo_bundles.py from each family's demo.py: every demo benchmark has
    its folder, and the smallest two hold what their family makes now (content compared, whatever gzip's bytes),
    so a family's demo data cannot drift from what `flask demo` applies without this failing."""
    specs = demo.demo_benchmarks()
    assert sorted(path.name for path in demo.BUNDLES_DIR.iterdir() if path.is_dir()) == sorted(s.slug for s in specs)
    for seed, spec in enumerate(specs):
        if spec.slug not in ("demo-winoground", "demo-nlvr2-contrast"):
            continue
        committed = read_bundle(demo.BUNDLES_DIR / spec.slug)
        made, files = demo.demo_bundle(spec, seed)
        assert {path.removesuffix(".gz"): data for path, data in committed.files.items()} == files
        without_files = {"splits": {"__all__": {"labels", "annotations", "choices"}}}
        assert committed.bundle.model_dump(exclude=without_files) == made.model_dump(exclude=without_files)


def test_the_demo_has_a_crowded_board_with_fact_sheets_to_slice(ctx, tmp_path, monkeypatch):
    """Issue 38: one demo board of 60 entries with their fields filled in, about a third zero-shot, some small,
    a few verified with a note and a link. Loaded here onto the toy family's small split (the crowd is plain
    data, the same runs whichever split takes it), and checked as its tracks show it: ranked among themselves."""
    from app.services.boards import leaderboards
    from app.services.catalog import tracks
    from app.services.maintenance import demo_crowd

    specs = {spec.slug: spec for spec in demo.demo_benchmarks()}
    crowd_split = next(s for s in specs[demo_crowd.BENCHMARK].splits if s.slug == demo_crowd.SPLIT)
    assert specs[demo_crowd.BENCHMARK].sweep and not crowd_split.hidden
    assert len(demo.TEAMS) + len(demo.SWEEP) + len(demo_crowd.runs()) == demo_crowd.SIZE == 60
    with toy_family(tmp_path):
        (spec,) = [spec for spec in demo.demo_benchmarks() if spec.slug == DEMO_SLUG]
        monkeypatch.setattr(demo_crowd, "BENCHMARK", DEMO_SLUG)
        monkeypatch.setattr(demo_crowd, "SPLIT", spec.splits[0].slug)
        created = demo.load_demo(benchmarks=[spec])
        assert created["submissions"] == len(demo.TEAMS) + len(demo_crowd.runs())
        assert demo.load_demo(benchmarks=[spec])["submissions"] == 0  # idempotent, verified marks too
        # The demo's bundles define its two tracks (demo.TRACKS).
        assert [(t.name, [c.written for c in t.conditions]) for t in tracks.list_tracks(DEMO_SLUG)] == [
            ("zero-shot", ["zero_shot:yes"]),
            ("small", ["parameters<=1000000000"]),
        ]
        board = leaderboards.board(DEMO_SLUG, paginate=False)
        everyone = {entry.model_name: entry for entry in board.entries}
        assert len(everyone) == created["submissions"] and all(e.fields.get("parameters") for e in board.entries)
        sizes = [entry.fields["parameters"] for entry in board.entries]
        assert min(sizes) <= 60_000_000 and max(sizes) >= 70_000_000_000
        assert any(e.fields["open_weights"] for e in board.entries) and not all(
            e.fields["open_weights"] for e in board.entries
        )
        for track, keeps in (
            ("zero-shot", lambda e: e.fields["zero_shot"]),
            ("small", lambda e: e.fields["parameters"] <= 10**9),
            ("verified", lambda e: e.verified is not None),
        ):
            sliced = leaderboards.board(DEMO_SLUG, track=track, paginate=False).entries
            assert {e.model_name for e in sliced} == {e.model_name for e in board.entries if keeps(e)}, track
            assert 3 <= len(sliced) < len(board.entries) and min(e.rank for e in sliced) == 1, track
            assert max(e.rank_high or 0 for e in sliced) <= len(sliced), track  # ranked among themselves
        zero_shot = [e for e in board.entries if e.fields["zero_shot"]]
        assert len(board.entries) / 4 <= len(zero_shot) <= len(board.entries) / 2  # about a third
        verified = [e for e in board.entries if e.verified]
        assert all(e.verified["note"] and e.verified["url"] for e in verified)
        assert len({e.team for e in board.entries}) >= 8
        assert len({e.rank for e in board.entries}) < len(board.entries)  # close scores: some ranks shared
