"""How a board's ranks are made, in words: the one place that writes it, for the board's page, its exports
(CSV comments, Markdown, LaTeX captions), the API's descriptions and the client.

The procedure itself is statistics.pair_decisions: one test per pair of entries, one Holm procedure over all
N(N - 1)/2 pairs of the board, rank = 1 + B and interval [1 + B, N - W].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tasks.base import TaskType

ALPHA_TEXT = "0.05"

# The test each pair of entries gets, by the kind of figures a board ranks on (TaskType.rank_test names a
# family's own paired test; a blind test before its reveal tests the released counts alone).
COUNTS_TEST = "a two-proportion z-test on the {metric} counts (continuity-corrected)"


def primary_name(task: TaskType) -> str:
    """The ranking metric as the method sentence names it: the family's own label ("Q→AR", "Group score"),
    lower case for the plain words ("accuracy"), whatever a column calls it (VQA v2's "Overall")."""
    label: str = task.metric(task.primary_metric).label
    return label.lower() if label in ("Accuracy", "Consistency") else label


def pair_test(rank_test: str, counts_only: bool, metric: str) -> str:
    """The test one pair of entries gets on this board, e.g. 'an exact McNemar test on accuracy (...)'."""
    return (COUNTS_TEST if counts_only else rank_test).format(metric=metric)


def short_test(rank_test: str, counts_only: bool) -> str:
    """The test in a few words, for a table's caption: 'exact McNemar', 'paired permutation', 'count z'."""
    if counts_only:
        return "two-proportion z-test on the counts"
    words = rank_test.split(" test", 1)[0]
    for article in ("an ", "a "):
        if words.startswith(article):
            words = words[len(article) :]
    return f"{words} test"


def sentence(rank_test: str, counts_only: bool, metric: str) -> str:
    """The board's method in one sentence (plain text; Unicode minus and en dash)."""
    return (
        f"Each pair of entries is compared once, by {pair_test(rank_test, counts_only, metric)}, and Holm's "
        f"procedure over all N(N\u22121)/2 pairs of the board (\u03b1 = {ALPHA_TEXT}) decides which pairs differ; "
        f"rank = 1 + the entries decided better, rank interval = [rank, N \u2212 the entries decided worse], "
        f"and the intervals hold simultaneously with 95% confidence."
    )


def caption(rank_test: str, counts_only: bool) -> str:
    """The method for a table's caption, short: 'rank (interval) from one exact McNemar test per pair, Holm
    over all pairs (alpha 0.05), simultaneous 95% rank intervals'."""
    return (
        f"rank (interval) from one {short_test(rank_test, counts_only)} per pair of entries, Holm over all "
        f"pairs (alpha {ALPHA_TEXT}); simultaneous 95% rank intervals"
    )


def resolution_text(points: float | None, entries: int) -> str | None:
    """What a board can tell apart, under its table: 'Entries closer than 1.7 points are usually tied here: ...'."""
    if points is None:
        return None
    return (
        f"Entries closer than {points:.1f} points are usually tied here: the smallest difference this board's own "
        f"pair decisions detect with 80% power at its {entries:,} entries (it grows with the entries, as every "
        f"pair is decided at once)."
    )
