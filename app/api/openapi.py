"""The OpenAPI 3.1 description of API v1, served at /api/v1/openapi.json.

Kept as a plain dict beside the views so a change to one is reviewed with the other; the test suite
validates it and fuzzes every operation against it.
"""

from __future__ import annotations

import copy

from app.services.boards.leaderboards import MAX_LIMIT, MAX_OFFSET, MAX_QUERY

VERSION = "1.0.0"


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str, **extra) -> dict:
    return {"type": [kind, "null"], **extra}


# What a column is, as its family declares the metric (tasks.base.Metric; exports.column_facts).
_COLUMN_FACTS = {
    "examples": _nullable("integer", description="n: the units the column's metric counts (null: not shown)."),
    "counts": {"type": "string", "description": 'What n counts, in words: "balanced questions".'},
    "unit": {"type": "string", "enum": ["percent", "plain"]},
    "direction": {"type": "string", "enum": ["higher is better", "lower is better"]},
    "decimals": _nullable("integer", description="Decimals it is written with (null: a percentage's own)."),
    "ranks": {"type": "boolean", "description": "Whether it may decide a rank or a column's best."},
}


def _json(schema: dict, description: str, headers: dict | None = None) -> dict:
    response = {"description": description, "content": {"application/json": {"schema": schema}}}
    if headers:
        response["headers"] = headers
    return response


def _errors(*statuses: str) -> dict:
    return {status: {"$ref": f"#/components/responses/{ERROR_RESPONSES[status][0]}"} for status in statuses}


def _responses(ok: tuple[str, str, dict], *errors: str) -> dict:
    code, description, schema = ok
    return {code: _json(schema, description), **_errors(*errors)}


# status -> (component name, description)
ERROR_RESPONSES = {
    "400": ("BadRequest", "A malformed query parameter (for example an unknown view)."),
    "401": ("Unauthorized", "No token, a malformed Authorization header, or an unknown or revoked token."),
    "403": (
        "Forbidden",
        "The caller is not a member of the team, has not confirmed their address yet (uploading and publishing "
        "need it), or is not allowed to do this.",
    ),
    "404": (
        "NotFound",
        "Unknown benchmark, split or submission (others' submissions are reported as missing), or the final board "
        "(view=final) of a split whose closing time has not passed.",
    ),
    "409": (
        "Conflict",
        "The split is closed to submissions or outside its phase (before its opening or from its closing time; "
        'the error names the date: "Uploads to NLVR2 Test-U closed at 2027-01-31 23:59 UTC", and nothing is '
        "stored), or the submission cannot be published.",
    ),
    "413": ("TooLarge", "The body is over its limit: an upload over MAX_UPLOAD_MB, a form field over 128 KB."),
    "422": (
        "Invalid",
        "Invalid input: missing or malformed fields, or an invalid prediction file; details name each problem by "
        'line. For a file, error gives the true count however many there are ("invalid prediction file: 3,104 '
        'lines have errors (identifiers look like dev-850-0-0); the first 50:") and details the first 50, by '
        "line, then one counting the rest.",
    ),
    "429": ("TooManyRequests", "Over the split's submission quota (or the daily cap on invalid files)."),
    "503": (
        "Unavailable",
        "The upload storage cannot be reached, or a stored file cannot be read or fails its checksum: retry later "
        "or tell the maintainers.",
    ),
    "507": ("InsufficientStorage", "The server's upload storage is full or failing: nothing was stored."),
}

# The verdict fields of a scored submission's answer (services/intake/submissions.Verdict).
VERDICT_PROPERTIES = {
    "improved": _nullable(
        "boolean",
        description="Only where the Ladder answered the file (a hidden split under the `ladder` feedback policy; "
        "null under every other policy): true when it set a new best, so its own accuracy was released; false "
        "when it did not beat the best already released, so that best is released again (or nothing, while the "
        "team has no figure of its own). Its own score is never released then.",
    ),
    "released": {
        "type": "string",
        "enum": ["this", "best", "none"],
        "description": "Which figure `scores` holds: `this` (this file's own scores, as the policy releases them), "
        "`best` (the team's best released before this file, shown again: the Ladder's answer to a file that did "
        "not beat it, until the split is revealed), `none` (nothing: held, rejected, or no figure yet).",
    },
}

# Beside every list's items (?limit=&offset=): services/boards/leaderboards.Window.
WINDOW_PROPERTIES = {
    "total": {
        "type": "integer",
        "minimum": 0,
        "description": "Items the whole list holds: after the search `q`, before `limit` and `offset`.",
    },
    "limit": _nullable(
        "integer", description="The `limit` asked for; null when none was (every item from `offset` on)."
    ),
    "offset": {"type": "integer", "minimum": 0, "description": "Items skipped before the first one given."},
}
WINDOW = ["total", "limit", "offset"]

SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["error", "details"],
        "properties": {
            "error": {"type": "string", "description": "What went wrong, in a sentence."},
            "details": {"type": "array", "items": _ref("Problem")},
        },
    },
    "Problem": {
        "type": "object",
        "required": ["line", "message"],
        "properties": {
            "line": _nullable("integer", description="1-based line of the file; null: the whole file or request"),
            "message": {"type": "string"},
        },
    },
    "QuotaError": {
        "allOf": [
            _ref("Error"),
            {
                "type": "object",
                "required": ["retry_at"],
                "properties": {
                    "retry_at": _nullable(
                        "string",
                        format="date-time",
                        description="When the next slot opens (UTC); null when the split's total is used up.",
                    )
                },
            },
        ],
    },
    "Scores": {
        "type": "object",
        "description": "Percentages by subset (`all` is the whole split) and metric.",
        "additionalProperties": {"type": "object", "additionalProperties": _nullable("number")},
    },
    "ScoresText": {
        "type": "object",
        "description": "The same scores as the submission's page writes them: one decimal, or a blind test's "
        "released figure to its count resolution (a subset's in whole percents, e.g. '51').",
        "additionalProperties": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "Quota": {
        "type": "object",
        "required": ["limits", "used", "left"],
        "description": "Scored submissions of the team on this split; null limits are unlimited.",
        "properties": {
            "limits": {
                "type": "object",
                "required": ["per_day", "per_month", "total"],
                "properties": {k: _nullable("integer") for k in ("per_day", "per_month", "total")},
            },
            "used": {
                "type": "object",
                "required": ["today", "month", "total"],
                "properties": {k: {"type": "integer"} for k in ("today", "month", "total")},
            },
            "left": {
                "type": "object",
                "required": ["today", "month", "total"],
                "properties": {k: _nullable("integer") for k in ("today", "month", "total")},
            },
        },
    },
    "SubmissionSummary": {
        "type": "object",
        "required": ["id", "benchmark", "split", "team", "model_name", "status", "submitted_at", "published"],
        "properties": {
            "id": {"type": "integer"},
            "benchmark": {"type": "string", "description": "Benchmark slug."},
            "split": {"type": "string", "description": "Split slug."},
            "team": {"type": "string", "description": "Team name."},
            "model_name": {"type": "string"},
            "status": {"type": "string", "enum": ["scored", "rejected"]},
            "submitted_at": {"type": "string", "format": "date-time"},
            "published": {"type": "boolean"},
        },
    },
    "SubmissionCreated": {
        "allOf": [
            _ref("SubmissionSummary"),
            {
                "type": "object",
                "required": ["scores", "scores_text", "improved", "released", "quota"],
                "properties": {
                    "scores": {
                        "oneOf": [_ref("Scores"), {"type": "null"}],
                        "description": "Null when the split's feedback policy withholds scores.",
                    },
                    "scores_text": {"oneOf": [_ref("ScoresText"), {"type": "null"}]},
                    **VERDICT_PROPERTIES,
                    "quota": _ref("Quota"),
                },
            },
        ],
    },
    "Submission": {
        "allOf": [
            _ref("SubmissionSummary"),
            {
                "type": "object",
                "required": [
                    "sha256",
                    "size",
                    "scores",
                    "scores_text",
                    "improved",
                    "released",
                    "errors",
                    "refusal",
                    "description",
                    "paper_url",
                    "code_url",
                    "anonymous",
                    "published_at",
                ],
                "properties": {
                    "sha256": {"type": "string", "description": "sha256 of the uploaded file."},
                    "size": {"type": "integer", "description": "Size of the uploaded file in bytes."},
                    "scores": {
                        "oneOf": [_ref("Scores"), {"type": "null"}],
                        "description": "Null for rejected files and where the feedback policy withholds scores.",
                    },
                    "scores_text": {"oneOf": [_ref("ScoresText"), {"type": "null"}]},
                    **VERDICT_PROPERTIES,
                    "errors": {
                        "type": "array",
                        "description": "Problems of a rejected file, by line: the first 50 (by line), then one "
                        "counting the rest.",
                        "items": _ref("Problem"),
                    },
                    "refusal": _nullable(
                        "string",
                        description="A rejected file's refusal, as its 422 said it: the true number of lines with "
                        "errors, what the split's identifiers look like where some were unknown, and how many "
                        '`errors` lists ("invalid prediction file: 3,104 lines have errors (identifiers look like '
                        'dev-850-0-0); the first 50:"). Null for a scored file (and one rejected before this '
                        "field).",
                    ),
                    "description": {"type": "string"},
                    "paper_url": _nullable("string"),
                    "code_url": _nullable("string"),
                    "anonymous": {"type": "boolean"},
                    "published_at": _nullable("string", format="date-time"),
                },
            },
        ],
    },
    "Placement": {
        "type": "object",
        "required": ["message", "row", "rows", "held_until_reveal", "hidden", "board_url", "api_url"],
        "description": "Where a published entry is on its split's board.",
        "properties": {
            "message": {
                "type": "string",
                "description": 'The confirmation in words: "Published: row 3 of 12 on the Test-U board.", or that '
                "the entry is held until the reveal (a blind test's entry its board shows from then on) or hidden.",
            },
            "row": _nullable(
                "integer", description="1-based row in the board's default order; null while it is not on it."
            ),
            "rows": {"type": "integer", "description": "Entries on the board now."},
            "held_until_reveal": {
                "type": "boolean",
                "description": "A blind test's entry: on the board once the maintainers reveal the split.",
            },
            "hidden": {"type": "boolean", "description": "A maintainer has hidden the entry."},
            "board_url": {"type": "string", "description": "The board's page (the page that holds the row)."},
            "api_url": {"type": "string", "description": "The board in this API."},
        },
    },
    "PublishedSubmission": {
        "allOf": [
            _ref("Submission"),
            {"type": "object", "required": ["placement"], "properties": {"placement": _ref("Placement")}},
        ],
    },
    "PublishRequest": {
        "type": "object",
        "description": "Publishing needs a description or a paper_url (given now or when submitting).",
        "properties": {
            "description": _nullable("string", maxLength=5000),
            "paper_url": _nullable("string", format="uri", maxLength=2000),
            "code_url": _nullable("string", format="uri", maxLength=2000),
        },
    },
    "Split": {
        "type": "object",
        "required": ["slug", "name", "hidden", "examples", "open", "feedback"],
        "properties": {
            "slug": {"type": "string"},
            "name": {"type": "string"},
            "hidden": {"type": "boolean", "description": "A blind test: its labels never leave the server."},
            "examples": {"type": "integer"},
            "open": {"type": "boolean", "description": "Accepts submissions."},
            "feedback": {"type": "string", "enum": ["full", "ladder", "none"]},
        },
    },
    "Benchmark": {
        "type": "object",
        "required": ["slug", "name", "task_type", "description", "paper_url", "splits"],
        "properties": {
            "slug": {"type": "string"},
            "name": {"type": "string"},
            "task_type": {"type": "string"},
            "description": {"type": "string"},
            "paper_url": _nullable("string"),
            "splits": {"type": "array", "items": _ref("Split")},
        },
    },
    "LeaderboardEntry": {
        "type": "object",
        "required": ["rank", "submission_id", "model_name", "team", "submitted_at", "paper_url", "code_url", "scores"],
        "properties": {
            "rank": {
                "type": "integer",
                "minimum": 1,
                "description": "1 + B, B the entries decided better on the primary metric. Each pair of entries of "
                "the board (of the view: view=teams and the final board are boards of their own) gets one test, an "
                "exact McNemar test (a paired permutation test on points for soft scores: VQA v2; before a blind "
                "test's reveal a two-proportion z-test on the counts alone), and Holm's procedure over all N(N-1)/2 "
                "pairs (alpha 0.05) decides it once, so what one row says of another the other says of it "
                "(`rank_method` says it for the board). Entries far apart are decided apart; a lower row may show a "
                "better rank than one above it when fewer entries are decided better than it.",
            },
            "rank_low": _nullable(
                "integer",
                description="Lower end of the rank interval: the rank itself (1 + the entries decided better, from "
                "the same pair decisions as the rank). The intervals of a board hold simultaneously at 95%.",
            ),
            "rank_high": _nullable(
                "integer",
                description="Upper end of the rank interval: N less the entries decided worse.",
            ),
            "submission_id": {"type": "integer", "description": "Its public page is /submissions/{id}."},
            "model_name": {"type": "string"},
            "team": _nullable("string", description="Null when the team chose to appear anonymously."),
            "submitted_at": {"type": "string", "format": "date-time"},
            "paper_url": _nullable("string"),
            "code_url": _nullable("string"),
            "scores": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": _ref("Score"),
                },
            },
            "gap": {
                "type": "object",
                "required": ["metric", "value", "p", "larger_than_sampling"],
                "description": "Only on a revealed blind test with a sealed part: the primary metric on the queried "
                "part minus that on the sealed part (also in scores as subset 'gap'), the one-sided "
                "p-value of a cluster-bootstrap test, and whether it is below 0.05.",
                "properties": {
                    "metric": {"type": "string"},
                    "value": {"type": "number"},
                    "p": _nullable("number"),
                    "larger_than_sampling": {"type": "boolean"},
                },
            },
        },
    },
    "Score": {
        "type": "object",
        "required": ["value", "ci_low", "ci_high", "text", "ci_low_text", "ci_high_text"],
        "description": "A percentage and its 95% interval from a bootstrap over consistency groups (sentences; VCR "
        "questions), shared across entries; and each as the board writes it (one decimal, or a blind test's "
        "released figure to its count resolution, a subset's in whole percents).",
        "properties": {
            "value": _nullable("number"),
            "ci_low": _nullable("number"),
            "ci_high": _nullable("number"),
            "text": _nullable("string"),
            "ci_low_text": _nullable("string"),
            "ci_high_text": _nullable("string"),
        },
    },
    "Me": {
        "type": "object",
        "required": ["email", "email_verified", "maintainer", "teams", "quotas"],
        "properties": {
            "email": {"type": "string"},
            "email_verified": {
                "type": "boolean",
                "description": "Whether the address is confirmed (the mailed link followed); until it is, uploads and "
                "publishing are refused with 403.",
            },
            "maintainer": {"type": "boolean"},
            "teams": {
                "type": "array",
                "description": "The caller's teams, by name.",
                "items": {
                    "type": "object",
                    "required": ["id", "name"],
                    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                },
            },
            "quotas": {
                "type": "array",
                "description": "Submissions left to the caller on every split open to submissions, one item per "
                "split and team: the stricter of the team's count and the caller's own through all their teams, "
                "as an upload is checked (the Submit page shows the same). Null limits and `left` are unlimited. "
                "Empty for a caller without a team.",
                "items": {
                    "allOf": [
                        {
                            "type": "object",
                            "required": ["benchmark", "split", "team_id", "team"],
                            "properties": {
                                "benchmark": {"type": "string", "description": "Benchmark slug."},
                                "split": {"type": "string", "description": "Split slug."},
                                "team_id": {"type": "integer"},
                                "team": {"type": "string", "description": "Team name."},
                            },
                        },
                        _ref("Quota"),
                    ]
                },
            },
        },
    },
    "Leaderboard": {
        "type": "object",
        "required": ["benchmark", "split", "scores_public", "columns", "entries", *WINDOW],
        "properties": {
            **WINDOW_PROPERTIES,
            "benchmark": {"type": "string"},
            "split": {"type": "string"},
            "scores_public": {
                "type": "boolean",
                "description": "False while a hidden split's scores are held; entries is then empty.",
            },
            "rank_method": _nullable(
                "string", description="How this board's ranks and rank intervals are made, in one sentence."
            ),
            "resolution": _nullable(
                "number",
                description="The smallest difference between two entries, in points, that this board's own pair "
                "decisions detect with 80% power at its size (entries closer are usually tied); null with fewer "
                "than two entries or while the scores are held.",
            ),
            "view": {
                "type": "string",
                "enum": ["entries", "teams", "final"],
                "description": "`teams`: each team's best entry, ranked among those. `final`: the final board, the "
                "entries as they stood at the split's closing time (uploaded before it, published by then and still "
                "on the board), ranked among themselves.",
            },
            "phase": {
                "type": "object",
                "description": "When the split takes uploads, and where it stands at the time of the request (the "
                "split's open/closed policy is apart: `open` in /benchmarks).",
                "required": ["opens_at", "closes_at", "state", "text"],
                "properties": {
                    "opens_at": _nullable("string", format="date-time", description="Null: no opening time."),
                    "closes_at": _nullable("string", format="date-time", description="Null: no closing time."),
                    "state": {
                        "type": "string",
                        "enum": ["open", "not_open_yet", "closed"],
                        "description": "`not_open_yet` before opens_at, `closed` from closes_at on, else `open`.",
                    },
                    "text": _nullable(
                        "string",
                        description='As the board says it: "Open until <closes>", "Opens <opens>", "Closed since '
                        '<closes>" (times in UTC); null for a split open with no closing time.',
                    ),
                },
            },
            "columns": {
                "type": "array",
                "description": "The board's default columns, in its order (every entry's scores hold more).",
                "items": {
                    "type": "object",
                    "required": [
                        "key",
                        "subset",
                        "metric",
                        "label",
                        "examples",
                        "counts",
                        "unit",
                        "direction",
                        "decimals",
                        "ranks",
                    ],
                    "properties": {
                        "key": {"type": "string"},
                        "subset": {"type": "string"},
                        "metric": {"type": "string"},
                        "label": {"type": "string"},
                        **_COLUMN_FACTS,
                    },
                },
            },
            "entries": {
                "type": "array",
                "items": _ref("LeaderboardEntry"),
                "description": "The entries `q` keeps, in ranking order, the window `limit` and `offset` ask for; "
                "each with its rank on the whole board.",
            },
            "held": {
                "type": ["object", "null"],
                "description": "While the scores are held (scores_public false): how many published entries, "
                "from how many teams, wait for the reveal, and the feedback policy; counts only, nothing per "
                "entry. Null once the scores are public.",
                "required": ["entries", "teams", "feedback", "policy", "opens", "about_url"],
                "properties": {
                    "entries": {"type": "integer", "minimum": 0},
                    "teams": {"type": "integer", "minimum": 0},
                    "feedback": {"type": "string", "enum": ["ladder", "none"]},
                    "policy": {"type": "string", "description": "The feedback policy in one sentence."},
                    "opens": {"type": "string", "description": "When the scores open, in words."},
                    "about_url": {"type": "string", "description": "How the blind test works (a page)."},
                },
            },
            "references": {"type": "array", "items": _ref("ReferenceRow")},
            "updating_since": {
                "type": ["string", "null"],
                "format": "date-time",
                "description": "Set while a newer snapshot of the board is being built (after a publication, "
                "a hidden entry, a label correction...): when the oldest change not yet shown was made. The "
                "entries are then the board before it, less any entry taken off the board since. Null when "
                "the board is current.",
            },
        },
    },
    "ReferenceRow": {
        "type": "object",
        "required": ["name", "rank", "place", "date", "source_url"],
        "description": "A baseline or human performance from a paper: never ranked, it stands where its primary "
        "score falls among the entries.",
        "properties": {
            "name": {"type": "string"},
            "rank": {"type": "null", "description": "Reference rows have no rank."},
            "place": {
                "type": "integer",
                "description": "Its row in the table, entries and reference rows counted from 1.",
            },
            "date": _nullable("string", description="The day its figures were published (YYYY-MM-DD), if given."),
            "source_url": _nullable("string"),
            "scores": {"type": "object", "description": "A board's: subset -> metric -> {value}."},
            "cells": {"type": "object", "description": "The models view's: column key -> {value}."},
        },
    },
    "Models": {
        "type": "object",
        "required": ["benchmark", "ranked_by", "splits", "columns", "models", *WINDOW],
        "description": "One row per model (a team and its model name, trimmed, case-insensitive; each anonymous "
        "entry is its own model) with its latest published entry on each split whose scores are "
        "public.",
        "properties": {
            "benchmark": {"type": "string"},
            "ranked_by": _nullable("string", description="The split the rows are ranked by (its board order)."),
            "rank_method": _nullable(
                "string", description="How the models' ranks and rank intervals are made, in one sentence."
            ),
            "resolution": _nullable(
                "number",
                description="The smallest difference, in points, that the models' own pair decisions detect with "
                "80% power (null with fewer than two ranked models).",
            ),
            "splits": {"type": "array", "items": {"type": "object"}},
            "columns": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "split", "subset", "metric", "label"],
                    "properties": {
                        "key": {"type": "string"},
                        "split": {"type": "string"},
                        "subset": {"type": "string"},
                        "metric": {"type": "string"},
                        "label": {"type": "string"},
                        **_COLUMN_FACTS,
                    },
                },
            },
            "models": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["rank", "rank_low", "rank_high", "model", "team", "anonymous", "cells"],
                    "properties": {
                        "rank": _nullable("integer"),
                        "rank_low": _nullable("integer"),
                        "rank_high": _nullable("integer"),
                        "model": {"type": "string"},
                        "team": {"type": "string"},
                        "anonymous": {"type": "boolean"},
                        "cells": {
                            "type": "object",
                            "description": "Column key -> the entry's submission_id and its score (as in Score).",
                            "additionalProperties": {"type": "object"},
                        },
                    },
                },
            },
            "references": {
                "type": "array",
                "items": _ref("ReferenceRow"),
                "description": "Every reference row, whatever `q`, `limit` and `offset`.",
            },
            **WINDOW_PROPERTIES,
        },
    },
}

RESPONSES = {
    name: _json(_ref("Error"), description)
    for status, (name, description) in ERROR_RESPONSES.items()
    if status not in ("401", "429")
}
RESPONSES["Unauthorized"] = _json(
    _ref("Error"),
    ERROR_RESPONSES["401"][1],
    headers={"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Always `Bearer`."}},
)
RESPONSES["TooManyRequests"] = _json(
    _ref("QuotaError"),
    ERROR_RESPONSES["429"][1],
    headers={
        "Retry-After": {
            "schema": {"type": "string"},
            "description": "Seconds until the next slot opens (absent when it never will).",
        }
    },
)

# Publishing, unpublishing and editing a published entry: too many changes in the last hour (per account and
# per entry); the body is a plain Error.
RESPONSES["TooManyChanges"] = _json(
    _ref("Error"),
    "Too many changes of the board's entries in the last hour, by this account or of this entry.",
    headers={"Retry-After": {"schema": {"type": "string"}, "description": "Seconds until the next is allowed."}},
)
TOO_MANY_CHANGES = {"429": {"$ref": "#/components/responses/TooManyChanges"}}

SUBMISSION_ID = {
    "name": "submission_id",
    "in": "path",
    "required": True,
    "schema": {"type": "integer", "minimum": 1, "format": "int64"},
}
PUBLIC: list = []  # overrides the global bearer requirement

BENCHMARK_PARAMETER = {
    "name": "benchmark",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "example": "nlvr2",
}
VIEW_PARAMETER = {
    "name": "view",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "enum": ["entries", "teams", "final"]},
    "description": "`teams` keeps each team's best entry (anonymous entries count apart). `final`: the final board, "
    "the entries as they stood at the split's closing time, ranked among themselves; only for a split whose closing "
    "time has passed (otherwise 404). A held blind test's final board stays held until the reveal.",
}

LIMIT_PARAMETER = {
    "name": "limit",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_LIMIT},
    "description": f"At most this many items (0 to {MAX_LIMIT:,}: 0 gives `total` alone). Without it, every item "
    "from `offset` on, as the list answered before it was paged. Anything else is a 400 naming the parameter.",
}
OFFSET_PARAMETER = {
    "name": "offset",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
    "description": "Items to skip first (default 0). Anything but a whole number in range is a 400 naming it.",
}
BOARD_SEARCH = {
    "name": "q",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "maxLength": MAX_QUERY},
    "description": "Only the rows whose model name or team name holds this text, ignoring case (an anonymous "
    "row's team is `Anonymous`); each keeps its rank on the whole board, and `total` counts them. Reference rows "
    "are not searched.",
}
SUBMISSION_SEARCH = {
    "name": "q",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "maxLength": MAX_QUERY},
    "description": "Only the submissions whose model name or description holds this text, ignoring case (SQL "
    "ILIKE: on SQLite for ASCII letters alone); `total` counts them.",
}
WINDOW_PARAMETERS = [LIMIT_PARAMETER, OFFSET_PARAMETER]

PATHS = {
    "/benchmarks": {
        "get": {
            "operationId": "listBenchmarks",
            "summary": "Benchmarks and their splits",
            "security": PUBLIC,
            "parameters": WINDOW_PARAMETERS,
            "responses": _responses(
                (
                    "200",
                    "The benchmarks, by name, with their splits.",
                    {
                        "type": "object",
                        "required": ["benchmarks", *WINDOW],
                        "properties": {
                            "benchmarks": {"type": "array", "items": _ref("Benchmark")},
                            **WINDOW_PROPERTIES,
                        },
                    },
                ),
                "400",
                "422",
            ),
        }
    },
    "/me": {
        "get": {
            "operationId": "getMe",
            "summary": "Who the token belongs to, and their teams",
            "responses": _responses(("200", "The token's user.", _ref("Me")), "401"),
        }
    },
    "/leaderboards/{benchmark}": {
        "get": {
            "operationId": "getDefaultLeaderboard",
            "summary": "The leaderboard of a benchmark's landing split (pinned, else its first hidden split, "
            "else its first split)",
            "security": PUBLIC,
            "parameters": [BENCHMARK_PARAMETER, VIEW_PARAMETER, BOARD_SEARCH, *WINDOW_PARAMETERS],
            "responses": _responses(("200", "The leaderboard.", _ref("Leaderboard")), "400", "404", "422"),
        }
    },
    "/leaderboards/{benchmark}/{split}": {
        "get": {
            "operationId": "getLeaderboard",
            "summary": "The published entries of a split, ranked",
            "security": PUBLIC,
            "parameters": [
                BENCHMARK_PARAMETER,
                {"name": "split", "in": "path", "required": True, "schema": {"type": "string"}, "example": "test-u"},
                VIEW_PARAMETER,
                BOARD_SEARCH,
                *WINDOW_PARAMETERS,
            ],
            "responses": _responses(("200", "The leaderboard.", _ref("Leaderboard")), "400", "404", "422"),
        }
    },
    "/leaderboards/{benchmark}/models": {
        "get": {
            "operationId": "getModels",
            "summary": "One row per model across the benchmark's splits",
            "security": PUBLIC,
            "parameters": [BENCHMARK_PARAMETER, BOARD_SEARCH, *WINDOW_PARAMETERS],
            "responses": _responses(("200", "The models view.", _ref("Models")), "400", "404", "422"),
        }
    },
    "/submissions": {
        "post": {
            "operationId": "createSubmission",
            "summary": "Upload a prediction file; it is validated, scored and stored",
            "description": (
                "Every attempt is stored. A file with problems is kept as `rejected` (422, each problem "
                "named by line) and does not use the quota; a valid one is `scored` (201). Send an "
                "`Idempotency-Key` (a random UUID per upload) to retry safely: a repeat of a key this account "
                "has sent is answered as the first upload was (201 with `Idempotent-Replayed: true`, or its "
                "422) and stores nothing; the same key with another upload is a 422."
            ),
            "parameters": [
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x21-\\x7e]+$"},
                    "description": "One key per upload; a retry of the same upload sends the same key.",
                }
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "required": ["file", "benchmark", "split", "model_name"],
                            "properties": {
                                "file": {
                                    "type": "string",
                                    "format": "binary",
                                    "description": (
                                        "The prediction file, in its task type's format (How to submit on the "
                                        "benchmark's page): CSV, JSON or JSON lines."
                                    ),
                                },
                                "benchmark": {
                                    "type": "string",
                                    "description": "Benchmark slug.",
                                    "example": "demo-nlvr2",
                                },
                                "split": {"type": "string", "description": "Split slug.", "example": "dev"},
                                "team": {
                                    "type": "string",
                                    "description": "Team id or name; optional for members of one team.",
                                },
                                "model_name": {"type": "string", "maxLength": 200},
                                "description": {"type": "string", "maxLength": 5000},
                                "paper_url": {"type": "string", "format": "uri", "maxLength": 2000},
                                "code_url": {"type": "string", "format": "uri", "maxLength": 2000},
                                "anonymous": {
                                    "type": "string",
                                    "enum": ["true", "false", "1", "0", "on", "off", "yes", "no"],
                                    "description": "Appear on the leaderboard without the team name.",
                                },
                            },
                        },
                        "encoding": {"file": {"contentType": "text/csv, application/json, application/octet-stream"}},
                    }
                },
            },
            "responses": {
                **_responses(
                    (
                        "201",
                        "Scored and stored; scores are null where the feedback policy withholds them.",
                        _ref("SubmissionCreated"),
                    ),
                    "401",
                    "403",
                    "404",
                    "409",
                    "413",
                    "422",
                    "429",
                    "507",
                ),
            },
        },
        "get": {
            "operationId": "listSubmissions",
            "summary": "Submissions of the caller's teams, newest first",
            "parameters": [SUBMISSION_SEARCH, *WINDOW_PARAMETERS],
            "responses": _responses(
                (
                    "200",
                    "The submissions.",
                    {
                        "type": "object",
                        "required": ["submissions", *WINDOW],
                        "properties": {
                            "submissions": {"type": "array", "items": _ref("SubmissionSummary")},
                            **WINDOW_PROPERTIES,
                        },
                    },
                ),
                "400",
                "401",
                "422",
            ),
        },
    },
    "/submissions/{submission_id}": {
        "get": {
            "operationId": "getSubmission",
            "summary": "One submission (its team's members and maintainers)",
            "parameters": [SUBMISSION_ID],
            "responses": _responses(("200", "The submission.", _ref("Submission")), "401", "404"),
        }
    },
    "/submissions/{submission_id}/file": {
        "get": {
            "operationId": "getSubmissionFile",
            "summary": "The file as uploaded, byte for byte (its team's members and maintainers)",
            "description": "The exact bytes of a scored submission's upload (their sha256 is the submission's), "
            "with its task type's media type and a file name `<benchmark>-<split>-submission-<id>.<ext>`. Anyone "
            "else, another team's member included, gets 404, as for a submission that does not exist; a "
            "rejected file is not kept (404).",
            "parameters": [SUBMISSION_ID],
            "responses": {
                "200": {
                    "description": "The file.",
                    "headers": {
                        "Content-Disposition": {
                            "schema": {"type": "string"},
                            "description": 'attachment; filename="<benchmark>-<split>-submission-<id>.<ext>"',
                        }
                    },
                    "content": {
                        media_type: {"schema": {"type": "string", "format": "binary"}}
                        for media_type in ("text/csv", "application/json", "application/jsonl")
                    },
                },
                **_errors("401", "404", "503"),
            },
        }
    },
    "/submissions/{submission_id}/publish": {
        "post": {
            "operationId": "publishSubmission",
            "summary": "Show a scored submission on the leaderboard (team members)",
            "parameters": [SUBMISSION_ID],
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": _ref("PublishRequest")}},
            },
            "responses": _responses(
                ("200", "The published submission, and where it is on the board.", _ref("PublishedSubmission")),
                "401",
                "403",
                "404",
                "409",
                "422",
            )
            | TOO_MANY_CHANGES,
        }
    },
    "/submissions/{submission_id}/unpublish": {
        "post": {
            "operationId": "unpublishSubmission",
            "summary": "Take a submission off the leaderboard (team members)",
            "parameters": [SUBMISSION_ID],
            "responses": _responses(("200", "The submission.", _ref("Submission")), "401", "403", "404")
            | TOO_MANY_CHANGES,
        }
    },
    "/openapi.json": {
        "get": {
            "operationId": "getOpenApi",
            "summary": "This document",
            "security": PUBLIC,
            "responses": {"200": _json({"type": "object"}, "The OpenAPI 3.1 document.")},
        }
    },
}

DOCUMENT = {
    "openapi": "3.1.0",
    "info": {
        "title": "Holdout API",
        "version": VERSION,
        "description": (
            "Submit prediction files to blind-test benchmarks and read leaderboards. Authenticate with "
            "`Authorization: Bearer <token>` (tokens from the Account page or "
            "`flask --app wsgi tokens create EMAIL`). Errors are "
            '`{"error": "...", "details": [{"line": n, "message": "..."}]}`.'
        ),
    },
    "servers": [{"url": "/api/v1"}],
    "security": [{"bearer": []}],
    "paths": PATHS,
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": SCHEMAS,
        "responses": RESPONSES,
    },
}


def document() -> dict:
    """A copy, so no caller can alter the served document."""
    return copy.deepcopy(DOCUMENT)


def swagger_ui_document() -> dict:
    """The same document in OpenAPI 3.0's spelling, for the API docs page: its Swagger UI (4.15.5, the pinned
    swagger-ui-bundle) reads 3.0 and refuses 3.1. Nothing is added or left out: a type that may be null, written
    in 3.1 as a list of types (`["integer", "null"]`) or a `oneOf` with `{"type": "null"}`, becomes the type with
    `nullable: true`; a value that is always null (a reference row's rank), `nullable` with `enum: [null]`."""
    converted = _as_openapi_30(document())
    converted["openapi"] = "3.0.3"
    return converted


_ALWAYS_NULL = {"nullable": True, "enum": [None]}


def _as_openapi_30(node):
    if isinstance(node, list):
        return [_as_openapi_30(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _as_openapi_30(value) for key, value in node.items()}
    kind = out.get("type")
    if isinstance(kind, list):  # ["integer", "null"]; every list in this document names one type besides null
        (single,) = [name for name in kind if name != "null"]
        out["type"] = single
        if "null" in kind:
            out["nullable"] = True
    elif kind == "null":
        del out["type"]
        out.update(_ALWAYS_NULL)
    options = out.get("oneOf")
    if isinstance(options, list) and _ALWAYS_NULL in options:
        rest = [option for option in options if option != _ALWAYS_NULL]
        del out["oneOf"]
        out.update({"oneOf": rest} if len(rest) > 1 else {"allOf": rest})
        out["nullable"] = True
    return out
