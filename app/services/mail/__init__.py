"""Mail: what the site sends to people (password resets, address checks, invitations, notifications).

Owns the sending: a letter is queued as a "mail" job in the caller's transaction (so it goes if and only if the
change it tells of commits) and written when the job runs, by the service that owns its subject (it registers
a writer by name: people for resets, address checks and invitations; catalog for reveals; maintenance for
rescorings). Written at sending, a letter carries the state of that moment (a reset link signed then, an
opt-out honoured then) and the jobs table never holds a link that opens an account. Delivery is SMTP through
Flask-Mail, or the log when no MAIL_SERVER is set (the demo). An address the server refuses for good is
recorded as undeliverable, an outcome and not a failing job (`undeliverable`). Public: `outbox`, `undeliverable`.

May import: app.services.jobs, app.settings, app.db, app.models.
"""
