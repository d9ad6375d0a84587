"""JSON API v1 at /api/v1: submit predictions, follow one's submissions, read benchmarks and leaderboards.

Thin views: each parses its input, calls one service function and answers with a model of app/api/shapes.py;
each view's `operation(...)` and docstring are its entry in the OpenAPI document (app/api/openapi.py). Callers
authenticate with `Authorization: Bearer <token>`; the session cookie is ignored here, so CSRF does not
apply. Errors are `{"error": "...", "details": [{"line": n, "message": "..."}]}`.
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

from flask import Blueprint, Response, current_app, request, url_for
from pydantic import ValidationError

from app import bundles
from app.api import openapi
from app.api import shapes as shape
from app.api.openapi import operation
from app.db import db
from app.evaluation import Problem
from app.evaluation.display import score_text
from app.http import caching
from app.http.errors import answer_to
from app.http.request_limits import accepts_upload
from app.http.security import bearer_token, check_form_parts, csrf
from app.models import Split, Submission, User
from app.services.blind_test import visibility
from app.services.boards import comparisons, exports, leaderboards, listings, page_versions
from app.services.boards.board_snapshots import Entry
from app.services.boards.leaderboards import Listed
from app.services.catalog import entry_fields, phases
from app.services.errors import InvalidInput, NotFound, ServiceError
from app.services.intake import quotas, submissions
from app.services.intake.submissions import Upload, timestamp
from app.services.people import accounts

bp = Blueprint("api_v1", __name__, url_prefix="/api/v1")
csrf.exempt(bp)

# Ids are INTEGER columns: 32-bit on PostgreSQL (which errors on a larger value), 64-bit on SQLite.
# A larger id cannot exist and must not reach the driver.
MAX_ID = 2**31 - 1
TRUE = {"true", "1", "on", "yes"}
FALSE = {"false", "0", "off", "no", ""}
REQUIRED_FIELDS = ("benchmark", "split", "model_name")


class Unauthenticated(ServiceError):
    status = 401


# --- errors --------------------------------------------------------------------------------------------


@bp.errorhandler(ServiceError)
def service_error(exc: ServiceError):
    db.session.rollback()
    body, status, headers = answer_to(exc).json()
    if isinstance(exc, Unauthenticated):
        headers["WWW-Authenticate"] = 'Bearer realm="holdout"'
    return body, status, headers


# --- input ---------------------------------------------------------------------------------------------


def _caller() -> User:
    header = request.headers.get("Authorization")
    if not header:
        raise Unauthenticated("authentication required: send the header 'Authorization: Bearer <token>'")
    token = bearer_token(header)
    if token is None:
        raise Unauthenticated("malformed Authorization header: expected 'Bearer <token>'")
    user = accounts.user_for_token(token)
    if user is None:
        raise Unauthenticated("the API token is invalid or has been revoked")
    return user


def _submission_id(value: int) -> int:
    if value < 1 or value > MAX_ID:
        raise NotFound(f"no submission {value}")
    return value


def _flag(name: str, raw: str | None) -> bool:
    value = (raw or "").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise InvalidInput(f"{name} must be true or false (also 1/0, on/off, yes/no), got {raw!r}")


def _read_upload() -> bytes:
    """The `file` part, read no further than one byte past the limit (the body was bounded by werkzeug); the
    service refuses a file over it."""
    return request.files["file"].read(submissions.max_upload_bytes() + 1)


def _check_required_fields() -> None:
    missing = [] if "file" in request.files else ["file"]
    missing += [name for name in REQUIRED_FIELDS if not request.form.get(name, "").strip()]
    if missing:
        raise InvalidInput(
            f"missing required field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}",
            [Problem(None, f"{name} is required") for name in missing],
        )


def _publish_body() -> dict[str, Any]:
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    body = request.get_json(force=True, silent=True)
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object with description, paper_url, code_url, fields")
    try:
        fields = shape.PublishRequest.model_validate(body, strict=True)
    except ValidationError as exc:
        name = exc.errors()[0]["loc"][0]
        if name == "fields":
            raise InvalidInput("fields must be an object of field key: value, or null", field="fields") from None
        raise InvalidInput(f"{name} must be a string or null") from None
    return fields.model_dump()


def _upload_fields(raw: str | None) -> dict | None:
    """The upload's `fields` part: a JSON object of the benchmark's entry fields (the service checks each)."""
    if raw is None or not raw.strip():
        return None
    try:
        values = json.loads(raw)
    except (ValueError, RecursionError):
        values = None
    if not isinstance(values, dict):
        raise InvalidInput('fields must be a JSON object, e.g. {"zero_shot": true}', field="fields")
    return values


# --- output: the models, filled from the services' results ------------------------------------------------


def _number(value: float) -> float | None:
    # NaN/infinity have no JSON spelling.
    return value if math.isfinite(value) else None


def _scores(scores: dict[str, dict[str, float]] | None) -> dict | None:
    if scores is None:
        return None
    return {subset: {metric: _number(v) for metric, v in metrics.items()} for subset, metrics in scores.items()}


def _scores_text(scores: dict[str, dict[str, float]] | None) -> dict | None:
    """The same scores as the submission's page writes them (display.score_text: a released figure to its own
    decimals), for clients that print them."""
    if scores is None:
        return None
    return {subset: {metric: score_text(v) for metric, v in metrics.items()} for subset, metrics in scores.items()}


def _summary(submission: Submission) -> dict:
    return {
        "id": submission.id,
        "benchmark": submission.split.benchmark.slug,
        "split": submission.split.slug,
        "team": submission.team.name,
        "model_name": submission.model_name,
        "status": submission.status,
        "submitted_at": timestamp(submission.created_at),
        "published": submission.published_at is not None,
    }


def _window(listed: Listed) -> dict:
    """Beside a list's items: how many the whole list holds (after any search) and the window given."""
    return {"total": listed.total, "limit": listed.window.limit, "offset": listed.window.offset}


def _quota(choice: quotas.SplitChoice, team: dict) -> shape.SplitQuota:
    split = choice.split
    status = choice.quotas[team["id"]]
    return shape.SplitQuota(
        benchmark=split.benchmark.slug, split=split.slug, team_id=team["id"], team=team["name"], **status.as_dict()
    )


def _verdict(verdict: submissions.Verdict) -> dict:
    return {"improved": verdict.improved, "released": verdict.released}


def _placement(placement: listings.Placement) -> shape.Placement:
    return shape.Placement(
        message=placement.message,
        row=placement.row,
        rows=placement.rows,
        held_until_reveal=placement.held,
        hidden=placement.hidden,
        board_url=url_for("public.leaderboard", benchmark=placement.benchmark, split=placement.split)
        + (f"?page={placement.page}" if placement.page > 1 else ""),
        api_url=url_for("api_v1.leaderboard", benchmark=placement.benchmark, split=placement.split),
    )


def _detail(submission: Submission) -> dict:
    """A submission's fields (of shape.Submission)."""
    shown = visibility.released_scores(submission)
    return _summary(submission) | {
        "sha256": submission.file_sha256,
        "size": submission.file_size,
        "scores": _scores(shown),
        "scores_text": _scores_text(shown),
        **_verdict(submissions.verdict(submission, shown)),
        "errors": submissions.problems_of(submission),
        "refusal": submissions.refusal_of(submission),
        "description": submission.description,
        "paper_url": submission.paper_url,
        "code_url": submission.code_url,
        "anonymous": submission.anonymous,
        "published_at": timestamp(submission.published_at) if submission.published_at else None,
        "verified": _verified(submission),
        "fields": entry_fields.values_of(submission.fields),
    }


def _verified(submission: Submission) -> shape.Verified | None:
    if submission.verified_at is None:
        return None
    return shape.Verified(
        at=timestamp(submission.verified_at), note=submission.verified_note or "", url=submission.verified_url
    )


def _split(split: Split) -> shape.Split:
    return shape.Split(
        slug=split.slug,
        name=split.name,
        hidden=split.hidden,
        examples=split.example_count,
        open=split.is_open,
        feedback=cast(shape.Feedback, split.feedback),
    )


def _score(value: float, bounds: tuple[float | None, float | None], decimals: int | None = None) -> shape.Score:
    low, high = bounds
    return shape.Score(
        **exports.score_document(
            _number(value), None if low is None else _number(low), None if high is None else _number(high), decimals
        )
    )


def _entry(entry: Entry, columns: list[leaderboards.Column]) -> shape.LeaderboardEntry:
    """A leaderboard entry: its significance-aware rank, and every score with its 95% interval (written with the
    decimals its column declares)."""
    decimals = {column.key: column.decimals for column in columns}
    gap = exports.gap_document(entry) if entry.gap_marked is not None else None
    return shape.LeaderboardEntry(
        rank=entry.rank,
        rank_low=entry.rank_low,
        rank_high=entry.rank_high,
        submission_id=entry.submission_id,
        model_name=entry.model_name,
        team=entry.team,
        submitted_at=timestamp(entry.submitted_at),
        paper_url=entry.paper_url,
        code_url=entry.code_url,
        fields=entry.fields,
        scores={
            subset: {
                metric: _score(
                    value,
                    entry.intervals.get(subset, {}).get(metric, (None, None)),
                    decimals.get(f"{subset}:{metric}"),
                )
                for metric, value in metrics.items()
            }
            for subset, metrics in entry.scores.items()
        },
        gap=None if gap is None else shape.Gap(**gap),
        verified=None if entry.verified is None else shape.Verified.model_validate(entry.verified),
    )


def _phase(phase: phases.Phase | None) -> shape.Phase | None:
    """When the split takes uploads, and where it stands now (services/catalog/phases.py)."""
    if phase is None:
        return None
    return shape.Phase(
        opens_at=timestamp(phase.opens_at) if phase.opens_at else None,
        closes_at=timestamp(phase.closes_at) if phase.closes_at else None,
        state=cast(shape.PhaseState, phase.state),
        reveal_planned_at=timestamp(phase.reveal_planned_at) if phase.reveal_planned_at else None,
        text=phase.sentence,
    )


def _held(held: leaderboards.Held | None) -> shape.Held | None:
    """A held board's counts and policy, where its entries would be (None once its scores are public)."""
    if held is None:
        return None
    return shape.Held(
        entries=held.entries,
        teams=held.teams,
        feedback=cast(shape.HeldFeedback, held.feedback),
        policy=held.policy,
        opens=held.opens,
        about_url=url_for("public.blind_test", _anchor="feedback"),
    )


def _leaderboard(benchmark: str, split: str | None) -> dict:
    args = request.args
    board, listed = listings.leaderboard(
        benchmark,
        split,
        args.get("view"),
        q=args.get("q"),
        limit=args.get("limit"),
        offset=args.get("offset"),
        verified=args.get("verified"),
        track=args.get("track"),
        where=args.getlist("where"),
    )
    assert board.split is not None  # listings.leaderboard refuses a benchmark without splits (404)
    answer = shape.Leaderboard(
        benchmark=board.benchmark.slug,
        split=board.split.slug,
        scores_public=board.scores_public,
        view=cast(shape.View, board.view),
        columns=[
            shape.BoardColumn(key=c.key, subset=c.subset, metric=c.metric, **exports.column_facts(c))
            for c in board.columns
        ],
        entries=[_entry(entry, board.available) for entry in listed.items],
        **_window(listed),
        rank_method=board.rank_method,
        resolution=board.resolution,
        references=[shape.ReferenceRow.model_validate(row) for row in exports.reference_documents(board)],
        held=_held(board.held),
        phase=_phase(board.phase),
        # Set while a newer snapshot is being built: these entries are the board before the latest changes.
        updating_since=(
            board.snapshot.updating_since.isoformat() if board.snapshot and board.snapshot.updating_since else None
        ),
        verified_only=board.verified_only,
        track=board.selection.track if board.selection else None,
        where=[condition.written for condition in board.selection.conditions] if board.selection else [],
        selection=board.selection_words or None,
        tracks=[shape.Track.model_validate(spec.as_dict()) for spec in board.track_tabs],
    )
    return shape.body(answer)


# --- views ---------------------------------------------------------------------------------------------


FILTERED_BOARDS_BUDGET = (
    "The answering server process computed its budget of filtered boards (`where`, 60) in the last minute: retry "
    "after Retry-After seconds; named tracks (`track`) are always served."
)


def _board_versions(benchmark: str) -> object:
    """What a board's answer depends on (a named track's stored boards too: page_versions.benchmark)."""
    return page_versions.benchmark(benchmark, request.args.get("track"), request.args.get("verified"))


PUBLIC_READ = (400, 404)  # a malformed query parameter; an unknown benchmark or split


@bp.get("/openapi.json")
@caching.public()
@operation("getOpenApi", (200, shape.OpenApiDocument, "The OpenAPI 3.1 document."), public=True)
def openapi_document():
    """This document"""
    return openapi.document()


@bp.get("/schemas/bundle.json")
@caching.public()
@operation(
    "getBundleSchema",
    (200, shape.JsonSchemaDocument, "The JSON Schema (2020-12) of a bundle's benchmark.yaml."),
    public=True,
)
def bundle_schema_document():
    """The JSON Schema of a bundle's benchmark.yaml (the file that describes a benchmark whole)"""
    answer = current_app.json.response(bundles.bundle_schema())
    answer.mimetype = openapi.SCHEMA_MEDIA_TYPE
    return answer


@bp.get("/benchmarks")
@caching.public(page_versions.catalog)
@operation(
    "listBenchmarks",
    (200, shape.Benchmarks, "The benchmarks, by name, with their splits."),
    400,
    422,
    public=True,
    query=shape.WindowQuery,
)
def benchmarks():
    """Benchmarks and their splits"""
    listed = listings.benchmark_list(request.args.get("limit"), request.args.get("offset"))
    answer = shape.Benchmarks(
        benchmarks=[
            shape.Benchmark(
                slug=benchmark.slug,
                name=benchmark.name,
                task_type=benchmark.task_type,
                description=benchmark.description,
                paper_url=benchmark.paper_url,
                splits=[_split(split) for split in benchmark.splits],
            )
            for benchmark in listed.items
        ],
        **_window(listed),
    )
    return shape.body(answer)


@bp.get("/me")
@operation("getMe", (200, shape.Me, "The token's user."), 401)
def me():
    """Who the token belongs to, and their teams"""
    user = _caller()
    teams = [{"id": team.id, "name": team.name} for team in user.teams]
    answer = shape.Me(
        email=user.email,
        email_verified=user.email_verified_at is not None,  # uploading and publishing need it
        maintainer=user.is_admin,
        teams=[shape.TeamName(id=team.id, name=team.name) for team in user.teams],
        # Each open split, for each of the caller's teams: what is left (the stricter of the team's and the caller's).
        quotas=[_quota(choice, team) for choice in quotas.upload_choices(user) for team in teams],
    )
    return shape.body(answer)


@bp.get("/leaderboards/<benchmark>")
@caching.public(lambda benchmark: _board_versions(benchmark))
@operation(
    "getDefaultLeaderboard",
    (200, shape.Leaderboard, "The leaderboard."),
    *PUBLIC_READ,
    422,
    (
        429,
        shape.Error,
        FILTERED_BOARDS_BUDGET,
    ),
    public=True,
    query=shape.BoardQuery,
)
def default_leaderboard(benchmark: str):
    """The leaderboard of a benchmark's landing split (pinned, else its first hidden split, else its first split)"""
    return _leaderboard(benchmark, None)


@bp.get("/leaderboards/<benchmark>/<split>")
@caching.public(lambda benchmark, **_: _board_versions(benchmark))
@operation(
    "getLeaderboard",
    (200, shape.Leaderboard, "The leaderboard."),
    *PUBLIC_READ,
    422,
    (
        429,
        shape.Error,
        FILTERED_BOARDS_BUDGET,
    ),
    public=True,
    query=shape.BoardQuery,
)
def leaderboard(benchmark: str, split: str):
    """The published entries of a split, ranked"""
    return _leaderboard(benchmark, split)


@bp.get("/leaderboards/<benchmark>/models")
@caching.public(lambda benchmark: _board_versions(benchmark))  # a track's stored boards too
@operation(
    "getModels",
    (200, shape.Models, "The models view."),
    *PUBLIC_READ,
    422,
    (429, shape.Error, FILTERED_BOARDS_BUDGET),
    public=True,
    query=shape.ModelsQuery,
)
def models(benchmark: str):
    """One row per model across the benchmark's splits"""
    args = request.args
    document = exports.models_document(
        benchmark,
        args.get("q"),
        args.get("limit"),
        args.get("offset"),
        track=args.get("track"),
        where=args.getlist("where"),
        verified=args.get("verified"),
    )
    return shape.body(shape.Models.model_validate(document))


@bp.get("/compare")
@operation(
    "compareEntries",
    (200, shape.Comparison, "The two entries compared."),
    400,
    404,
    422,
    public=True,
    query=shape.CompareQuery,
)
def compare():
    """Two published entries of one split compared

    Per column the board shows: a − b with its 95% interval (the board's resamples) and the p-value of the board's
    paired test (primary metric). On a public split also the discordant examples (one right, the other wrong).
    On a blind test before its reveal only what its board releases, and while its scores are held nothing but
    `held`; never an example. 400 or 404 naming the parameter (`a` or `b`) at fault.
    """
    found = comparisons.compare(request.args.get("a"), request.args.get("b"))
    return shape.body(
        shape.Comparison(
            benchmark=found.split.benchmark.slug,
            split=found.split.slug,
            a=found.a.id,
            b=found.b.id,
            held=found.held,
            counts_only=found.counts_only,
            rows=[
                shape.ComparisonRow(
                    subset=row.subset,
                    metric=row.metric,
                    label=row.label,
                    a=_number(row.a) if row.a is not None else None,
                    b=_number(row.b) if row.b is not None else None,
                    difference=row.difference,
                    ci_low=row.low,
                    ci_high=row.high,
                    p=row.p,
                )
                for row in found.rows
            ],
            per_example=found.per_example,
            discordant=[
                shape.DiscordantExample(id=d.identifier, a_correct=d.a_correct, b_correct=d.b_correct)
                for d in found.discordant
            ],
            a_only=found.a_only,
            b_only=found.b_only,
            why_no_examples=found.why_no_examples,
        )
    )


@bp.get("/submissions/<int:submission_id>/examples")
@operation("getExampleResults", (200, None, "The per-example results as CSV."), 404, public=True)
def example_results(submission_id: int):
    """A published entry's per-example results (public splits only)

    CSV: id, correct (1, 0, or empty where the primary metric does not count the example), then each counted
    metric's judgements (or points) right on the example, and `<metric>_of` where an example has more than one.
    404 with the reason on a hidden (unrevealed) split or one with a sealed part, for everyone.
    """
    found = comparisons.example_results(_submission_id(submission_id))
    return Response(
        found.body,
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'},
    )


@bp.post("/submissions")
@accepts_upload
@operation(
    "createSubmission",
    (201, shape.SubmissionCreated, "Scored and stored; scores are null where the feedback policy withholds them."),
    *(401, 403, 404, 409, 413, 422),
    (429, shape.QuotaError, "Over the split's submission quota (or the daily cap on invalid files)."),
    507,
    form=shape.UploadForm,
    headers=shape.UploadHeaders,
)
def create_submission():
    """Upload a prediction file; it is validated, scored and stored

    Every attempt is stored. A file with problems is kept as `rejected` (422, each problem named by line) and
    does not use the quota; a valid one is `scored` (201). Send an `Idempotency-Key` (a random UUID per upload)
    to retry safely: a repeat of a key this account has sent is answered as the first upload was (201 with
    `Idempotent-Replayed: true`, or its 422) and stores nothing; the same key with another upload is a 422.
    """
    user = _caller()
    check_form_parts()  # reading the form is where werkzeug answers 413 for an oversized body
    _check_required_fields()
    form = request.form
    upload = Upload(
        data=_read_upload(),
        model_name=form["model_name"],
        description=form.get("description", ""),
        paper_url=form.get("paper_url") or None,
        code_url=form.get("code_url") or None,
        anonymous=_flag("anonymous", form.get("anonymous")),
        fields=_upload_fields(form.get("fields")),
    )
    result = submissions.submit(
        user,
        form.get("team") or None,
        form["benchmark"].strip(),
        form["split"].strip(),
        upload,
        idempotency_key=request.headers.get("Idempotency-Key"),
    )
    answer = shape.SubmissionCreated(
        id=result.id,
        benchmark=result.benchmark,
        split=result.split,
        team=result.team,
        model_name=result.model_name,
        status="scored",
        submitted_at=timestamp(result.created_at),
        published=False,
        scores=_scores(result.scores),
        scores_text=_scores_text(result.scores),
        **_verdict(result.verdict),
        quota=shape.Quota.model_validate(result.quota.as_dict()),
    )
    headers = {"Location": url_for("api_v1.get_submission", submission_id=result.id)}
    if result.replayed:
        headers["Idempotent-Replayed"] = "true"  # the first upload's answer; nothing new was stored
    return shape.body(answer), 201, headers


@bp.get("/submissions")
@operation("listSubmissions", (200, shape.Submissions, "The submissions."), 400, 401, 422, query=shape.SubmissionSearch)
def list_submissions():
    """Submissions of the caller's teams, newest first"""
    user = _caller()
    args = request.args
    listed = listings.submission_list(user, args.get("q"), args.get("limit"), args.get("offset"))
    answer = shape.Submissions(
        submissions=[shape.SubmissionSummary(**_summary(submission)) for submission in listed.items], **_window(listed)
    )
    return shape.body(answer)


@bp.get("/submissions/<int:submission_id>")
@operation("getSubmission", (200, shape.Submission, "The submission."), 401, 404)
def get_submission(submission_id: int):
    """One submission (its team's members and maintainers)"""
    user = _caller()
    return shape.body(shape.Submission(**_detail(submissions.get_for(user, _submission_id(submission_id)))))


@bp.get("/submissions/<int:submission_id>/file")
@operation("getSubmissionFile", (200, None, "The file."), 401, 404, 503)
def submission_file(submission_id: int):
    """The file as uploaded, byte for byte (its team's members and maintainers)

    The exact bytes of a scored submission's upload (their sha256 is the submission's), with its task type's
    media type (text/csv, application/json or application/jsonl) and a file name
    `<benchmark>-<split>-submission-<id>.<ext>` (Content-Disposition: attachment). Anyone else, another team's
    member included, gets 404, as for a submission that does not exist; a rejected file is not kept (404).
    """
    user = _caller()
    found = submissions.original_file(user, _submission_id(submission_id))
    return Response(
        found.data,
        content_type=f"{found.media_type}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'},
    )


@bp.post("/submissions/<int:submission_id>/publish")
@operation(
    "publishSubmission",
    (200, shape.PublishedSubmission, "The published submission, and where it is on the board."),
    *(401, 403, 404, 409, 422, 429),
    json=shape.PublishRequest,
)
def publish_submission(submission_id: int):
    """Show a scored submission on the leaderboard (team members)"""
    user = _caller()
    fields = _publish_body()
    placement = listings.placement(submission := submissions.publish(user, _submission_id(submission_id), **fields))
    return shape.body(shape.PublishedSubmission(**_detail(submission), placement=_placement(placement)))


@bp.post("/submissions/<int:submission_id>/unpublish")
@operation("unpublishSubmission", (200, shape.Submission, "The submission."), 401, 403, 404, 429)
def unpublish_submission(submission_id: int):
    """Take a submission off the leaderboard (team members)"""
    user = _caller()
    return shape.body(shape.Submission(**_detail(submissions.unpublish(user, _submission_id(submission_id)))))
