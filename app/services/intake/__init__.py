"""Intake: a submission from upload to entry: validate, score and store it under the split's quotas, publish
and unpublish it, moderate it.

Public: `submissions`, `quotas` (and `originals`, whose job removes what a store that hung may leave). May
import: `blind_test`, `catalog`, `storage`, `jobs`, `people`, `audit`, `errors`.
"""
