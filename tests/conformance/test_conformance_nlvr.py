"""NLVR on the real files: structured representations and images, predicting true everywhere."""

import numpy as np
import pytest

from app.evaluation import get_task

pytestmark = pytest.mark.conformance

STRUCTURED = get_task("nlvr-structured")
IMAGES = get_task("nlvr-images")
SPLITS = [("dev", 55.3), ("test", 56.2), ("hidden", 55.4)]  # dev, Test-P, Test-U


@pytest.mark.parametrize("split, accuracy", SPLITS)
def test_structured_all_true_reproduces_published_accuracy(read_shared, split, accuracy):
    gold = STRUCTURED.read_gold(read_shared(f"nlvr/{split}.json"))
    data = "".join(f"{identifier},true\n" for identifier in gold.ids).encode()
    scores = STRUCTURED.score(gold, STRUCTURED.parse(data, gold))
    assert round(scores["all"]["accuracy"], 1) == accuracy


@pytest.mark.parametrize("split, accuracy", SPLITS)
def test_images_all_true_equals_the_structured_figures(read_shared, split, accuracy):
    raw = read_shared(f"nlvr/{split}.json")
    gold = IMAGES.read_gold(raw)
    data = "".join(f"{split}-{identifier}-{k}.png,true\n" for identifier in gold.ids for k in range(6)).encode()
    predictions = IMAGES.parse(data, gold)
    assert predictions.shape == (gold.n, 6)
    scores = IMAGES.score(gold, predictions)
    structured_gold = STRUCTURED.read_gold(raw)
    structured = STRUCTURED.score(structured_gold, np.ones(structured_gold.n, dtype=bool))
    # each example's label applies to its 6 images, so image accuracy equals example accuracy
    assert scores["all"]["accuracy"] == pytest.approx(structured["all"]["accuracy"])
    assert scores["all"]["consistency"] == pytest.approx(structured["all"]["consistency"])
    assert round(scores["all"]["accuracy"], 1) == accuracy
