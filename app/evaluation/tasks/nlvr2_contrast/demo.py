"""The NLVR2 contrast sets' demo benchmark."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

BENCHMARKS = (
    DemoBenchmark(
        "demo-nlvr2-contrast",
        "nlvr2-contrast",
        "NLVR2 contrast sets (demo)",
        "Synthetic data in the shape of the NLVR2 contrast sets: small perturbations of NLVR2 examples, scored "
        "by accuracy and by consistency over each original's set.",
        (DemoSplit("test", "Test", 994),),
    ),
)
