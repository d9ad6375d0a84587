"""NLVR2's visual-bias subsets, balanced and unbalanced (Suhr et al. 2019), derived from a gold file's image pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.evaluation.gold import GoldSet


def balanced_unbalanced(gold: GoldSet) -> dict[str, np.ndarray]:
    """NLVR2 visual-bias subsets (Suhr et al. 2019).

    Examples are grouped by image pair (left_url, right_url). Pairs that occur more than once with
    both labels form the balanced subset, pairs that occur more than once with a single label the
    unbalanced one; pairs seen once are in neither.
    """
    missing = [name for name in ("left_url", "right_url") if name not in gold.fields]
    if missing:
        raise ValueError(f"balanced/unbalanced subsets need the gold fields {', '.join(missing)}")
    left, _ = pd.factorize(gold.fields["left_url"])
    right, right_values = pd.factorize(gold.fields["right_url"])
    pair, _ = pd.factorize(left.astype(np.int64) * max(len(right_values), 1) + right)
    count = np.bincount(pair)
    true_count = np.bincount(pair, weights=np.asarray(gold.labels, dtype=np.float64))
    repeated = count > 1
    mixed = (true_count > 0) & (true_count < count)
    return {
        "balanced": np.flatnonzero((repeated & mixed)[pair]).astype(np.int32),
        "unbalanced": np.flatnonzero((repeated & ~mixed)[pair]).astype(np.int32),
    }
