"""The NLVR family's demo benchmarks: NLVR2, NLVR structured and NLVR over images."""

from app.evaluation.tasks.demo import DemoBenchmark, DemoSplit

from .synthetic import nlvr2_annotations


def _annotations(gold: bytes, seed: int) -> bytes:
    """Category annotations of 100 of the split's sentences."""
    return nlvr2_annotations(gold, 100, seed=seed)


BENCHMARKS = (
    DemoBenchmark(
        "demo-nlvr2",
        "nlvr2",
        "NLVR2 (demo)",
        "Synthetic data in the shape of NLVR2: is a sentence true of a pair of photographs? "
        "Sets of four image pairs, each with two sentences.",
        (
            DemoSplit("dev", "Dev", 6982, annotations=_annotations),
            DemoSplit("test-p", "Test-P", 6967),
            DemoSplit("test-u", "Test-U", 6970, hidden=True),
        ),
        sweep=True,
    ),
    DemoBenchmark(
        "demo-nlvr",
        "nlvr-structured",
        "NLVR structured (demo)",
        "Synthetic data in the shape of NLVR with structured representations: four examples a sentence.",
        (
            DemoSplit("dev", "Dev", 5940),
            DemoSplit("test-p", "Test-P", 5936),
            DemoSplit("test-u", "Test-U", 5940, hidden=True),
        ),
        sweep=True,
    ),
    DemoBenchmark(
        "demo-nlvr-images",
        "nlvr-images",
        "NLVR images (demo)",
        "Synthetic data in the shape of NLVR, scored over images: six box permutations an example.",
        (DemoSplit("dev", "Dev", 5940), DemoSplit("test-u", "Test-U", 5940, hidden=True)),
    ),
)
