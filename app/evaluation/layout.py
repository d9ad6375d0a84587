"""Per-example layouts of k entries' outcomes: (k, n) -> (n, k), what the statistics' group sums read.

Pure numpy. Shared by the statistics and the task families that lay out their own outcomes.
"""

from __future__ import annotations

import numpy as np

TRANSPOSE_ROWS = 128  # entries transposed at a time: a whole (k, m) transpose misses the cache on every write


def by_example(values: np.ndarray) -> np.ndarray:
    """(k, m) -> (m, k), contiguous: an example's values of every entry side by side (bool as uint8). Values laid out
    so already (the transposed view of a by-example matrix, as a board reads stored results) are given back as
    they are, not copied. Read-only: the result may be the caller's memory."""
    if values.ndim == 2 and values.T.flags.c_contiguous:
        laid: np.ndarray = values.T
        return laid.view(np.uint8) if laid.dtype == bool else laid
    laid_out = np.empty(values.shape[::-1], dtype=values.dtype)
    for at in range(0, values.shape[0], TRANSPOSE_ROWS):
        laid_out[:, at : at + TRANSPOSE_ROWS] = values[at : at + TRANSPOSE_ROWS].T
    return laid_out.view(np.uint8) if laid_out.dtype == bool else laid_out
