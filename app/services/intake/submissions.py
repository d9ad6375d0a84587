"""Submissions: validate, score and store an upload under the split's quotas (services/intake/quotas.py);
publication; moderation. What a viewer may see of one is decided in services/blind_test/visibility.py, the page that
shows it is made in services/boards/submission_pages.py.

Every attempt is stored with its status: scored submissions count against the quotas, rejected files
against a separate daily cap. Both ways in (`submit` for teams, `store_scored` for the demo and
maintainers' imports) build and store a scored submission through `_scored_submission` and `_record`.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from app import observability, settings
from app.db import db, release_write_lock, write_transaction
from app.evaluation import Problem, Scores, TaskType, ValidationError
from app.models import Score, Split, Submission, Team, User, as_utc, utcnow
from app.names import invisible
from app.services import catalog
from app.services.audit import audit_log
from app.services.blind_test import integrity, visibility
from app.services.catalog import entry_fields, phases, stored_results
from app.services.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    StorageFailed,
    Throttled,
    TooLarge,
    check_visible,
)
from app.services.intake import originals, quotas
from app.services.people import accounts, throttle
from app.services.storage import checksums, upload_store

MAX_URL = 2000  # characters of a paper or code link
MAX_MODEL_NAME = 200
MAX_DESCRIPTION = 5000
# Fields in words, for messages people read on a page; the API's name follows in parentheses.
FIELD_WORDS = {
    "model_name": "The model name",
    "description": "The description",
    "paper_url": "The paper URL",
    "code_url": "The code URL",
    "note": "The note",
    "url": "The link",
}


def field_error(field: str, text: str) -> InvalidInput:
    return InvalidInput(f"{FIELD_WORDS[field]} ({field}) {text}", field=field)


def _check_visible(field: str, value: str) -> None:
    """InvalidInput naming the field and its first invisible character (app/names.py), if it has one."""
    problem = invisible(value)
    if problem:
        raise field_error(field, problem)


URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)


def max_upload_bytes() -> int:
    return settings.current().max_upload_bytes


# --- scoring -------------------------------------------------------------------------------------------


def check_size(data: bytes) -> None:
    """The one size check of an upload's file (the server refuses a body much larger before any of it)."""
    if len(data) > max_upload_bytes():
        raise TooLarge(
            f"the file is {len(data) / 1048576:.1f} MB, over the limit of {settings.current().max_upload_mb} MB"
        )


def _score_upload(inputs: catalog.ScoringInputs, data: bytes):
    """Parse and score an upload; pure CPU work on what catalog.scoring_inputs loaded."""
    task, gold, subsets = inputs.task, inputs.gold, inputs.subsets
    check_size(data)
    try:
        predictions = task.parse(data, gold, max_bytes=max_upload_bytes())
    except ValidationError as exc:
        raise InvalidInput(f"invalid prediction file: {exc.summary()}", exc.problems) from exc
    return task, predictions, task.score(gold, predictions, subsets)


def _refusal(exc: InvalidInput) -> InvalidInput:
    """A refused file's answer as a new exception, with no traceback and no cause.

    Raised or kept, an exception holds the frames it went through, and they hold the upload and the
    parser's arrays. One kept in a local (or in ``_Attempt``) of a frame it then goes through is a
    reference cycle, which only the garbage collector frees, some requests later: so the refusal is kept
    and raised as a copy that no frame refers to, and the upload goes when the request ends."""
    return InvalidInput(exc.message, exc.problems, field=exc.field)


def _parse_and_score(split: Split, data: bytes):
    return _score_upload(catalog.scoring_inputs(split), data)


def evaluate(benchmark_slug: str, split_slug: str, data: bytes) -> Scores:
    """Score a prediction file against a split without storing anything (maintainers' dry run)."""
    split = catalog.get_split(benchmark_slug, split_slug)
    _, _, scores = _parse_and_score(split, data)
    return scores


def store_scored(
    split: Split,
    team: Team,
    data: bytes,
    *,
    model_name: str,
    user: User | None = None,
    description: str = "",
    paper_url: str | None = None,
    code_url: str | None = None,
    anonymous: bool = False,
    publish: bool = False,
    submitted_at: datetime | None = None,
    fields: dict | None = None,
) -> Submission:
    """Validate, score and store one submission outside any quota (the demo and maintainers' imports;
    `submitted_at` dates an entry imported from before the server kept it)."""
    inputs = catalog.scoring_inputs(split)
    task, predictions, scores = _score_upload(inputs, data)
    digest = checksums.sha256(data)
    moment = submitted_at or utcnow()
    upload = Upload(data, model_name, description, paper_url, code_url, anonymous, fields)
    upload.fields = entry_fields.clean_values(entry_fields.specs(split.benchmark_id), fields)
    kept = originals.keep_confirmed(data, digest)  # before this writes anything: a hanging store holds no lock
    try:
        submission = _scored_submission(
            split.id, team.id, user.id if user else None, upload, digest, moment, task, predictions
        )
        submission.published_at = moment if publish else None
        _record(submission, split, inputs, predictions, scores)
        if publish:
            split.board_version += 1
    except BaseException:
        originals.discard(kept)
        raise
    _commit_keeping(kept)
    return submission


def _scored_submission(
    split_id: int,
    team_id: int,
    user_id: int | None,
    upload: Upload,
    digest: str,
    moment: datetime,
    task: TaskType | None = None,
    predictions: np.ndarray | None = None,
) -> Submission:
    """An attempt as it is stored: scored when given its predictions, else for the caller to mark rejected."""
    return Submission(
        split_id=split_id,
        team_id=team_id,
        user_id=user_id,
        model_name=upload.model_name,
        description=upload.description,
        paper_url=upload.paper_url,
        code_url=upload.code_url,
        fields=entry_fields.stored(upload.fields or {}),
        anonymous=upload.anonymous,
        file_sha256=digest,
        file_size=len(upload.data),
        created_at=moment,
        status="scored" if task is not None else "rejected",
        predictions=task.encode(predictions) if task is not None and predictions is not None else None,
    )


def _record(
    submission: Submission, split: Split, inputs: catalog.ScoringInputs, predictions: np.ndarray, scores: Scores
) -> None:
    """Inside the write transaction: the probe check (on a blind test) and the release see every earlier
    submission; the submission is written once, with its release, then its scores (and on a blind test its
    probe summary, which later checks read)."""
    summary = integrity.probe_summary(inputs.task, inputs.gold, predictions) if split.hidden else None
    with db.session.no_autoflush:
        if summary is not None:
            integrity.flag_probes(
                submission, inputs.task, inputs.gold, predictions, scores["all"][inputs.task.primary_metric], summary
            )
        visibility.release(submission, split, inputs, predictions, scores)
    db.session.add(submission)
    db.session.flush()  # the submission, then its Ladder state or probe flag; the scores need its id
    stored_results.keep(submission.id, stored_results.packed(inputs.task, inputs.gold, split, predictions))
    if summary is not None:
        integrity.store_probe_summary(submission, summary)
    db.session.execute(
        insert(Score),
        [
            {"submission_id": submission.id, "subset": subset, "metric": metric, "value": float(value)}
            for subset, metrics in scores.items()
            for metric, value in metrics.items()
        ],
    )


def _commit_keeping(kept: upload_store.Kept) -> None:
    """Commit with the original confirmed already (an acknowledged upload always has it), then make it
    durable; if the commit fails, remove it."""
    try:
        db.session.commit()
    except BaseException:
        originals.discard(kept)
        raise
    kept.finish()


# --- submitting ----------------------------------------------------------------------------------------


@dataclass
class Upload:
    data: bytes
    model_name: str
    description: str = ""
    paper_url: str | None = None
    code_url: str | None = None
    anonymous: bool = False
    fields: dict | None = None  # the benchmark's entry fields, {key: value} (services/catalog/entry_fields.py)


@dataclass(frozen=True)
class Verdict:
    """What a submission's answer says of the figure it shows its team (API fields `improved` and `released`).

    improved: the Ladder's answer, when the Ladder made the release (None under any other policy): True when
        the file set a new best, False when it did not beat the best. It tells the team nothing the figures do
        not: a new best always changes the released figure, an answer that is not one repeats it.
    released: "this" (the file's own scores), "best" (the team's earlier best, shown again: a Ladder answer that
        was not a new best, until the reveal) or "none" (nothing shown: held, rejected, or no figure yet).
    figure: the primary metric on the whole split as the team is shown it (with "best": the best shown again).
    """

    improved: bool | None
    released: str
    figure: float | None = None


def verdict(submission: Submission, shown: Scores | None) -> Verdict:
    """The verdict on a submission whose team is shown `shown` now (visibility.released_scores)."""
    improved = submission.ladder_improved if submission.release_policy == "ladder" else None
    if submission.status != "scored" or not shown:
        return Verdict(improved, "none")
    split = submission.split
    figure = shown.get("all", {}).get(catalog.task_of(split.benchmark).primary_metric)
    if improved is False and visibility.counts_only(split):
        # Before the reveal the team sees the Ladder's release alone: the best it held when this file came.
        return Verdict(False, "best", figure)
    return Verdict(improved, "this", figure)


@dataclass
class SubmitResult:
    """The answer to an upload, read inside its transaction: the caller needs no query to report it."""

    submission: Submission  # expired by the commit: reading it queries again
    id: int
    benchmark: str  # slugs
    split: str
    team: str
    model_name: str
    created_at: datetime
    scores: Scores | None  # what the split's feedback policy releases to the team now
    quota: quotas.QuotaStatus  # the team's, with the submitting account's beside it
    verdict: Verdict  # which figure `scores` is: the file's own, the team's best again (the Ladder), or none
    replayed: bool = False  # the answer to an earlier upload sent with the same Idempotency-Key


def _clean_url(field: str, value: str | None) -> str | None:
    value = (value or "").strip()
    if not value:
        return None
    if len(value) > MAX_URL or not URL.match(value) or "\x00" in value:
        raise field_error(field, f"must be an http:// or https:// address of at most {MAX_URL:,} characters")
    _check_visible(field, value)
    return value


def _typed_text(field: str, value: str | None, limit: int, missing: str | None = None) -> str:
    """What a person typed into ``field``, trimmed: present where ``missing`` says what to give, at most ``limit``
    characters, and without a NUL byte (PostgreSQL text cannot hold one; nobody's text needs one)."""
    text = (value or "").strip()
    if missing is not None and not text:
        raise field_error(field, f"is required: {missing}")
    if len(text) > limit:
        raise field_error(field, f"must have at most {limit:,} characters")
    if "\x00" in text:
        raise field_error(field, "must not contain NUL bytes")
    return text


def _clean_description(value: str | None) -> str:
    description = _typed_text("description", value, MAX_DESCRIPTION)
    _check_visible("description", description)  # line breaks and tabs are visible: they stay
    return description


def _clean_upload(upload: Upload, split: Split) -> Upload:
    name = _typed_text("model_name", upload.model_name, MAX_MODEL_NAME, "name the model these predictions come from")
    _check_visible("model_name", name)
    description = _clean_description(upload.description)
    return Upload(
        data=upload.data,
        model_name=name,
        description=description,
        paper_url=_clean_url("paper_url", upload.paper_url),
        code_url=_clean_url("code_url", upload.code_url),
        anonymous=bool(upload.anonymous),
        # Not required yet: a required field is needed at publication.
        fields=entry_fields.clean_values(entry_fields.specs(split.benchmark_id), upload.fields),
    )


def resolve_team(user: User, team_ref: str | int | None) -> Team:
    """The team a user submits for: by id or name, or their only team when none is named."""
    teams = user.teams  # loaded with an API token's owner (accounts.user_for_token)
    if team_ref in (None, ""):
        if len(teams) == 1:
            return teams[0]
        if not teams:
            raise Forbidden("you are not a member of any team; create or join one first")
        raise InvalidInput("you belong to several teams: say which one with the team field")
    ref = str(team_ref).strip()
    for team in teams:
        if str(team.id) == ref or team.name == ref:
            return team
    raise Forbidden(f"you are not a member of team {ref!r}")


def submit(
    user: User,
    team_ref: str | int | None,
    benchmark_slug: str,
    split_slug: str,
    upload: Upload,
    now: datetime | None = None,
    idempotency_key: str | None = None,
) -> SubmitResult:
    """Validate, score and store an upload for a team, consuming its quota in the same transaction.

    With an idempotency key this account has sent before, nothing is stored: the first upload's answer is
    given again (its result, or its refusal), or InvalidInput if the key came with another upload. The first
    answer is given whatever happened since (the split closed, its phase ended, the quota filled): it is the
    answer to that upload, which was taken when it came.

    Raises NotFound (benchmark/split), Forbidden (not a member), Conflict (split closed, or outside its phase:
    nothing is stored), TooLarge, QuotaExceeded, or InvalidInput (metadata, or the file: the attempt is then
    stored as rejected). The upload is judged, and stored, at one moment: `now`, else when this call began.
    """
    accounts.check_verified(user)
    now = now or utcnow()
    split = catalog.get_split(benchmark_slug, split_slug, with_subsets=True)
    team = resolve_team(user, team_ref)
    key = check_idempotency_key(idempotency_key)
    previous = _sent_before(user.id, key) if key is not None else None
    if previous is None:  # a replay is answered below whatever happened since: no open or phase check for it
        if not split.is_open:
            raise Conflict(f"{split.benchmark.name} {split.name} is closed to submissions")
        phases.check_accepting(split, now)
    upload = _clean_upload(upload, split)
    check_size(upload.data)
    inputs = catalog.scoring_inputs(split)
    attempt = _Attempt(split.id, team.id, user.id, split.benchmark.slug, team.name, upload, inputs)
    attempt.digest = checksums.sha256(upload.data)
    attempt.idempotency_key = key
    if key is None:
        return _score_and_store(split, attempt, now)
    if previous is not None:  # a retry of an upload whose answer was lost: no parsing, no quota
        return _replay(previous, attempt)
    try:
        return _score_and_store(split, attempt, now)
    except IntegrityError:
        # A twin with the same key, for another team (so under another row lock), was stored first.
        db.session.rollback()
        previous = _sent_before(attempt.user_id, key)
        if previous is None:
            raise
        return _replay(previous, attempt)


def _score_and_store(split: Split, attempt: _Attempt, now: datetime | None) -> SubmitResult:
    upload = attempt.upload
    # Cheap refusals first: a team (or an account, through all its teams) over its quota or its rejected-file
    # cap pays for sending the body and nothing more (counts, no row lock; checked again under the lock).
    moment = now or utcnow()
    early = quotas.quota_status(split, attempt.team_id, moment, user=attempt.user_id)
    quotas.check_rejected_cap(early, moment)
    quotas.check_quota(early, moment)
    # Parse and score outside the write lock: it is the slow part and touches no shared state, and on
    # SQLite a write request's transaction holds the database's write lock.
    release_write_lock()
    try:
        with observability.parse_and_score():
            attempt.task, attempt.predictions, attempt.scores = _score_upload(attempt.inputs, upload.data)
    except InvalidInput as exc:
        attempt.problems = _refusal(exc)
    # A scored upload keeps its original (the folder: under a temporary name; a bucket: under its content-hash
    # key), confirmed by the store before the transaction begins, so a store that hangs holds no lock (and
    # costs at most STORAGE_TIMEOUT); made durable after the commit, removed if nothing is stored.
    kept = originals.keep_confirmed(upload.data, attempt.digest) if attempt.problems is None else None
    try:
        result = _store_attempt(attempt, now)
    except BaseException:
        if kept is not None:
            originals.discard(kept)
        raise
    if kept is not None:  # a rejected file raised above: only a scored one gets here, with its original
        kept.finish()
    return result


# --- idempotent retries --------------------------------------------------------------------------------

IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def check_idempotency_key(value: str | None) -> str | None:
    """The key as sent (opaque: compared byte for byte), None when none was sent."""
    if value is None or value == "":
        return None
    if not IDEMPOTENCY_KEY.fullmatch(value):
        raise InvalidInput(
            "the Idempotency-Key header must be 1 to 255 visible ASCII characters (a random UUID will do)",
            field="Idempotency-Key",
        )
    return value


def _sent_before(user_id: int, key: str) -> Submission | None:
    """What this account stored under this key before, if it did (the upload is then a replay: _replay)."""
    return db.session.scalar(select(Submission).where(Submission.user_id == user_id, Submission.idempotency_key == key))


def _replay(previous: Submission, attempt: _Attempt) -> SubmitResult:
    """The first answer to this key again: its result as the team may see it now, or its refusal."""
    upload = attempt.upload
    sent = [attempt.split_id, attempt.team_id, attempt.digest, upload.model_name, upload.description]
    stored = [previous.split_id, previous.team_id, previous.file_sha256, previous.model_name, previous.description]
    sent_links = (upload.paper_url, upload.code_url, upload.anonymous, upload.fields or {})
    stored_links = (previous.paper_url, previous.code_url, previous.anonymous, entry_fields.values_of(previous.fields))
    if sent != stored or sent_links != stored_links:
        raise InvalidInput(
            f"the Idempotency-Key {attempt.idempotency_key!r} was sent before with another upload "
            f"(submission {previous.id}); send each new upload with a new key",
            field="Idempotency-Key",
        )
    observability.upload("replayed")
    if previous.status != "scored":
        problems = [Problem(item["line"], item["message"]) for item in problems_of(previous)]
        first = f"invalid prediction file: {problems[0].message}" if problems else "the file could not be scored"
        raise InvalidInput(refusal_of(previous) or first, problems)
    split = previous.split
    shown = visibility.released_scores(previous)
    return SubmitResult(
        previous,
        previous.id,
        split.benchmark.slug,
        split.slug,
        previous.team.name,
        previous.model_name,
        previous.created_at,
        shown,
        quotas.quota_status(split, previous.team_id, user=attempt.user_id),
        verdict(previous, shown),
        replayed=True,
    )


@dataclass
class _Attempt:
    """An upload on its way to the database: who sent it where, and its scores or its problems."""

    split_id: int
    team_id: int
    user_id: int
    benchmark_slug: str
    team_name: str
    upload: Upload
    inputs: catalog.ScoringInputs
    digest: str = ""
    task: TaskType | None = None
    predictions: np.ndarray | None = None
    scores: Scores | None = None
    problems: InvalidInput | None = None
    idempotency_key: str | None = None


def _store_attempt(attempt: _Attempt, now: datetime | None) -> SubmitResult:
    """The write transaction of ``submit``: quotas (the team's and the account's) under the lock, then the
    rejected or scored row (whose original the store has confirmed already)."""
    with write_transaction(continue_open=True):
        split = quotas.split_under_locks(attempt.split_id, attempt.team_id, attempt.user_id)
        # A twin sent with the same key (by the same account) waited for this lock: it was stored meanwhile.
        previous = _sent_before(attempt.user_id, attempt.idempotency_key) if attempt.idempotency_key else None
        if previous is not None:
            return _replay(previous, attempt)
        now = now or utcnow()
        status = quotas.quota_status(split, attempt.team_id, now, user=attempt.user_id)
        submission = _scored_submission(
            attempt.split_id,
            attempt.team_id,
            attempt.user_id,
            attempt.upload,
            attempt.digest,
            now,
            attempt.task,
            attempt.predictions,
        )
        submission.idempotency_key = attempt.idempotency_key
        if attempt.problems is not None or attempt.scores is None or attempt.predictions is None:
            quotas.check_rejected_cap(status, now)
            problems = attempt.problems or InvalidInput("the file could not be scored")
            submission.errors = json.dumps(problems.details())
            submission.refusal = problems.message  # it alone has the true totals and the hints
            db.session.add(submission)
            db.session.commit()
            observability.upload("rejected")
            raise _refusal(problems)
        quotas.check_quota(status, now)
        _record(submission, split, attempt.inputs, attempt.predictions, attempt.scores)
        shown = visibility.team_scores(
            split, attempt.scores, submission.released, submission.release_policy, attempt.inputs
        )
        quota = status.with_one_more()  # the counts read under the lock, plus this submission
        result = SubmitResult(
            submission,
            submission.id,
            attempt.benchmark_slug,
            split.slug,
            attempt.team_name,
            submission.model_name,
            now,
            shown,
            quota,
            verdict(submission, shown),
        )
        db.session.commit()
    observability.upload("scored")
    return result


# --- reading -------------------------------------------------------------------------------------------


def get_for(user: User | None, submission_id: int) -> Submission:
    """A submission its team's members and maintainers may see; everyone else gets NotFound."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or not visibility.is_team_or_maintainer(user, submission):
        raise NotFound(f"no submission {submission_id}")
    return submission


def list_for(user: User) -> list[Submission]:
    """The submissions of every team the user belongs to, newest first, with split, benchmark and team."""
    team_ids = [m.team_id for m in user.memberships]
    if not team_ids:
        return []
    return list(
        db.session.scalars(
            select(Submission)
            .where(Submission.team_id.in_(team_ids))
            .options(joinedload(Submission.split).joinedload(Split.benchmark), joinedload(Submission.team))
            .order_by(Submission.id.desc())
        )
    )


@dataclass(frozen=True)
class OriginalFile:
    """A submission's file as its team uploaded it."""

    data: bytes  # byte for byte the upload (its sha256 is the submission's)
    filename: str  # "<benchmark>-<split>-submission-<id>.<the task type's extension>"
    media_type: str  # the task type's: text/csv, application/json, application/jsonl


def original_file(user: User | None, submission_id: int) -> OriginalFile:
    """The exact bytes uploaded for a scored submission, from whichever store keeps the originals (the folder or
    the bucket), for the submission's team's members and for maintainers, who may open any submission
    (`get_for`); everyone else gets NotFound, as for the submission itself. A rejected file is not kept
    (NotFound says so); an original missing from the store is NotFound, one that cannot be read or does not
    match its checksum is StorageFailed (503)."""
    submission = get_for(user, submission_id)
    if submission.status != "scored":
        raise NotFound(f"submission {submission_id} was rejected, and rejected files are not kept")
    digest = submission.file_sha256
    try:
        data = upload_store.read_original(digest)
    except FileNotFoundError:
        raise NotFound(
            f"the file of submission {submission_id} is missing from the upload store; the maintainers can find "
            "such files with `flask uploads check`"
        ) from None
    except (OSError, EOFError, zlib.error) as exc:  # a damaged gzip file (BadGzipFile is an OSError), or cut short
        raise StorageFailed(
            f"the file of submission {submission_id} could not be read from the upload store ({type(exc).__name__})",
            unavailable=True,
        ) from exc
    if checksums.sha256(data) != digest:
        raise StorageFailed(
            f"the stored file of submission {submission_id} does not match its sha256; it is not served",
            unavailable=True,
        )
    split = submission.split
    task = catalog.task_of(split.benchmark)
    name = f"{split.benchmark.slug}-{split.slug}-submission-{submission.id}.{task.file_suffix}"
    return OriginalFile(data, name, task.media_type)


def problems_of(submission: Submission) -> list[dict]:
    return json.loads(submission.errors) if submission.errors else []


def refusal_of(submission: Submission) -> str | None:
    """The sentence a rejected file was refused with ("invalid prediction file: 3,104 lines have errors; the
    first 50: ..."); None for a scored one, or one stored before the sentence was kept."""
    return submission.refusal


# --- publication and moderation ------------------------------------------------------------------------


# Publishing, withdrawing and editing a published entry change its board (a rebuild, coalesced per board:
# board_snapshots): each account and each entry may make this many such changes in an hour (a change that
# changes nothing is not counted). Enough for a team's real work; not for toggling an entry to load the server.
CHANGES_PER_ENTRY = 10
CHANGES_PER_ACCOUNT = 60
CHANGES_WINDOW = 3600  # seconds


def _count_change(user: User, submission_id: int) -> None:
    """Count one change of a board's entry against the account's and the entry's limits (committed at once,
    so do it before changing anything); Throttled (429, with Retry-After) when either is over."""
    for key, limit, done in (
        (
            f"board-change-account:{user.id}",
            CHANGES_PER_ACCOUNT,
            "this account published, unpublished or edited entries",
        ),
        (
            f"board-change-entry:{submission_id}",
            CHANGES_PER_ENTRY,
            f"submission {submission_id} was published, unpublished or edited",
        ),
    ):
        try:
            throttle.attempt(key, limit=limit, window=CHANGES_WINDOW)
        except Throttled as exc:
            raise Throttled(
                f"{done} {limit} times in the last hour, the most allowed; try again in {exc.retry_after} seconds",
                exc.retry_after,
            ) from None


def _own(user: User, submission_id: int) -> Submission:
    submission = get_for(user, submission_id)
    if not user.is_member(submission.team_id):
        raise Forbidden("only the team's members can publish or unpublish its submissions")
    return submission


def publish(
    user: User,
    submission_id: int,
    description: str | None = None,
    paper_url: str | None = None,
    code_url: str | None = None,
    fields: dict | None = None,
) -> Submission:
    """Show a scored submission on the leaderboard; it needs a description or a paper URL, and a value for each
    of its benchmark's required entry fields (given now or at upload). Publishing one that is published already,
    with nothing new, changes nothing (no new board version, no rebuild, not counted); any other change counts
    against the account's and the entry's limits (_count_change). A published entry's fields are what the board
    was told: they change only once it is unpublished (Conflict naming the field)."""
    submission = _own(user, submission_id)
    accounts.check_verified(user)
    if submission.status != "scored":
        raise Conflict("only scored submissions can be published")
    # Every field is checked before any is changed: a refused publish leaves the submission as it was.
    description = _clean_description(description) if description and description.strip() else None
    paper_url = _clean_url("paper_url", paper_url) if paper_url else None
    code_url = _clean_url("code_url", code_url) if code_url else None
    if not (description or paper_url or submission.description or submission.paper_url):
        raise InvalidInput(
            "Publishing needs a description or a paper URL (description or paper_url)", field="description"
        )
    specs = entry_fields.specs(submission.split.benchmark_id)
    held = entry_fields.values_of(submission.fields)
    given = entry_fields.clean_values(specs, fields)
    # A key given empty (null, "") takes its value away: the page's form sends every field, blank or not.
    cleared = {key for key, value in (fields or {}).items() if key not in given and key in held}
    if submission.published_at is not None:
        for key in [*given, *cleared]:
            if held.get(key) != given.get(key):
                raise Conflict(
                    f"the entry is published: its field {key!r} changes only once it is unpublished",
                    field=f"fields.{key}",
                )
    values = {key: value for key, value in held.items() if key not in cleared} | given
    entry_fields.check_required(specs, values)
    changed = {
        name: value
        for name, value in (("description", description), ("paper_url", paper_url), ("code_url", code_url))
        if value and value != getattr(submission, name)
    }
    if submission.published_at is not None and not changed:
        return submission
    if submission.published_at is None:
        _refuse_duplicate(submission)
    _count_change(user, submission.id)  # commits its count: the submission is read again below
    for name, value in changed.items():
        setattr(submission, name, value)
    if changed:
        _drop_verified(submission)  # what a maintainer checked is no longer what the board shows
    submission.fields = entry_fields.stored(values)
    if submission.published_at is None:
        submission.published_at = utcnow()
    submission.split.board_version += 1
    db.session.commit()
    return submission


def _refuse_duplicate(submission: Submission) -> None:
    """A crowded board stays readable: the same predictions a team already has on the board are not
    published twice (Conflict names the entry)."""
    twin = db.session.execute(
        select(Submission.id, Submission.model_name)
        .where(
            Submission.team_id == submission.team_id,
            Submission.split_id == submission.split_id,
            Submission.id != submission.id,
            Submission.published_at.is_not(None),
            Submission.hidden_at.is_(None),
            Submission.status == "scored",
            Submission.predictions == submission.predictions,
        )
        .order_by(Submission.id)
        .limit(1)
    ).first()
    if twin is not None:
        raise Conflict(
            f"these predictions are identical to the team's published submission {twin.id} "
            f"({twin.model_name!r}) on this split; unpublish that one first or publish different predictions"
        )


def unpublish(user: User, submission_id: int) -> Submission:
    """Take a submission off the leaderboard (nothing to do, and nothing counted, when it is not on it); the
    change counts against the account's and the entry's limits (_count_change). Only for a confirmed address."""
    accounts.check_verified(user)
    submission = _own(user, submission_id)
    if submission.published_at is None:
        return submission
    _count_change(user, submission.id)  # commits its count: the submission is read again below
    submission.published_at = None
    _drop_verified(submission)  # published again, it may say something else: checked again, or not at all
    submission.split.board_version += 1
    db.session.commit()
    return submission


def hide(admin: User, submission_id: int, reason: str) -> Submission:
    if not admin.is_admin:
        raise Forbidden("only maintainers can hide entries")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("say why the entry is hidden (reason)")
    check_visible("the reason", reason, field="reason")
    submission = get_for(admin, submission_id)
    submission.hidden_at = utcnow()
    submission.hidden_reason = reason[:2000]
    submission.split.board_version += 1
    # Audited here, in the same transaction, whichever page the maintainer hid it from.
    audit_log.record(admin, "entry.hide", f"submission {submission.id}", {"via": "web", "reason": reason[:2000]})
    db.session.commit()
    return submission


def unhide(admin: User, submission_id: int) -> Submission:
    if not admin.is_admin:
        raise Forbidden("only maintainers can unhide entries")
    submission = get_for(admin, submission_id)
    submission.hidden_at = None
    submission.hidden_reason = None
    submission.split.board_version += 1
    audit_log.record(admin, "entry.unhide", f"submission {submission.id}", {"via": "web"})
    db.session.commit()
    return submission


MAX_VERIFIED_NOTE = 500


def _drop_verified(submission: Submission) -> None:
    submission.verified_at = None
    submission.verified_note = None
    submission.verified_url = None
    submission.verified_by_id = None


def _maintained(actor: User | None, submission_id: int, doing: str) -> Submission:
    """The submission a maintainer (or the command line: actor None) acts on; Forbidden for anyone else."""
    if actor is not None and not actor.is_admin:
        raise Forbidden(f"only maintainers can {doing} entries")
    submission = db.session.get(Submission, submission_id)
    if submission is None:
        raise NotFound(f"no submission {submission_id}")
    return submission


def verify(
    actor: User | None, submission_id: int, note: str, url: str | None = None, *, via: str = "web"
) -> Submission:
    """Mark a published entry verified (a maintainer checked its code and weights), with a short note and an
    optional link; marking it again replaces both. Audited in the same transaction. Refused (409) for an entry
    that is not on the board: unpublished, not scored, or hidden (unhide it first). `actor` None: the command
    line."""
    submission = _maintained(actor, submission_id, "verify")
    note = _typed_text("note", note, MAX_VERIFIED_NOTE, "say what was checked")
    check_visible("the note", note, field="note")
    url = _clean_url("url", url)
    if submission.status != "scored" or submission.published_at is None:
        raise Conflict(f"submission {submission.id} is not published: only a published entry can be verified")
    if submission.hidden_at is not None:
        raise Conflict(f"entry {submission.id} is hidden: unhide it before verifying it")
    submission.verified_at = utcnow()
    submission.verified_note = note
    submission.verified_url = url
    submission.verified_by_id = actor.id if actor is not None else None
    submission.split.board_version += 1
    audit_log.record(actor, "entry.verify", f"submission {submission.id}", {"via": via, "note": note, "url": url})
    db.session.commit()
    return submission


def unverify(actor: User | None, submission_id: int, *, via: str = "web") -> Submission:
    """Take a maintainer's verified mark off an entry (nothing to do, and nothing recorded, without one)."""
    submission = _maintained(actor, submission_id, "unverify")
    if submission.verified_at is None:
        return submission
    _drop_verified(submission)
    submission.split.board_version += 1
    audit_log.record(actor, "entry.unverify", f"submission {submission.id}", {"via": via})
    db.session.commit()
    return submission


def timestamp(moment: datetime) -> str:
    return as_utc(moment).astimezone(UTC).isoformat()
