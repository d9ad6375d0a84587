"""The blind test: what a viewer may see of a split's scores (`visibility`, the one place that decides it)
and how a release is made and probing is flagged (`integrity`).

Public: `visibility`, `integrity`.

May import: app.services.catalog, app.services.errors, app.settings, app.db, app.models, app.lru, app.evaluation.
"""
