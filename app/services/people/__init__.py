"""People: accounts (registration, passwords, sessions, API tokens), teams with their members and invites,
and the login and registration throttle shared by every worker.

Public: `accounts`, `teams`, `throttle`. Imports nothing of the other service packages but `errors`.
"""
