"""/metrics for Prometheus, and the per-request counts and timings behind it (app/observability.py).

Served only to addresses in METRICS_ALLOW (default loopback) or to a request carrying
`Authorization: Bearer <METRICS_TOKEN>`; anyone else gets 404, as if there were nothing here, and a wrong
token 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import time

from flask import Blueprint, Flask, Response, abort, current_app, g, request

from app import observability
from app.http.security import bearer_token
from app.services.maintenance import health

bp = Blueprint("metrics", __name__)
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


def _allowed() -> bool:
    token = current_app.config.get("METRICS_TOKEN")
    presented = bearer_token(request.headers.get("Authorization"))
    if token and presented is not None:
        if hmac.compare_digest(presented.encode(), token.encode()):
            return True
        abort(403)
    try:
        address = ipaddress.ip_address(request.remote_addr or "")
    except ValueError:  # a Unix socket or no address at all: not one we were told to trust
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return any(address.ipv4_mapped in network for network in current_app.config.get("METRICS_ALLOW", ()))
    return any(address in network for network in current_app.config.get("METRICS_ALLOW", ()))


@bp.get("/metrics")
def metrics():
    if not _allowed():
        abort(404)
    return Response(
        observability.exposition(queue=health.queue_gauges()),
        content_type=observability.CONTENT_TYPE,
        headers={"Cache-Control": "no-store"},
    )


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)

    @app.before_request
    def _start_clock() -> None:
        g._metrics_started = time.perf_counter()

    @app.after_request
    def _count(response):
        started = g.pop("_metrics_started", None)
        if started is not None:
            # The endpoint name, not the path: one series per route however many ids and slugs there are.
            method = request.method if request.method in METHODS else "other"
            observability.request_answered(request.endpoint or "unmatched", method, response.status_code, started)
        return response
