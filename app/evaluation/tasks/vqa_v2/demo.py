"""VQA v2's demo benchmark."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

BENCHMARKS = (
    DemoBenchmark(
        "demo-vqa-v2",
        "vqa-v2",
        "VQA v2 (demo)",
        "Synthetic data in the shape of VQA v2: open-ended questions about images, ten human answers each, "
        "scored by the official soft accuracy.",
        (DemoSplit("test-dev", "Test-dev", 2000), DemoSplit("test-std", "Test-std", 2000, hidden=True)),
    ),
)
