"""GQA's demo benchmark: both splits with the official choices file (validity and plausibility)."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

from .synthetic import choices

BENCHMARKS = (
    DemoBenchmark(
        "demo-gqa",
        "gqa",
        "GQA (demo)",
        "Synthetic data in the shape of GQA: compositional questions about scene graphs, scored on balanced "
        "questions, with consistency over entailed questions and the answer distribution.",
        (
            DemoSplit("testdev", "Test-dev", 2000, choices=choices),
            DemoSplit("test", "Test", 2000, hidden=True, choices=choices),
        ),
    ),
)
