"""Write the demo's bundles into the repository's bundles/ folder (one folder a demo benchmark, its files
gzipped), from what each family's demo.py says: `python -m scripts.make_demo_bundles`. Run it after changing a
family's demo benchmarks or synthetic files; `flask demo` applies what it wrote."""

from __future__ import annotations

import shutil
import sys

from app.bundles import write_bundle
from app.evaluation.tasks import demo_benchmarks
from app.services.maintenance.demo import BUNDLES_DIR, demo_bundle


def main() -> int:
    for seed, spec in enumerate(demo_benchmarks()):
        folder = BUNDLES_DIR / spec.slug
        if folder.exists():
            shutil.rmtree(folder)
        bundle, files = demo_bundle(spec, seed, gzipped=True)
        write_bundle(bundle, files, folder)
        size = sum(len(data) for data in files.values())
        print(f"{folder.relative_to(BUNDLES_DIR.parent)}: {len(files)} files, {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
