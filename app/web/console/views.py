"""The console's pages: thin views over app.services.maintenance.maintainer_actions (every change is audited there)."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.http.request_limits import accepts_upload
from app.services import catalog
from app.services.catalog import references
from app.services.errors import ServiceError
from app.services.maintenance import label_audits, maintainer_actions
from app.web.console.blueprint import admin_required, bp, form_status
from app.web.console.forms import (
    ButtonForm,
    HideForm,
    PhaseForm,
    PolicyForm,
    ReferenceForm,
    SelectChoice,
    SignOutForm,
    SplitForm,
    SubsetForm,
    VerifyForm,
)


def _me():
    return current_user._get_current_object()


def _split_page(
    benchmark: str,
    split: str,
    *,
    status: int = 200,
    error: ServiceError | None = None,
    policy_form: PolicyForm | None = None,
    subset_form: SubsetForm | None = None,
    reference_form: ReferenceForm | None = None,
    phase_form: PhaseForm | None = None,
):
    """The split's page; after a failed POST, the form that was sent keeps what was typed into it."""
    view = maintainer_actions.split_view(benchmark, split)
    if policy_form is None:
        policy_form = PolicyForm(formdata=None, obj=view.split)
    if phase_form is None:
        phase_form = PhaseForm(formdata=None, obj=view.split)
    return render_template(
        "console/split.html",
        split=view.split,
        entries=view.entries,
        error=error,
        risks=view.risks,
        policy_form=policy_form,
        phase_form=phase_form,
        subset_form=subset_form or SubsetForm(formdata=None),
        reference_form=reference_form or ReferenceForm(formdata=None),
        references=view.references,
        hide_form=HideForm(formdata=None),
        verify_form=VerifyForm(formdata=None),
        button=ButtonForm(formdata=None),
    ), status


def _index(*, sign_out_form: SignOutForm | None = None, error: ServiceError | None = None, status: int = 200):
    return render_template(
        "console/index.html",
        benchmarks=maintainer_actions.overview(),
        error=error,
        sign_out_form=sign_out_form or SignOutForm(formdata=None),
    ), status


@bp.get("/")
@admin_required
def index():
    return _index()


@bp.post("/users/sign-out")
@admin_required
def sign_out_everywhere():
    form = SignOutForm()
    if not form.validate_on_submit():
        return _index(sign_out_form=form, status=form_status(form))
    try:
        user = maintainer_actions.sign_out_everywhere(_me(), form.email.data)
    except ServiceError as exc:
        return _index(sign_out_form=form, error=exc, status=exc.status)
    flash(f"Signed {user.email} out everywhere: every session of theirs has ended.")
    return redirect(url_for("console.index"), code=303)


@bp.get("/splits/<benchmark>/<split>")
@admin_required
def split(benchmark: str, split: str):
    return _split_page(benchmark, split)


@bp.get("/splits/<benchmark>/<split>/labels")
@admin_required
def label_audit(benchmark: str, split: str):
    """The examples whose gold label the stored submissions most consistently contradict (names labels:
    maintainers only)."""
    try:
        report = label_audits.audit_labels(benchmark, split, request.args.get("top"))
    except ServiceError as exc:
        if exc.status == 404:
            raise
        # No submissions yet is the page's empty state (200); a bad `top` is the visitor's mistake (422).
        status = 200 if exc.status == 409 else exc.status
        view = catalog.get_split(benchmark, split)
        return render_template("console/labels.html", split=view, report=None, error=exc), status
    return render_template("console/labels.html", split=report.split, report=report, error=None)


@bp.post("/splits/<benchmark>/<split>/policy")
@admin_required
def policy(benchmark: str, split: str):
    form = PolicyForm()
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form), policy_form=form)
    try:
        maintainer_actions.set_policy(
            _me(),
            benchmark,
            split,
            per_day=form.per_day.data,
            per_month=form.per_month.data,
            total=form.total.data,
            rejected_per_day=form.rejected_per_day.data,
            feedback=form.feedback.data,
            is_open=form.is_open.data,
            sealed_fraction=form.sealed_fraction.data,
        )
    except ServiceError as exc:
        return _split_page(benchmark, split, status=exc.status, error=exc, policy_form=form)
    flash(f"Saved the policy of {benchmark}/{split}.")
    return redirect(url_for("console.split", benchmark=benchmark, split=split), code=303)


@bp.post("/splits/<benchmark>/<split>/phase")
@admin_required
def phase(benchmark: str, split: str):
    form = PhaseForm()
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form), phase_form=form)
    try:
        maintainer_actions.set_phase(
            _me(), benchmark, split, opens_at=form.opens_at.data, closes_at=form.closes_at.data
        )
    except ServiceError as exc:
        if exc.field in form:  # the problem beside the field at fault, as well as at the top
            form[exc.field].errors = [*form[exc.field].errors, exc.message]
        return _split_page(benchmark, split, status=exc.status, error=exc, phase_form=form)
    flash(f"Saved when {benchmark}/{split} takes uploads.")
    return redirect(url_for("console.split", benchmark=benchmark, split=split), code=303)


@bp.post("/splits/<benchmark>/<split>/reveal")
@admin_required
def reveal(benchmark: str, split: str):
    return _split_button(
        benchmark,
        split,
        maintainer_actions.reveal_split,
        f"Revealed {benchmark}/{split}: its published entries and their scores are now public.",
    )


@bp.post("/splits/<benchmark>/<split>/default")
@admin_required
def pin_default(benchmark: str, split: str):
    return _split_button(
        benchmark,
        split,
        maintainer_actions.pin_default_split,
        f"{benchmark}/{split} is now the benchmark's landing split.",
    )


def _split_button(benchmark: str, split: str, action, done: str):
    """A split page's one-button action: the action, then back to the page saying what was done (or the page
    again with the service's refusal)."""
    form = ButtonForm()
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form))
    try:
        action(_me(), benchmark, split)
    except ServiceError as exc:
        return _split_page(benchmark, split, status=exc.status, error=exc)
    flash(done)
    return redirect(url_for("console.split", benchmark=benchmark, split=split), code=303)


@bp.post("/splits/<benchmark>/<split>/subsets")
@accepts_upload
@admin_required
def add_subset(benchmark: str, split: str):
    form = SubsetForm()
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form), subset_form=form)
    try:
        subset, rescored = maintainer_actions.add_subset(
            _me(), benchmark, split, form.name.data.strip(), form.ids.data.read()
        )
    except ServiceError as exc:
        return _split_page(benchmark, split, status=exc.status, error=exc, subset_form=form)
    flash(
        f"Added subset {subset.name} ({subset.size:,} examples); rescored {rescored} "
        f"submission{'' if rescored == 1 else 's'}."
    )
    return redirect(url_for("console.split", benchmark=benchmark, split=split), code=303)


@bp.post("/splits/<benchmark>/<split>/references")
@admin_required
def add_reference(benchmark: str, split: str):
    form = ReferenceForm()
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form), reference_form=form)
    try:
        row = references.add_reference(
            benchmark,
            split,
            form.name.data,
            form.scores.data,
            form.source.data,
            published_on=form.date.data,
            actor=_me(),
            via="web",
        )
    except ServiceError as exc:
        if exc.field in form:  # the problem beside the field at fault, as well as at the top
            form[exc.field].errors = [*form[exc.field].errors, exc.message]
        return _split_page(benchmark, split, status=exc.status, error=exc, reference_form=form)
    dated = f", dated {row.published_on}" if row.published_on else ""
    flash(f"Added the reference row {row.name}{dated}: it stands where its score falls on the board.")
    return redirect(url_for("console.split", benchmark=benchmark, split=split) + "#references-heading", code=303)


@bp.post("/splits/<benchmark>/<split>/references/<int:reference_id>/remove")
@admin_required
def remove_reference(benchmark: str, split: str, reference_id: int):
    form = ButtonForm()
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form))
    try:
        row = references.remove_reference(benchmark, split, reference_id, actor=_me(), via="web")
    except ServiceError as exc:
        return _split_page(benchmark, split, status=exc.status, error=exc)
    flash(f"Removed the reference row {row.name}.")
    return redirect(url_for("console.split", benchmark=benchmark, split=split) + "#references-heading", code=303)


def _split_form() -> SplitForm:
    form = SplitForm()
    form.benchmark.choices = [SelectChoice(b.slug, f"{b.name} ({b.task_type})") for b in catalog.list_benchmarks()]
    if request.method == "GET" and request.args.get("benchmark"):
        form.benchmark.data = request.args["benchmark"]
    return form


@bp.route("/splits/new", methods=["GET", "POST"])
@accepts_upload
@admin_required
def new_split():
    form = _split_form()
    if not form.validate_on_submit():
        status = form_status(form) if request.method == "POST" else 200
        return render_template("console/new_split.html", form=form, error=None), status
    annotations = form.annotations.data.read() if form.annotations.data else None
    choices = form.choices.data.read() if form.choices.data else None
    try:
        added = maintainer_actions.add_split(
            _me(),
            form.benchmark.data,
            form.slug.data.strip(),
            form.gold.data.read(),
            hidden=form.hidden.data,
            name=(form.name.data or "").strip() or None,
            annotations=annotations,
            subset_field=(form.subset_field.data or "").strip() or None,
            choices=choices,
        )
    except ServiceError as exc:
        return render_template("console/new_split.html", form=form, error=exc), exc.status
    flash(
        f"Added split {added.benchmark.slug}/{added.slug} ({added.example_count:,} examples, "
        f"{len(added.subsets)} subset{'' if len(added.subsets) == 1 else 's'})."
    )
    return redirect(url_for("console.split", benchmark=added.benchmark.slug, split=added.slug), code=303)


def _entry_action(submission_id: int, form, action):
    """Hide, unhide, verify or unverify, then back to the entry's split page (or that page with the problem named)."""
    entry = maintainer_actions.submission_for_console(submission_id)
    benchmark, split = entry.split.benchmark.slug, entry.split.slug
    if not form.validate_on_submit():
        return _split_page(benchmark, split, status=form_status(form), error=_form_problem(form))
    try:
        action()
    except ServiceError as exc:
        return _split_page(benchmark, split, status=exc.status, error=exc)
    return redirect(url_for("console.split", benchmark=benchmark, split=split) + f"#entry-{submission_id}", code=303)


def _form_problem(form) -> ServiceError:
    messages = [
        f"{form[name].label.text if name in form else name}: {message}"
        for name, errors in form.errors.items()
        for message in errors
    ]
    return ServiceError("; ".join(messages) or "the form is incomplete")


@bp.post("/entries/<int:submission_id>/hide")
@admin_required
def hide(submission_id: int):
    form = HideForm()

    def act():
        entry = maintainer_actions.hide_entry(_me(), submission_id, form.reason.data)
        flash(f"Hid entry {entry.id} ({entry.model_name}).")

    return _entry_action(submission_id, form, act)


@bp.post("/entries/<int:submission_id>/unhide")
@admin_required
def unhide(submission_id: int):
    form = ButtonForm()

    def act():
        entry = maintainer_actions.unhide_entry(_me(), submission_id)
        flash(f"Entry {entry.id} ({entry.model_name}) is shown again.")

    return _entry_action(submission_id, form, act)


@bp.post("/entries/<int:submission_id>/verify")
@admin_required
def verify(submission_id: int):
    form = VerifyForm()

    def act():
        entry = maintainer_actions.verify_entry(_me(), submission_id, form.note.data, form.url.data or None)
        flash(f"Entry {entry.id} ({entry.model_name}) is marked verified.")

    return _entry_action(submission_id, form, act)


@bp.post("/entries/<int:submission_id>/unverify")
@admin_required
def unverify(submission_id: int):
    form = ButtonForm()

    def act():
        entry = maintainer_actions.unverify_entry(_me(), submission_id)
        flash(f"Entry {entry.id} ({entry.model_name}) is no longer marked verified.")

    return _entry_action(submission_id, form, act)


@bp.get("/rejected")
@admin_required
def rejected():
    return render_template("console/rejected.html", attempts=maintainer_actions.rejected_attempts())


@bp.get("/audit")
@admin_required
def audit_log():
    page = request.args.get("page", "1")
    number = int(page) if page.isdigit() and len(page) < 10 else 1
    return render_template("console/audit.html", log=maintainer_actions.audit_log(number))


@bp.get("/jobs")
@admin_required
def jobs():
    return render_template("console/jobs.html", page=maintainer_actions.jobs_page(), form=ButtonForm())


@bp.post("/jobs/<int:job_id>/rerun")
@admin_required
def rerun_job(job_id: int):
    form = ButtonForm()
    if not form.validate_on_submit():
        flash("The form expired: try again.")
        return redirect(url_for("console.jobs")), 303
    try:
        ((_, new),) = maintainer_actions.rerun_jobs(_me(), [job_id], via="console")
    except ServiceError as exc:
        flash(str(exc))
    else:
        flash(f"Job {job_id} queued again as job {new}.")
    return redirect(url_for("console.jobs")), 303


@bp.post("/jobs/<int:job_id>/dismiss")
@admin_required
def dismiss_job(job_id: int):
    form = ButtonForm()
    if not form.validate_on_submit():
        flash("The form expired: try again.")
        return redirect(url_for("console.jobs")), 303
    try:
        maintainer_actions.dismiss_jobs(_me(), [job_id], via="console")
    except ServiceError as exc:
        flash(str(exc))
    else:
        flash(f"Job {job_id} dismissed: it no longer counts as needing attention.")
    return redirect(url_for("console.jobs")), 303
