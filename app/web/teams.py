"""Teams: my teams, a team's members, invite links, leaving, being named on the team's public page; and that
public page, /teams/<slug>, for everyone."""

from __future__ import annotations

from flask import Blueprint, abort, flash, make_response, redirect, render_template, request, url_for
from flask_login import current_user, login_required

from app.http import caching
from app.http.errors import answer_to
from app.services.boards import page_versions, team_pages
from app.services.errors import ServiceError
from app.services.people import teams
from app.web import progress_chart
from app.web.forms import ConfirmForm, ShownForm, TeamForm

bp = Blueprint("teams", __name__)


def _me():
    return current_user._get_current_object()


@bp.route("/teams", methods=["GET", "POST"])
@login_required
def index():
    form = TeamForm()
    status = 200
    headers: dict[str, str] = {}
    if form.validate_on_submit():
        try:
            team = teams.create_team(form.name.data, _me())
        except ServiceError as exc:
            form.form_errors.append(exc.message)
            status, headers = exc.status, answer_to(exc).all_headers()  # when to try again, if ever
        else:
            flash(f"Created team {team.name}.")
            return redirect(url_for("teams.detail", team_id=team.id))
    elif form.is_submitted():
        status = 400
    me = _me()
    return render_template("teams/index.html", form=form, teams=me.teams, room=teams.room(me)), status, headers


def _team_page(team, invite_url: str | None = None, invited_email: str | None = None):
    shown = teams.is_shown(team, _me())
    response = make_response(
        render_template(
            "teams/detail.html",
            team=team,
            members=teams.members(team),
            confirm=ConfirmForm(),
            invite_url=invite_url,
            invited_email=invited_email,
            shown=shown,
            shown_form=ShownForm(formdata=None, shown="no" if shown else "yes"),
        )
    )
    if invite_url:
        # The link is a credential: keep it out of caches.
        response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/teams/<int:team_id>")
@login_required
def detail(team_id: int):
    return _team_page(teams.get_team_for(team_id, _me()))


@bp.post("/teams/<int:team_id>/invites")
@login_required
def create_invite(team_id: int):
    team = teams.get_team_for(team_id, _me())
    email = (request.form.get("email") or "").strip() or None
    token = teams.create_invite(team, _me(), email=email)
    # Shown once, in this response only: the server keeps just the token's digest.
    return _team_page(team, invite_url=url_for("teams.invite", token=token, _external=True), invited_email=email)


@bp.post("/teams/<int:team_id>/shown")
@login_required
def set_shown(team_id: int):
    """A member names themselves on the team's public page, or stops (their own membership only)."""
    form = ShownForm()
    if not form.validate_on_submit():
        abort(400)
    team = teams.get_team_for(team_id, _me())
    teams.set_shown(team, _me(), form.wanted)
    flash(
        f"You are named on {team.name}'s public page."
        if form.wanted
        else f"You are no longer named on {team.name}'s public page (members are still counted)."
    )
    return redirect(url_for("teams.detail", team_id=team.id), code=303)


@bp.get("/teams/<team_slug>")
@caching.public(page_versions.team)
def public_page(team_slug: str):
    """Anyone's view of a team (the members' own page is /teams/<id>: an id is all digits, a slug never is)."""
    page = team_pages.team_page(team_slug)
    # A chart needs two entries to show progress; one entry is its table row.
    charts = [
        progress_chart.for_team_board(board, number) if len(board.entries) > 1 else None
        for number, board in enumerate(page.boards, 1)
    ]
    return render_template("teams/public.html", page=page, charts=charts)


@bp.post("/teams/<int:team_id>/leave")
@login_required
def leave(team_id: int):
    team = teams.get_team_for(team_id, _me())
    name = team.name
    teams.leave_team(team, _me())
    flash(f"You left {name}.")
    return redirect(url_for("teams.index"))


@bp.route("/invites/<token>", methods=["GET", "POST"])
@login_required
def invite(token: str):
    if request.method == "POST":
        team = teams.accept_invite(token, _me())
        flash(f"You are a member of {team.name}.")
        return redirect(url_for("teams.detail", team_id=team.id))
    found = teams.find_invite(token)
    response = make_response(
        render_template(
            "teams/invite.html",
            token=token,
            team=found.team,
            already_member=_me().is_member(found.team_id),
            room=teams.room(_me()),
            confirm=ConfirmForm(),
        )
    )
    # The token is in this page's URL; do not pass it on in Referer headers or keep it in caches.
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response
