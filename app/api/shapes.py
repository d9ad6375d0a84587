"""Every shape API v1 answers or accepts, as pydantic models: the views build these, and the OpenAPI 3.1
document (app/api/openapi.py) is generated from them, so the two cannot drift apart.

The document is made by spectree rather than flask-openapi3 because spectree decorates the views of a plain
Flask blueprint (flask-openapi3 validates through its own `OpenAPI` class, which would have to replace Flask in
the app factory) and can document a view's input without taking over its parsing, so each paging, search and
field rule stays where it lives (the services) with its own message.

A model answers as `body(shape)`: its fields as JSON values through Flask's JSON provider (keys sorted, ASCII),
byte for byte what the hand-written serializers gave. Models refuse keys they do not declare (`extra="forbid"`),
so a service adding a key to a document it returns fails in the tests until the shape names it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from app.services.boards.leaderboards import MAX_LIMIT, MAX_OFFSET, MAX_QUERY
from app.services.intake.submissions import MAX_DESCRIPTION, MAX_MODEL_NAME, MAX_URL

# A number as computed: an int stays an int (pydantic's float would write 1 as 1.0, which the API never did).
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
Uri = Annotated[str, WithJsonSchema({"type": "string", "format": "uri", "maxLength": MAX_URL})]
File = Annotated[bytes, WithJsonSchema({"type": "string", "format": "binary"})]
# An entry's fact sheet (its benchmark's entry fields): yes/no as a boolean, an integer as a number, else text.
FieldValues = Annotated[
    dict[str, bool | int | str],
    Field(
        description="The entry's fields (its benchmark's fact sheet), by key: yes/no fields as true/false, integer "
        "fields as numbers, the others as text; a field not filled in is absent."
    ),
]


# What the services hold as plain strings, one of a few values (checked when a model is built).
Feedback = Literal["full", "ladder", "none"]
HeldFeedback = Literal["ladder", "none"]
PhaseState = Literal["open", "not_open_yet", "closed"]
View = Literal["entries", "teams", "final"]


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


def body(shape: BaseModel) -> dict[str, Any]:
    """What a view returns for `shape`: JSON values, absent keys left out (Flask writes them)."""
    return shape.model_dump(mode="json")


def _optional(description: str | None = None, **constraints: Any) -> Any:
    """An input field that may be left out (documented without a default: None is no value of its type)."""

    return Field(
        default=None,
        description=description,
        json_schema_extra=lambda json_schema: _no_default(json_schema, **constraints),
    )


def _no_default(json_schema: dict[str, Any], **constraints: Any) -> None:
    json_schema.pop("default", None)
    json_schema.update(constraints)


def _absent_when_none(description: str) -> Any:
    """A key the answer holds only sometimes (never as null)."""
    return Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=description,
        json_schema_extra=_no_default,
    )


class OpenApiDocument(RootModel[dict[str, Any]]):
    """The OpenAPI 3.1 document."""


class JsonSchemaDocument(RootModel[dict[str, Any]]):
    """A JSON Schema (2020-12) document."""


# --- errors --------------------------------------------------------------------------------------------


class Problem(Shape):
    line: int | None = Field(description="1-based line of the file; null: the whole file or request")
    message: str


class Error(Shape):
    """Every error answer: what went wrong in a sentence, and each problem (by line for a file)."""

    error: str = Field(description="What went wrong, in a sentence.")
    details: list[Problem]


class QuotaError(Error):
    retry_at: Timestamp | None = Field(
        description="When the next slot opens (UTC); null when the split's total is used up."
    )


# --- submissions ---------------------------------------------------------------------------------------

Scores = Annotated[
    dict[str, dict[str, Number | None]],
    Field(description="Percentages by subset (`all` is the whole split) and metric."),
]
ScoresText = Annotated[
    dict[str, dict[str, str]],
    Field(
        description="The same scores as the submission's page writes them: one decimal, or a blind test's released "
        "figure to its count resolution (a subset's in whole percents, e.g. '51')."
    ),
]


class QuotaLimits(Shape):
    per_day: int | None
    per_month: int | None
    total: int | None


class QuotaUsed(Shape):
    today: int
    month: int
    total: int


class QuotaLeft(Shape):
    today: int | None
    month: int | None
    total: int | None


class Quota(Shape):
    """Scored submissions of the team on this split; null limits are unlimited."""

    limits: QuotaLimits
    used: QuotaUsed
    left: QuotaLeft


class SubmissionSummary(Shape):
    id: int
    benchmark: str = Field(description="Benchmark slug.")
    split: str = Field(description="Split slug.")
    team: str = Field(description="Team name.")
    model_name: str
    status: Literal["scored", "rejected"]
    submitted_at: Timestamp
    published: bool


class Verdict(Shape):
    """The verdict fields of a scored submission's answer (services/intake/submissions.Verdict)."""

    improved: bool | None = Field(
        description="Only where the Ladder answered the file (a hidden split under the `ladder` feedback policy; "
        "null under every other policy): true when it set a new best, so its own accuracy was released; false "
        "when it did not beat the best already released, so that best is released again (or nothing, while the "
        "team has no figure of its own). Its own score is never released then."
    )
    released: Literal["this", "best", "none"] = Field(
        description="Which figure `scores` holds: `this` (this file's own scores, as the policy releases them), "
        "`best` (the team's best released before this file, shown again: the Ladder's answer to a file that did "
        "not beat it, until the split is revealed), `none` (nothing: held, rejected, or no figure yet)."
    )


class SubmissionCreated(SubmissionSummary, Verdict):
    """Scored and stored."""

    scores: Scores | None = Field(description="Null when the split's feedback policy withholds scores.")
    scores_text: ScoresText | None
    quota: Quota


class Submission(SubmissionSummary, Verdict):
    sha256: str = Field(description="sha256 of the uploaded file.")
    size: int = Field(description="Size of the uploaded file in bytes.")
    scores: Scores | None = Field(description="Null for rejected files and where the feedback policy withholds scores.")
    scores_text: ScoresText | None
    errors: list[Problem] = Field(
        description="Problems of a rejected file, by line: the first 50 (by line), then one counting the rest."
    )
    refusal: str | None = Field(
        description="A rejected file's refusal, as its 422 said it: the true number of lines with errors, what the "
        "split's identifiers look like where some were unknown, and how many `errors` lists (\"invalid prediction "
        'file: 3,104 lines have errors (identifiers look like dev-850-0-0); the first 50:"). Null for a scored '
        "file (and one rejected before this field)."
    )
    description: str
    paper_url: str | None
    code_url: str | None
    anonymous: bool
    published_at: Timestamp | None
    verified: Verified | None = Field(description="A maintainer's verified mark; null when the entry has none.")
    fields: FieldValues


class Placement(Shape):
    """Where a published entry is on its split's board."""

    message: str = Field(
        description='The confirmation in words: "Published: row 3 of 12 on the Test-U board.", or that the entry is '
        "held until the reveal (a blind test's entry its board shows from then on), hidden, or that the board is "
        "being updated (the entry is not yet on its last snapshot)."
    )
    row: int | None = Field(
        description="1-based row in the board's default order; null while it is not on it (held, hidden, or not yet "
        "on the board's last snapshot: the board is being updated)."
    )
    rows: int = Field(description="Entries on the board now.")
    held_until_reveal: bool = Field(
        description="A blind test's entry: on the board once the maintainers reveal the split."
    )
    hidden: bool = Field(description="A maintainer has hidden the entry.")
    board_url: str = Field(description="The board's page (the page that holds the row).")
    api_url: str = Field(description="The board in this API.")


class PublishedSubmission(Submission):
    placement: Placement


class Window(Shape):
    """Beside every list's items (?limit=&offset=): services/boards/leaderboards.Window."""

    total: int = Field(
        ge=0, description="Items the whole list holds: after the search `q`, before `limit` and `offset`."
    )
    limit: int | None = Field(description="The `limit` asked for; null when none was (every item from `offset` on).")
    offset: int = Field(ge=0, description="Items skipped before the first one given.")


class Submissions(Window):
    submissions: list[SubmissionSummary]


# --- requests ------------------------------------------------------------------------------------------


class PublishRequest(Shape):
    """Publishing needs a description or a paper_url (given now or when submitting); the body may be empty."""

    model_config = ConfigDict(extra="ignore")  # other keys were always ignored

    description: str | None = Field(default=None, json_schema_extra={"maxLength": MAX_DESCRIPTION})
    paper_url: Uri | None = None
    code_url: Uri | None = None
    fields: dict[str, Any] | None = Field(
        default=None,
        description="Values of the benchmark's entry fields, by key (yes/no as true/false, integers as numbers; "
        "null or an empty string takes a value given before away, a key left out keeps it); each is checked by its "
        "type (422 naming the field); required fields must have a value, given now or at upload. A published "
        "entry's fields change only once it is unpublished (409).",
    )


class UploadForm(Shape):
    """An upload (multipart/form-data): documented here, read by the view (the service checks each field)."""

    file: File = Field(
        description="The prediction file, in its task type's format (How to submit on the benchmark's page): CSV, "
        "JSON or JSON lines."
    )
    benchmark: str = Field(description="Benchmark slug.", examples=["demo-nlvr2"])
    split: str = Field(description="Split slug.", examples=["dev"])
    team: str | SkipJsonSchema[None] = _optional("Team id or name; optional for members of one team.")
    model_name: str = Field(json_schema_extra={"maxLength": MAX_MODEL_NAME})
    description: str | SkipJsonSchema[None] = _optional(maxLength=MAX_DESCRIPTION)
    paper_url: Uri | SkipJsonSchema[None] = _optional()
    code_url: Uri | SkipJsonSchema[None] = _optional()
    anonymous: Literal["true", "false", "1", "0", "on", "off", "yes", "no"] | SkipJsonSchema[None] = _optional(
        "Appear on the leaderboard without the team name."
    )
    fields: str | SkipJsonSchema[None] = _optional(
        'The benchmark\'s entry fields as a JSON object, e.g. {"zero_shot": true, "parameters": 7000000000}; each '
        "value is checked by its field's type (422 naming the field). Required fields are needed at publication."
    )


class UploadHeaders(Shape):
    idempotency_key: str | SkipJsonSchema[None] = Field(
        default=None,
        alias="Idempotency-Key",
        description="One key per upload; a retry of the same upload sends the same key.",
        json_schema_extra=lambda json_schema: _no_default(
            json_schema, minLength=1, maxLength=255, pattern="^[\\x21-\\x7e]+$"
        ),
    )


class WindowQuery(Shape):
    limit: int | SkipJsonSchema[None] = _optional(
        f"At most this many items (0 to {MAX_LIMIT:,}: 0 gives `total` alone). Without it, every item from "
        "`offset` on, as the list answered before it was paged. Anything else is a 400 naming the parameter.",
        minimum=0,
        maximum=MAX_LIMIT,
    )
    offset: int | SkipJsonSchema[None] = _optional(
        "Items to skip first (default 0). Anything but a whole number in range is a 400 naming it.",
        minimum=0,
        maximum=MAX_OFFSET,
    )


class BoardSearch(WindowQuery):
    q: str | SkipJsonSchema[None] = _optional(
        "Only the rows whose model name or team name holds this text, ignoring case (an anonymous row's team is "
        "`Anonymous`); each keeps its rank on the board asked for (a track's own, with `track`, `where` or "
        "`verified`), and `total` counts them. Reference rows are not "
        "searched.",
        maxLength=MAX_QUERY,
    )


# A board's and the models view's selection parameters (a field each, made anew for each model that has it).
def _verified_query() -> Any:
    return _optional(
        "`1`: the verified entries alone, a board of their own: ranks, rank intervals and resolution computed among "
        "them (never the whole board's ranks filtered). Anything else but `0` is a 400."
    )


def _track_query() -> Any:
    return _optional(
        "A named track of the benchmark (`tracks` in the answer lists them; `verified` is the verified entries): "
        "its entries alone, a board of their own, ranks, rank intervals and resolution computed among them. An "
        "unknown track is a 400 naming it."
    )


def _where_query() -> Any:
    return _optional(
        "A condition on an entry field the benchmark lets boards filter by, `field:value` (`zero_shot:yes`) or, for "
        "a number, `field<=value` (also `>=`, `<`, `>`; `parameters<=1e9`); repeat it for several (all must hold), "
        "with or without `track`. The entries meeting them are ranked among themselves. An unknown field, one not "
        "filterable or a value its type refuses is a 400 naming the field."
    )


class BoardQuery(BoardSearch):
    view: View | SkipJsonSchema[None] = _optional(
        "`teams` keeps each team's best entry (anonymous entries count apart). `final`: the final board, the "
        "entries as they stood at the split's closing time, ranked among themselves; only for a split whose "
        "closing time has passed (otherwise 404). A held blind test's final board stays held until the reveal."
    )
    verified: Literal["0", "1"] | SkipJsonSchema[None] = _verified_query()
    track: str | SkipJsonSchema[None] = _track_query()
    where: list[str] | SkipJsonSchema[None] = _where_query()


class ModelsQuery(BoardSearch):
    """The models view's: a search and a track, as a board's (each split's board of the track's entries)."""

    verified: Literal["0", "1"] | SkipJsonSchema[None] = _verified_query()
    track: str | SkipJsonSchema[None] = _track_query()
    where: list[str] | SkipJsonSchema[None] = _where_query()


class SubmissionSearch(WindowQuery):
    q: str | SkipJsonSchema[None] = _optional(
        "Only the submissions whose model name or description holds this text, ignoring case (SQL ILIKE: on SQLite "
        "for ASCII letters alone); `total` counts them.",
        maxLength=MAX_QUERY,
    )


# --- benchmarks and the caller -------------------------------------------------------------------------


class Split(Shape):
    slug: str
    name: str
    hidden: bool = Field(description="A blind test: its labels never leave the server.")
    examples: int
    open: bool = Field(description="Accepts submissions.")
    feedback: Feedback


class Benchmark(Shape):
    slug: str
    name: str
    task_type: str
    description: str
    paper_url: str | None
    splits: list[Split]


class Benchmarks(Window):
    """The benchmarks, by name, with their splits."""

    benchmarks: list[Benchmark]


class TeamName(Shape):
    id: int
    name: str


class SplitQuota(Quota):
    """What is left to the caller on one open split for one of their teams."""

    benchmark: str = Field(description="Benchmark slug.")
    split: str = Field(description="Split slug.")
    team_id: int
    team: str = Field(description="Team name.")


class Me(Shape):
    email: str
    email_verified: bool = Field(
        description="Whether the address is confirmed (the mailed link followed); until it is, uploads and "
        "publishing are refused with 403."
    )
    maintainer: bool
    teams: list[TeamName] = Field(description="The caller's teams, by name.")
    quotas: list[SplitQuota] = Field(
        description="Submissions left to the caller on every split open to submissions, one item per split and "
        "team: the stricter of the team's count and the caller's own through all their teams, as an upload is "
        "checked (the Submit page shows the same). Null limits and `left` are unlimited. Empty for a caller "
        "without a team."
    )


# --- leaderboards --------------------------------------------------------------------------------------


class ColumnFacts(Shape):
    """What a column is, as its family declares the metric (tasks.base.Metric; exports.column_facts)."""

    label: str
    examples: int | None = Field(description="n: the units the column's metric counts (null: not shown).")
    counts: str = Field(description='What n counts, in words: "balanced questions".')
    unit: Literal["percent", "plain"]
    direction: Literal["higher is better", "lower is better"]
    decimals: int | None = Field(description="Decimals it is written with (null: a percentage's own).")
    ranks: bool = Field(description="Whether it may decide a rank or a column's best.")


class BoardColumn(ColumnFacts):
    key: str
    subset: str
    metric: str


class Score(Shape):
    """A percentage and its 95% interval from a bootstrap over consistency groups (sentences; VCR questions),
    shared across entries; and each as the board writes it (one decimal, or a blind test's released figure to
    its count resolution, a subset's in whole percents)."""

    value: Number | None
    ci_low: Number | None
    ci_high: Number | None
    text: str | None
    ci_low_text: str | None
    ci_high_text: str | None


class Verified(Shape):
    """A maintainer's check of a published entry (its code and weights): when, what was checked, and a link."""

    at: Timestamp
    note: str = Field(description="What was checked, in at most 500 characters.")
    url: str | None = Field(description="A link to the check (http or https), if the maintainer gave one.")


class Gap(Shape):
    """Only on a revealed blind test with a sealed part: the primary metric on the queried part minus that on
    the sealed part (also in scores as subset 'gap'), the one-sided p-value of a cluster-bootstrap test, and
    whether it is below 0.05."""

    metric: str
    value: Number
    p: Number | None
    larger_than_sampling: bool


class LeaderboardEntry(Shape):
    rank: int = Field(
        ge=1,
        description="1 + B, B the entries decided better on the primary metric. Each pair of entries of the board "
        "(of the view: view=teams and the final board are boards of their own) gets one test, an exact McNemar "
        "test (a paired permutation test on points for soft scores: VQA v2; before a blind test's reveal a "
        "two-proportion z-test on the counts alone), and Holm's procedure over all N(N-1)/2 pairs (alpha 0.05) "
        "decides it once, so what one row says of another the other says of it (`rank_method` says it for the "
        "board). Entries far apart are decided apart; a lower row may show a better rank than one above it when "
        "fewer entries are decided better than it.",
    )
    rank_low: int | None = Field(
        description="Lower end of the rank interval: the rank itself (1 + the entries decided better, from the same "
        "pair decisions as the rank). The intervals of a board hold simultaneously at 95%."
    )
    rank_high: int | None = Field(description="Upper end of the rank interval: N less the entries decided worse.")
    submission_id: int = Field(description="Its public page is /submissions/{id}.")
    model_name: str
    team: str | None = Field(description="Null when the team chose to appear anonymously.")
    submitted_at: Timestamp
    paper_url: str | None
    code_url: str | None
    fields: FieldValues
    scores: dict[str, dict[str, Score]]
    gap: Gap | SkipJsonSchema[None] = _absent_when_none("Present on a revealed blind test with a sealed part.")
    verified: Verified | None = Field(description="A maintainer's verified mark; null when the entry has none.")


class Figure(Shape):
    value: Number | None
    text: str | None


class ReferenceRow(Shape):
    """A baseline or human performance from a paper: never ranked, it stands where its primary score falls among
    the entries."""

    name: str
    rank: None = Field(description="Reference rows have no rank.")
    place: int = Field(description="Its row in the table, entries and reference rows counted from 1.")
    date: str | None = Field(description="The day its figures were published (YYYY-MM-DD), if given.")
    source_url: str | None
    scores: dict[str, dict[str, Figure]] | SkipJsonSchema[None] = _absent_when_none(
        "A board's: subset -> metric -> {value, text}."
    )
    cells: dict[str, Figure] | SkipJsonSchema[None] = _absent_when_none(
        "The models view's: column key -> {value, text}."
    )


class Held(Shape):
    """While the scores are held (scores_public false): how many published entries, from how many teams, wait
    for the reveal, and the feedback policy; counts only, nothing per entry."""

    entries: int = Field(ge=0)
    teams: int = Field(ge=0)
    feedback: HeldFeedback
    policy: str = Field(description="The feedback policy in one sentence.")
    opens: str = Field(description="When the scores open, in words.")
    about_url: str = Field(description="How the blind test works (a page).")


class Phase(Shape):
    """When the split takes uploads, and where it stands at the time of the request (the split's open/closed
    policy is apart: `open` in /benchmarks)."""

    opens_at: Timestamp | None = Field(description="Null: no opening time.")
    closes_at: Timestamp | None = Field(description="Null: no closing time.")
    state: PhaseState = Field(description="`not_open_yet` before opens_at, `closed` from closes_at on, else `open`.")
    reveal_planned_at: Timestamp | None = Field(
        description="When the maintainers plan to reveal a hidden split's scores; null: no plan, or revealed already."
    )
    text: str | None = Field(
        description='As the board says it: "Open until <closes>", "Opens <opens>", "Closed since <closes>" (times in '
        'UTC), with "; scores to be revealed <when>" where a reveal is planned; null for a split open with no closing '
        "time and no planned reveal."
    )


class Track(Shape):
    name: str = Field(description="Its name, for `?track=`.")
    label: str
    where: list[str] = Field(description="Its conditions, all of which an entry meets.")


class Leaderboard(Window):
    benchmark: str
    split: str
    scores_public: bool = Field(description="False while a hidden split's scores are held; entries is then empty.")
    view: View = Field(
        description="`teams`: each team's best entry, ranked among those. `final`: the final board, the entries as "
        "they stood at the split's closing time (uploaded before it, published by then and still on the board), "
        "ranked among themselves."
    )
    columns: list[BoardColumn] = Field(
        description="The board's default columns, in its order (every entry's scores hold more)."
    )
    entries: list[LeaderboardEntry] = Field(
        description="The entries `q` keeps, in ranking order, the window `limit` and `offset` ask for; each with its "
        "rank on the board asked for (a track's own ranks with `track`, `where` or `verified`)."
    )
    rank_method: str | None = Field(description="How this board's ranks and rank intervals are made, in one sentence.")
    resolution: Number | None = Field(
        description="The smallest difference between two entries, in points, that this board's own pair decisions "
        "detect with 80% power at its size (entries closer are usually tied); null with fewer than two entries or "
        "while the scores are held."
    )
    references: list[ReferenceRow]
    held: Held | None = Field(description="Null once the scores are public.")
    phase: Phase | None
    updating_since: Timestamp | None = Field(
        description="Set while a newer snapshot of the board is being built (after a publication, a hidden entry, a "
        "label correction...): when the oldest change not yet shown was made. The entries are then the board "
        "before it, less any entry taken off the board since. Null when the board is current."
    )
    verified_only: bool = Field(
        description="`verified=1`: the verified entries alone, a board of their own (ranks, rank intervals and "
        "resolution computed among them, never the whole board's)."
    )
    track: str | None = Field(
        description="The named track shown (`verified` for `verified=1`); null for every entry or ad-hoc conditions."
    )
    where: list[str] = Field(
        description="Every condition the entries shown meet (a named track's own included), as `field:value` or "
        "`field<=value`; empty for every entry. The ranks are among these entries alone."
    )
    selection: str | None = Field(description="What `where` and `verified` keep, in words; null for every entry.")
    tracks: list[Track] = Field(description="The benchmark's named tracks, in its order (the board's tabs).")


class ModelsSplit(Shape):
    slug: str
    name: str


class ModelsColumn(ColumnFacts):
    key: str
    split: str
    subset: str
    metric: str


class ModelCell(Score):
    """The entry's submission and its score (as in Score)."""

    submission_id: int


class ModelRow(Shape):
    rank: int | None
    rank_low: int | None
    rank_high: int | None
    model: str
    team: str
    anonymous: bool
    fields: FieldValues = Field(description="Its latest entry's fields (the benchmark's fact sheet), by key.")
    verified: Verified | None = Field(description="Its latest entry's verified mark; null when it has none.")
    cells: dict[str, ModelCell] = Field(description="Column key -> the entry's submission_id and its score.")


class Models(Window):
    """One row per model (a team and its model name, trimmed, case-insensitive; each anonymous entry is its own
    model) with its latest published entry on each split whose scores are public."""

    benchmark: str
    ranked_by: str | None = Field(description="The split the rows are ranked by (its board order).")
    rank_method: str | None = Field(description="How the models' ranks and rank intervals are made, in one sentence.")
    resolution: Number | None = Field(
        description="The smallest difference, in points, that the models' own pair decisions detect with 80% power "
        "(null with fewer than two ranked models)."
    )
    splits: list[ModelsSplit]
    columns: list[ModelsColumn]
    models: list[ModelRow]
    references: list[ReferenceRow] = Field(description="Every reference row, whatever `q`, `limit` and `offset`.")
    track: str | None = Field(
        description="The named track shown (`verified` for `verified=1`): the models of its entries alone, ranked "
        "among themselves on each split's board of those entries; null for every entry or ad-hoc conditions."
    )
    where: list[str] = Field(description="Every condition the entries shown meet; empty for every entry.")
    selection: str | None = Field(description="What `where` and `verified` keep, in words; null for every entry.")
    tracks: list[Track] = Field(description="The benchmark's named tracks, in its order (the tabs).")


# --- two entries compared ------------------------------------------------------------------------------


class CompareQuery(Shape):
    a: str = Field(description="The id of a published entry.")
    b: str = Field(description="The id of another published entry of the same split.")


class ComparisonRow(Shape):
    subset: str
    metric: str
    label: str
    a: float | None
    b: float | None
    difference: float | None = Field(description="a − b, in points.")
    ci_low: float | None = Field(description="The 95% interval of the difference (none on a blind test).")
    ci_high: float | None
    p: float | None = Field(
        description="The board's paired test, two-sided, for this pair alone (primary metric only; on a blind test "
        "before its reveal the board's unpaired test on the released counts)."
    )


class DiscordantExample(Shape):
    id: str
    a_correct: bool
    b_correct: bool


class Comparison(Shape):
    benchmark: str
    split: str
    a: int
    b: int
    held: bool = Field(description="A blind test's scores are held: nothing else is said.")
    counts_only: bool = Field(description="A blind test before its reveal: the released figures alone.")
    rows: list[ComparisonRow]
    per_example: bool = Field(description="Whether the discordant examples are given (public splits only).")
    discordant: list[DiscordantExample]
    a_only: int = Field(ge=0, description="Examples a got right and b wrong.")
    b_only: int = Field(ge=0)
    why_no_examples: str | None
