"""The HTML pages: their blueprints, forms and templates' helpers, and the maintainers' console (`console`).

May import: app.services.maintenance, app.services.boards, app.services.intake, app.services.blind_test,
app.services.catalog, app.services.people, app.services.errors, app.security, app.http_caching, app.page_cache,
app.request_limits, app.db, app.models, app.observability, app.evaluation, app.database_errors.
"""
