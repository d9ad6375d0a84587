"""Intake: a submission from upload to entry: validate, score and store it under the split's quotas, publish
and unpublish it, moderate it.

Public: `submissions`, `quotas`. May import: `blind_test`, `catalog`, `storage`, `people`, `audit`, `errors`.
"""
