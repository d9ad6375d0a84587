"""The audit log: one event per maintainer action, written in the transaction of the action itself.

Public: `audit_log`. Imports nothing of the other service packages.

May import: app.db, app.models.
"""
