"""The bundle spec's example as a bundle (issue 37): its benchmark.yaml, whole with its comments, and the files it
names, their digests filled in (the spec writes `64-hex`)."""

# ruff: noqa: E501 (the spec's example keeps its long comment lines)
from __future__ import annotations

import hashlib


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


FILES = {
    "splits/dev/labels.jsonl": b'{"identifier": "dev-0-0-0", "label": "True"}\n',
    "splits/dev/annotations.jsonl": b'{"identifier": "dev-0-0-0", "category": "count"}\n',
    "splits/dev/choices.json": b"{}\n",
    "splits/dev/subsets/hard.txt": b"dev-0-0-0\n",
}


# The bundle spec's example, whole (its comments too), with the digests of FILES.
EXAMPLE = """\
# A Holdout bundle (format 1): one benchmark, whole. The files it names sit beside this file.
format: 1
slug: nli3                       # benchmark slug (lower-case letters, digits, dashes)
name: Three-way NLI
description: |                   # optional, default ""
  One or two sentences.
paper_url: https://example.org/paper     # optional / null
task: nlvr2                      # a built-in family's registered name (TASK_TYPES) ...
# task:                          # ... or a mapping: a configured task type (app/evaluation/configured, helper H1)
#   type: classification
#   ...
default_split: dev               # optional: the split the benchmark's page lands on
splits:                          # in the order the app lists them
  - slug: dev
    name: Dev                    # optional, default the slug
    hidden: false                # optional, default false
    labels: {file: splits/dev/labels.jsonl, sha256: LABELS}
    annotations: {file: splits/dev/annotations.jsonl, sha256: ANNOTATIONS}   # optional (NLVR2 category annotations)
    choices: {file: splits/dev/choices.json, sha256: CHOICES}            # optional (GQA's choices file)
    subset_field: region         # optional: a gold field whose values become subsets
    subsets:                     # optional: subsets given as identifier lists (one identifier a line)
      - name: hard
        ids: {file: splits/dev/subsets/hard.txt, sha256: HARD}
    policy:                      # optional; omitted: a public split full feedback, unlimited; a hidden one the safe default
      per_day: 5                 # whole number >= 0, or "none" (unlimited)
      per_month: 20              # same
      total: none                # same
      rejected_per_day: 50       # whole number >= 0
      feedback: ladder           # full | ladder | none
      open: true                 # accepts submissions
      sealed: 0                  # hidden splits only: share of groups sealed (0 <= x <= 0.9); 0 or absent: none
    phase:                       # optional
      opens: 2026-12-01T00:00Z   # ISO 8601 (a zone, or UTC), a date alone = its midnight UTC, or none
      closes: 2027-03-01T23:59Z
      reveal: 2027-03-15T00:00Z  # the planned reveal of a hidden split's scores (shown; the reveal stays a maintainer's act)
    references:                  # optional
      - name: Human
        scores: {all: {accuracy: 96.2}}      # subset -> metric -> percentage (as `flask references add` takes)
        source: https://example.org/paper    # optional
        date: 2019-07-28                     # optional, YYYY-MM-DD
"""
for _name, _key in (("labels.jsonl", "LABELS"), ("annotations.jsonl", "ANNOTATIONS"), ("choices.json", "CHOICES")):
    EXAMPLE = EXAMPLE.replace(f"sha256: {_key}", "sha256: " + sha(FILES[f"splits/dev/{_name}"]))
EXAMPLE = EXAMPLE.replace("sha256: HARD", "sha256: " + sha(FILES["splits/dev/subsets/hard.txt"]))
