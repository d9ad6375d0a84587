"""People: accounts (registration, passwords, sessions, API tokens), teams with their members and invites,
and the login and registration throttle shared by every worker.

Public: `accounts`, `teams`, `throttle`. Mails resets, address checks and invitations through `mail`, and
audits what maintainers do to accounts.

May import: app.services.mail, app.services.audit, app.services.errors, app.settings, app.db, app.models, app.names.
"""
