"""gunicorn's access log, as text (LOG_FORMAT=text, the default) or JSON lines (LOG_FORMAT=json; see
gunicorn.conf.py), both redacted.

One object a line: time, method, path, query, status, duration, bytes, remote address (the client's, with
TRUSTED_PROXIES, as the app sees it). Never a header (so
no token or cookie), never a body (so no password or file), and never a secret that travels in the URL:
the token of /invites/<token>, /password/reset/<token> and /account/verify/<token> (also where it is the
`next` parameter of the login page) and the
values of query parameters named like a credential are replaced by "[redacted]".
"""

from __future__ import annotations

import json
import os
import re
import traceback
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode

from gunicorn.glogging import Logger

REDACTED = "[redacted]"
# Routes whose path carries a secret in the segment after this prefix.
# Paths that are credentials: an invitation, a password-reset link, an address-check link.
SECRET_PATHS = re.compile(r"^(/invites/|/password/reset/|/account/verify/)[^/?]+")
SECRET_PARAMETERS = re.compile(r"token|password|passwd|secret|key|auth|session|csrf|code", re.IGNORECASE)


def clean_path(path: str) -> str:
    return SECRET_PATHS.sub(lambda m: m.group(1) + REDACTED, path)


def _clean_parameter(name: str, value: str) -> str:
    if SECRET_PARAMETERS.search(name):
        return REDACTED
    # `next` (where to go after logging in) may be a path with a secret in it: /login?next=/invites/<token>.
    return clean_path(value) if name == "next" else value


def clean_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode([(k, _clean_parameter(k, v)) for k, v in pairs], safe="[]/")


def record(environ: dict, status: str | int, duration_seconds: float, sent: int | None) -> dict:
    """The log record of one answered request."""
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "method": environ.get("REQUEST_METHOD"),
        "path": clean_path(environ.get("PATH_INFO") or ""),
        "query": clean_query(environ.get("QUERY_STRING") or ""),
        "status": int(str(status).split(None, 1)[0]),
        "duration_ms": round(duration_seconds * 1000, 3),
        "bytes": sent,
        "remote_addr": remote_address(environ),
    }


def remote_address(environ: dict) -> str | None:
    """The client's address: the peer, or with TRUSTED_PROXIES=n the address the n-th proxy in front
    saw (as the app reads it, werkzeug's ProxyFix)."""
    hops = int(os.environ.get("TRUSTED_PROXIES") or 0)
    forwarded = [part.strip() for part in (environ.get("HTTP_X_FORWARDED_FOR") or "").split(",") if part.strip()]
    if hops > 0 and len(forwarded) >= hops:
        return forwarded[-hops]
    return environ.get("REMOTE_ADDR")


class JsonLogger(Logger):
    """gunicorn's Logger with the access lines written as JSON; error lines are unchanged."""

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        try:
            line = record(environ, resp.status, request_time.total_seconds(), getattr(resp, "sent", None))
            self.access_log.info("%s", json.dumps(line, ensure_ascii=False))
        except Exception:
            self.error(traceback.format_exc())


class TextLogger(Logger):
    """gunicorn's Logger with its text access line (access_log_format) redacted like the JSON one: the
    request line, path and query carry no invitation, reset or address-check link, nor a credential-named
    parameter's value."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        path = clean_path(environ.get("PATH_INFO") or "")
        query = clean_query(environ.get("QUERY_STRING") or "")
        target = f"{path}?{query}" if query else path
        atoms["U"], atoms["q"] = path, query
        atoms["r"] = f"{environ.get('REQUEST_METHOD')} {target} {environ.get('SERVER_PROTOCOL')}"
        return atoms
