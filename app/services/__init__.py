"""Use cases, grouped by concept into packages. Each public function is one transaction and the only place
that commits; none knows of HTTP, and settings arrive as arguments.

From the ground up (a package imports only packages below it; the contracts in pyproject.toml check it):
    errors.py     the errors every use case raises and the web, API and CLI turn into answers
    audit/        the maintainers' audit log
    storage/      stored files: checksums, the original uploads
    jobs/         heavy work taken off the request: the queue, its runs, who runs them
    mail/         what the site sends to people, queued as jobs
    people/       accounts, teams, the login throttle
    catalog/      benchmarks, splits, subsets, gold (label) files, references, rescoring
    blind_test/   what a viewer may see of a split's scores; releases and probe flags
    intake/       submissions under quotas: validate, score, store, publish, moderate
    boards/       leaderboards and their snapshots, the models view, exports, submission pages, listings
    maintenance/  the audited maintainer actions, label audits, backups, the demo
(audit, storage and jobs stand side by side, none importing another.)

May import: app.settings, app.db, app.models, app.schema, app.names, app.synthetic, app.observability, app.bundles,
app.lru, app.evaluation.
"""
