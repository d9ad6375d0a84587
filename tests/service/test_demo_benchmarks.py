"""The demo is made from every family folder's demo.py: a new folder's demo benchmark is loaded like the others
(its splits, the demo teams' scored submissions), with nothing written in app/services/maintenance/demo.py."""

from __future__ import annotations

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
