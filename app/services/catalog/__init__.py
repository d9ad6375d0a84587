"""The catalog: benchmarks, their splits and subsets (this package's own names, from `benchmarks`), the
hidden gold (label) files (`label_files`), the reference rows of papers (`references`) and rescoring stored
submissions when a split's scoring inputs change (`rescoring`).

Mails the reveal of a held board to the teams that uploaded to it (`notifications`).

May import: app.bundles, app.services.people, app.services.mail, app.services.storage, app.services.audit,
app.services.jobs, app.services.errors, app.settings, app.db, app.models, app.lru, app.observability, app.evaluation.
"""

from app.services.catalog.benchmarks import (
    HIDDEN_SPLIT_POLICY,
    RESERVED_SPLIT_SLUGS,
    SLUG,
    SUBSET_NAME,
    UNSET,
    ScoringInputs,
    add_benchmark,
    add_split,
    add_subset,
    boards_changed,
    get_benchmark,
    get_split,
    gold_for,
    list_benchmarks,
    list_splits,
    open_splits,
    pin_default_split,
    remove_split,
    reveal_split,
    risks,
    sample_file,
    scoring_inputs,
    seal,
    set_policy,
    source_of,
    split_metrics,
    subset_row,
    unknown_benchmark,
    unknown_split,
    update_benchmark,
)
from app.services.catalog.task_types import task_of

__all__ = [
    "HIDDEN_SPLIT_POLICY",
    "boards_changed",
    "RESERVED_SPLIT_SLUGS",
    "SLUG",
    "SUBSET_NAME",
    "UNSET",
    "ScoringInputs",
    "add_benchmark",
    "add_split",
    "add_subset",
    "get_benchmark",
    "get_split",
    "gold_for",
    "list_benchmarks",
    "list_splits",
    "open_splits",
    "pin_default_split",
    "remove_split",
    "reveal_split",
    "risks",
    "sample_file",
    "scoring_inputs",
    "seal",
    "set_policy",
    "source_of",
    "split_metrics",
    "subset_row",
    "task_of",
    "unknown_benchmark",
    "unknown_split",
    "update_benchmark",
]
