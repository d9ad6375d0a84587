"""Builders the tests share, one module per kind of thing built:

- files: files on disk and JSON-lines bodies
- splits: benchmarks and synthetic splits added through the command line
- users: users with a cheap password hash, and the API's bearer header
- browser: a test client used as a browser (CSRF tokens from the pages, forms, login)
- api_world: the API tests' small world (a public and a hidden split, two teams, tokens)
- security_world: the security tests' world (a split per feedback policy, submissions, rejected files)
- submission_world: the submission service tests' world (a public and a hidden split, two teams, an admin)

Servers (tests/load/servers.py) and the PostgreSQL cluster (tests/postgres.py) stay where they are: the
benchmark scripts import them too.
"""
