"""The console's list of probe flags: near-identical submissions on a hidden split, within a team or across teams."""

from __future__ import annotations

from flask import render_template, request

from app.services.blind_test import integrity
from app.web.console.blueprint import admin_required, bp


@bp.get("/flags")
@admin_required
def flags():
    listing = integrity.list_flags(
        request.args.get("split"), request.args.get("team"), kind_ref=request.args.get("kind")
    )
    return render_template(
        "console/flags.html", listing=listing, threshold=integrity.probe_distance(), kinds=integrity.FLAG_KINDS
    )
