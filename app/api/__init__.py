"""The JSON API (versioned blueprints): its views (v1), the shapes they answer with and accept (shapes), the
OpenAPI document generated from those (openapi) and the page that shows it (docs). It authenticates with bearer
tokens only, never the session cookie.

May import: app.services.boards, app.services.intake, app.services.blind_test, app.services.catalog,
app.services.people, app.services.errors, app.http, app.db, app.models, app.evaluation, app.bundles.
"""
