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
