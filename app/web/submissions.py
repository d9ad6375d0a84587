"""Uploading predictions from the browser, the submission page, publication and moderation."""

from __future__ import annotations

from flask import Blueprint, Response, abort, flash, jsonify, redirect, render_template, request, url_for
from flask_login import current_user, login_required

from app.http import caching
from app.http.errors import ErrorAnswer, answer_to
from app.http.request_limits import accepts_upload
from app.http.security import login_manager
from app.services import catalog
from app.services.boards import comparisons, leaderboards, listings, page_versions, submission_pages
from app.services.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    ServiceError,
    StorageFailed,
    Throttled,
    TooLarge,
)
from app.services.intake import quotas, submissions
from app.web.forms import ConfirmForm, HideForm, PublishForm, UploadForm

bp = Blueprint("submissions", __name__)


def _upload_form() -> tuple[UploadForm, list]:
    form = UploadForm()
    choices = quotas.upload_choices(current_user)
    form.team.choices = [(str(team.id), team.name) for team in current_user.teams]
    form.split.choices = [(f"{c.split.benchmark.slug}/{c.split.slug}", c.label) for c in choices]
    if request.method == "GET" and request.args.get("split"):
        form.split.data = request.args["split"]
    return form, choices


def _field_of(exc: ServiceError, form: UploadForm) -> str:
    """The form field a refused upload is about, for its message beside it and the summary's link to it: the
    one the service names, else the team for a team it may not send for, the file for what is wrong with the
    file (its problems, its size, its storage), the split for the rest (closed, over its quota)."""
    if exc.field and exc.field in form:
        return exc.field
    if exc.field and exc.field.startswith("fields."):  # an entry field: its input is named after the split
        return f"fields-{form.split.data}-{exc.field.removeprefix('fields.')}"
    if isinstance(exc, Forbidden):
        return "team"
    if isinstance(exc, (InvalidInput, TooLarge, StorageFailed)) or exc.problems:
        return "file"
    return "split"


def _typed_fields(prefix: str) -> dict[str, str]:
    """The entry-field inputs of a posted form whose names start with `prefix` ("fields-", or on the upload page
    "fields-<benchmark>-": one group per benchmark), by field key; the service checks each value."""
    return {name[len(prefix) :]: value for name, value in request.form.items() if name.startswith(prefix)}


def _wants_json() -> bool:
    # The upload page's script posts with this header to show progress and then follows the redirect.
    return request.headers.get("X-Requested-With") == "fetch"


@bp.route("/submit", methods=["GET", "POST"])
@accepts_upload
@login_required
def new():
    form, choices = _upload_form()
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        if _wants_json() and request.method == "POST":
            details = [
                {"line": None, "field": name, "message": f"{form[name].label.text}: {message}"}
                for name, messages in form.errors.items()
                for message in messages
            ]
            return ErrorAnswer(400 if "csrf_token" in form.errors else 422, "The form is incomplete.", details).json()
        return render_template("submissions/new.html", form=form, choices=choices), status
    benchmark_slug, _, split_slug = form.split.data.partition("/")
    upload = submissions.Upload(
        data=form.file.data.read(),
        model_name=form.model_name.data,
        description=form.description.data or "",
        paper_url=form.paper_url.data,
        code_url=form.code_url.data,
        anonymous=form.anonymous.data,
        fields=_typed_fields(f"fields-{form.split.data}-") or None,
    )
    try:
        result = submissions.submit(current_user, form.team.data, benchmark_slug, split_slug, upload)
    except ServiceError as exc:
        field = _field_of(exc, form)
        body, status, headers = answer_to(exc).json()
        if _wants_json():
            return jsonify(body | {"field": field}), status, headers
        if field in form:
            form[field].errors = [*form[field].errors, exc.message]  # beside the field too, as the script shows it
        return (
            render_template("submissions/new.html", form=form, choices=choices, error=exc, error_field=field),
            status,
            headers,
        )
    target = url_for("submissions.show", submission_id=result.id)
    if _wants_json():
        return jsonify(redirect=target, id=result.id), 201
    return redirect(target, code=303)


@bp.get("/submissions")
@login_required
def mine():
    args = request.args
    listing = listings.team_submissions(
        current_user, args.get("benchmark"), args.get("split"), args.get("page"), args.get("q")
    )
    return render_template("submissions/list.html", listing=listing, metric_labels=leaderboards.METRIC_LABELS)


@bp.get("/submissions/<int:submission_id>")
@caching.public(page_versions.submission)
def show(submission_id: int):
    return _show_page(submission_id)


@bp.get("/submissions/<int:submission_id>/file")
def original_file(submission_id: int):
    """The file as uploaded, byte for byte: for the team's members and maintainers; everyone else, a visitor
    who is not logged in included, gets 404, whether the submission exists or not. Never cached (no-store)."""
    found = submissions.original_file(current_user, submission_id)
    return Response(
        found.data,
        content_type=f"{found.media_type}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'},
    )


@bp.get("/submissions/<int:submission_id>/examples.csv")
def example_results(submission_id: int):
    """A published entry's per-example results (public splits only; 404 with the reason elsewhere)."""
    found = comparisons.example_results(submission_id)
    return Response(
        found.body,
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'},
    )


def _show_page(
    submission_id: int, publish_form: PublishForm | None = None, error: ServiceError | None = None, status: int = 200
):
    typed = {name: value for name, value in request.form.items() if name.startswith("fields-")}
    # Open to everyone: page_for shows a published entry to the public and answers 404 for anything else;
    # a visitor who is not logged in is asked to log in instead (it may be their team's submission).
    try:
        view = submission_pages.page_for(current_user, submission_id)
    except NotFound:
        if not current_user.is_authenticated:
            return login_manager.unauthorized()
        raise
    # Forms (and the CSRF token they put in the session) only for the team and maintainers.
    forms = (
        {}
        if view.public_view
        else {
            "publish_form": publish_form or PublishForm(obj=view.submission),
            "hide_form": HideForm(),
            "button": ConfirmForm(),
        }
    )
    page = render_template(
        "submissions/show.html",
        view=view,
        task=catalog.task_of(view.submission.split.benchmark),
        publish_error=error,
        typed_fields=typed,
        **forms,
    )
    return page, status


@bp.post("/submissions/<int:submission_id>/publish")
@login_required
def publish(submission_id: int):
    form = PublishForm()
    if not form.validate_on_submit():
        if "csrf_token" in form.errors:
            abort(400)
        return _show_page(submission_id, form, status=422)  # what was typed stays, errors by the fields
    try:
        submissions.publish(
            current_user,
            submission_id,
            form.description.data,
            form.paper_url.data,
            form.code_url.data,
            fields=_typed_fields("fields-") or None,
        )
    except (InvalidInput, Conflict, Throttled) as exc:  # a field, a duplicate, too many changes: the form again
        if isinstance(exc, InvalidInput) and exc.field in form:
            form[exc.field].errors = [*form[exc.field].errors, exc.message]
        page, status = _show_page(submission_id, form, exc, status=exc.status)
        return page, status, answer_to(exc).all_headers()
    # Where the entry stands, the page it leads to says (#placement: the board's last snapshot, with a link to it);
    # nothing here waits for the board to be built.
    flash("Published.")
    return redirect(url_for("submissions.show", submission_id=submission_id), code=303)


@bp.post("/submissions/<int:submission_id>/unpublish")
@login_required
def unpublish(submission_id: int):
    if not ConfirmForm().validate_on_submit():
        abort(400)
    submissions.unpublish(current_user, submission_id)
    return redirect(url_for("submissions.show", submission_id=submission_id), code=303)


@bp.post("/submissions/<int:submission_id>/hide")
@login_required
def hide(submission_id: int):
    form = HideForm()
    if not form.validate_on_submit():
        abort(400)
    submissions.hide(current_user, submission_id, form.reason.data)
    return redirect(url_for("submissions.show", submission_id=submission_id), code=303)


@bp.post("/submissions/<int:submission_id>/unhide")
@login_required
def unhide(submission_id: int):
    if not ConfirmForm().validate_on_submit():
        abort(400)
    submissions.unhide(current_user, submission_id)
    return redirect(url_for("submissions.show", submission_id=submission_id), code=303)
