"""Intake: a submission from upload to entry: validate, score and store it under the split's quotas, publish
and unpublish it, moderate it.

Public: `submissions`, `quotas` (and `originals`, whose job removes what a store that hung may leave).

May import: app.services.blind_test, app.services.catalog, app.services.people, app.services.storage,
app.services.audit, app.services.jobs, app.services.errors, app.settings, app.db, app.models, app.names,
app.observability, app.evaluation.
"""
