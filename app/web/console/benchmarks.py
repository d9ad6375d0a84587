"""The console's benchmark pages: a benchmark with its bundle (shown and downloaded), and a bundle uploaded for a
dry run, reviewed, then applied. Thin views over app/services/maintenance/bundles.py, which reads the archive,
refuses it whole naming every problem, and writes the audit events (via "bundle-web")."""

from __future__ import annotations

from flask import Response, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.http.request_limits import accepts_upload
from app.services.errors import InvalidInput, ServiceError
from app.services.maintenance import bundles
from app.web.console.blueprint import admin_required, bp, form_status
from app.web.console.forms import ApplyBundleForm, BundleForm

# The flash after applying names this many changes, each cut to this many characters (the session cookie carries
# it, and a browser drops a cookie over 4 KB: a split's summary can list hundreds of subsets); the audit log has all.
FLASHED_CHANGES = 5
FLASHED_CHARS = 160


def _me():
    return current_user._get_current_object()


def _benchmark_page(slug: str, *, form: BundleForm | None = None, error: ServiceError | None = None, status=200):
    page = bundles.benchmark_bundle(slug)
    return render_template(
        "console/benchmark.html",
        benchmark=page.benchmark,
        bundle_text=page.text,
        form=form or BundleForm(formdata=None),
        error=error,
    ), status


def _review_page(
    outcome: bundles.Outcome | None,
    digest: str | None,
    *,
    apply_form: ApplyBundleForm | None = None,
    error: ServiceError | None = None,
    status: int = 200,
):
    """The dry run's changes and the form that applies the same archive; after a refused apply (no outcome), the
    refusal with the apply form as it was sent and the upload form for a new dry run."""
    return render_template(
        "console/bundle_review.html",
        outcome=outcome,
        digest=digest,
        apply_form=apply_form or ApplyBundleForm(formdata=None, reviewed_sha256=digest),
        upload_form=BundleForm(formdata=None),
        error=error,
        # A label correction needs its reason: the page says so where a change is one (the CLI's words).
        gold_change=any(change.summary.startswith("gold file corrected") for change in outcome.changes)
        if outcome
        else False,
    ), status


def _dry_run(form: BundleForm) -> tuple[bundles.Outcome, str]:
    return bundles.apply_bundle_archive(_me(), form.archive.data.read(), dry_run=True, via="web")


@bp.get("/benchmarks/<benchmark>")
@admin_required
def benchmark(benchmark: str):
    return _benchmark_page(benchmark)


@bp.get("/benchmarks/<benchmark>/bundle.zip")
@admin_required
def bundle_download(benchmark: str):
    name, data = bundles.bundle_archive(benchmark)
    # It holds the hidden splits' gold labels: for this maintainer alone, kept by no cache on the way (the console
    # is no-store anyway; said here too, where it matters most).
    return Response(
        data,
        mimetype="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"},
    )


@bp.post("/benchmarks/<benchmark>/bundle")
@accepts_upload
@admin_required
def review_bundle(benchmark: str):
    form = BundleForm()
    if not form.validate_on_submit():
        return _benchmark_page(benchmark, form=form, status=form_status(form))
    try:
        outcome, digest = _dry_run(form)
    except ServiceError as exc:
        return _benchmark_page(benchmark, form=form, error=exc, status=exc.status)
    if outcome.benchmark != benchmark:
        # The form of one benchmark's page changes that benchmark alone (the dry run kept nothing).
        wrong = InvalidInput(
            f"this bundle describes the benchmark {outcome.benchmark!r}, not {benchmark!r}: upload it from its own "
            "page, or from “New benchmark from a bundle”; nothing changed"
        )
        return _benchmark_page(benchmark, form=form, error=wrong, status=wrong.status)
    return _review_page(outcome, digest)


@bp.route("/bundles/new", methods=["GET", "POST"])
@accepts_upload
@admin_required
def new_bundle():
    form = BundleForm()
    if not form.validate_on_submit():
        status = form_status(form) if request.method == "POST" else 200
        return render_template("console/new_bundle.html", form=form, error=None), status
    try:
        outcome, digest = _dry_run(form)
    except ServiceError as exc:
        return render_template("console/new_bundle.html", form=form, error=exc), exc.status
    return _review_page(outcome, digest)


@bp.post("/bundles/apply")
@accepts_upload
@admin_required
def apply_bundle():
    form = ApplyBundleForm()
    reviewed = form.reviewed_sha256.data
    if not form.validate_on_submit():
        return _review_page(None, reviewed, apply_form=form, status=form_status(form))
    try:
        outcome, _digest = bundles.apply_bundle_archive(
            _me(),
            form.archive.data.read(),
            dry_run=False,
            reason=form.reason.data,
            reviewed_sha256=reviewed,
            via="web",
        )
    except ServiceError as exc:
        return _review_page(None, reviewed, apply_form=form, error=exc, status=exc.status)
    flash(_applied(outcome))
    return redirect(url_for("console.benchmark", benchmark=outcome.benchmark), code=303)


def _applied(outcome: bundles.Outcome) -> str:
    changes = outcome.changes
    if not changes:
        return f"Applied the bundle of {outcome.benchmark}: nothing to change (the catalog already says what it says)."
    named = "; ".join(f"{change.target}: {_cut(change.summary)}" for change in changes[:FLASHED_CHANGES])
    more = (
        f"; and {len(changes) - FLASHED_CHANGES} more (the audit log has each)"
        if len(changes) > FLASHED_CHANGES
        else ""
    )
    count = f"{len(changes)} change{'' if len(changes) == 1 else 's'}"
    return f"Applied the bundle of {outcome.benchmark} ({count}): {named}{more}."


def _cut(summary: str) -> str:
    return summary if len(summary) <= FLASHED_CHARS else summary[: FLASHED_CHARS - 1].rstrip(" ,;") + "…"
