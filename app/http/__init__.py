"""The hallway between the services and the pages: the HTTP plumbing the HTML pages (app/web) and the API
(app/api) share, so that neither holds a copy of it.

    security.py        sessions, bearer tokens, CSRF, the trusted Host names, the checks of text input
    request_limits.py  how large and deep a request body may be, set per route before anything reads it
    caching.py         Cache-Control and ETags, and the pages kept in this process's memory to answer them
    errors.py          the one error answer (status, JSON body, Retry-After) of the pages and the API

May import: app.services, app.settings, app.db, app.models, app.schema, app.names, app.synthetic, app.observability, app.lru, app.evaluation
"""  # noqa: E501 (the import line is one line, read by a test)
