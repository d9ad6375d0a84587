"""Jobs: heavy work taken off the request (a board's snapshot after a change, rescoring after a label
correction or a new subset).

Owns the `jobs` table (every run with its state, attempts and last error), queueing in the caller's
transaction with one waiting job per key, running with retries, backoff, a time limit and heartbeats
(queue), and who runs them: `flask worker` processes on PostgreSQL, or the process itself (transport).
The work itself belongs to the service that registers its kind (queue.register). Public: `queue`,
`transport`, `console` (what maintainers, `flask jobs` and /healthz see).

May import: app.services.errors, app.settings, app.db, app.models, app.observability.
"""
