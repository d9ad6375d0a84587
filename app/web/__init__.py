"""The HTML pages: their blueprints, forms and templates' helpers, and the maintainers' console (`console`).

May import: app.services.maintenance, app.services.boards, app.services.intake, app.services.blind_test,
app.services.catalog, app.services.people, app.services.errors, app.http, app.db, app.models, app.observability,
app.evaluation.
"""
