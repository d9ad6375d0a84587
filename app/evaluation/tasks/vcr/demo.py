"""VCR's demo benchmark."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

BENCHMARKS = (
    DemoBenchmark(
        "demo-vcr",
        "vcr",
        "VCR (demo)",
        "Synthetic data in the shape of VCR: four answers, then four rationales for each answer.",
        (DemoSplit("val", "Val", 3000), DemoSplit("test", "Test", 3000, hidden=True)),
        subset_field="region",
    ),
)
