"""Boards: every published entry of a split with its scores, intervals and ranks (`board_snapshots`), a
board as a visitor asked for it (`leaderboards`), one row per model across splits (`models_view`), the
exports for papers (`exports`), a submission's page (`submission_pages`), the API's listings (`listings`)
what each public read depends on, for HTTP validators (`page_versions`), and what a split's board can tell
apart at a planned size (`power`).

May import: app.services.intake, app.services.blind_test, app.services.catalog, app.services.people,
app.services.storage, app.services.audit, app.services.jobs, app.services.errors, app.settings, app.db, app.models,
app.names, app.observability, app.lru, app.evaluation.
"""
