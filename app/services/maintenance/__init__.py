"""Maintenance: the maintainers' actions, each audited (`maintainer_actions`, used by the console and the
command line), label audits and corrected gold files (`label_audits`), backups and restore (`backups`) and
the demo (`demo`, and its crowded board's runs, `demo_crowd`), and bundles applied, dry-run and exported (`bundles`).

May import: app.bundles, app.services.boards, app.services.intake, app.services.blind_test, app.services.catalog,
app.services.people, app.services.mail, app.services.storage, app.services.audit, app.services.jobs,
app.services.errors, app.settings, app.db, app.models, app.schema, app.synthetic, app.evaluation.
"""
