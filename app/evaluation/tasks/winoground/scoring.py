"""Winoground's three judgements, exactly as the official text_correct, image_correct and group_correct (strict
``>``), over scores laid out as formats.KEYS."""

from __future__ import annotations

import numpy as np


def outcomes(stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(text, image, group) right per example for scores (..., n, 4): the official functions, strict ``>``."""
    c0_i0, c0_i1, c1_i0, c1_i1 = (stacked[..., j] for j in range(4))
    text = (c0_i0 > c1_i0) & (c1_i1 > c0_i1)
    image = (c0_i0 > c0_i1) & (c1_i1 > c1_i0)
    return text, image, text & image


def comparisons(stacked: np.ndarray) -> np.ndarray:
    """The four comparisons every metric is made of, (..., n, 4) bool: two scored predictions that agree on
    them score the same on every metric and subset."""
    c0_i0, c0_i1, c1_i0, c1_i1 = (stacked[..., j] for j in range(4))
    return np.stack([c0_i0 > c1_i0, c1_i1 > c0_i1, c0_i0 > c0_i1, c1_i1 > c1_i0], axis=-1)
