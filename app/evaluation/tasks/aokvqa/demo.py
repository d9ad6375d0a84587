"""A-OKVQA's demo benchmark."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

BENCHMARKS = (
    DemoBenchmark(
        "demo-a-okvqa",
        "a-okvqa",
        "A-OKVQA (demo)",
        "Synthetic data in the shape of A-OKVQA: questions needing outside knowledge, with four choices and ten "
        "direct answers.",
        (DemoSplit("val", "Val", 1100), DemoSplit("test", "Test", 1100, hidden=True)),
    ),
)
