"""Winoground's demo benchmark."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

BENCHMARKS = (
    DemoBenchmark(
        "demo-winoground",
        "winoground",
        "Winoground (demo)",
        "Synthetic data in the shape of Winoground: two images and two captions with the same words in another "
        "order; a model scores each caption against each image.",
        (DemoSplit("test", "Test", 400),),
    ),
)
