"""What a request body may be, set before anything reads it: its size by route (an upload's cap on the few
routes that take a file, a small one everywhere else), the size of one text field of a form and the number
of its parts, and how deep a JSON body may nest.

Werkzeug enforces the sizes while it reads (a Content-Length over the limit is refused before a byte is
read; a chunked body as soon as it passes it), so a body is never held whole past its route's limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, Request, current_app, request
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge

# Any body but an upload: every form and JSON body of the site and the API. The longest is a publish
# request: a 5,000-character description and two 2,000-character URLs, under 40 KB even as JSON escapes.
BODY_LIMIT = 128 * 1024
# One text field of a form (an upload's form included), and a urlencoded body as a whole (werkzeug's rule).
FIELD_LIMIT = BODY_LIMIT
# Werkzeug stops parsing past this many parts; the service's own check then says a form has at most 20.
PARSER_PART_LIMIT = 1000
# No JSON body of the API nests deeper than 2; the parser's own recursion limit is near 1,000 and ends in a
# RecursionError, not a ValueError.
JSON_DEPTH_LIMIT = 32

View = TypeVar("View", bound=Callable[..., Any])


def request_body_limit(max_upload_mb: int) -> int:
    """The upload cap (MAX_CONTENT_LENGTH): werkzeug refuses bodies past this before they are read whole
    (413); a little slack for the multipart envelope and the form fields around the file itself."""
    return int(max_upload_mb) * 1024 * 1024 + 64 * 1024


def accepts_upload(view: View) -> View:
    """Marks a view whose POST carries a file: its body may reach the upload cap (MAX_CONTENT_LENGTH)."""
    view.accepts_upload = True  # type: ignore[attr-defined]
    return view


def is_upload_route() -> bool:
    view = current_app.view_functions.get(request.endpoint or "")
    return bool(getattr(view, "accepts_upload", False))


def apply_limits() -> None:
    """Before any hook reads the body (the text checks and CSRF run after this one)."""
    upload_cap = current_app.config["MAX_CONTENT_LENGTH"]
    upload = is_upload_route()
    request.max_content_length = upload_cap if upload else min(BODY_LIMIT, upload_cap)
    request.max_form_memory_size = FIELD_LIMIT
    request.max_form_parts = PARSER_PART_LIMIT
    unsized = request.content_length is None and request.method in ("POST", "PUT", "PATCH", "DELETE")
    # A body without a Content-Length (chunked): werkzeug cuts a single read short at the limit without a
    # word, so read it here, no further than the limit, and refuse one that reaches it. The form and JSON
    # parsers then read this copy. (An upload's multipart parser reads in pieces and does refuse.)
    if unsized and not upload and len(request.get_data(cache=True, parse_form_data=False)) >= BODY_LIMIT:
        raise RequestEntityTooLarge()


def refusal(cap_mb: int) -> str:
    """Why a 413 was given: the body over its route's limit, or (a body within it) a form's field or parts."""
    limit = request.max_content_length
    length = request.content_length
    if is_upload_route():
        if length is None or limit is None or length > limit:
            return f"The upload is larger than this server accepts ({cap_mb} MB)."
        return (
            f"A text field of this form is over {FIELD_LIMIT // 1024} KB, or the form has more than "
            f"{PARSER_PART_LIMIT} parts: a field holds at most {FIELD_LIMIT // 1024} KB and a form at most 20 parts."
        )
    return (
        f"The request body is larger than this address accepts ({BODY_LIMIT // 1024} KB); only a file upload "
        "may be larger."
    )


class JsonTooDeep(BadRequest):
    description = f"The JSON body nests deeper than {JSON_DEPTH_LIMIT} levels, which no request needs."


def _depth_within(value: object, limit: int) -> bool:
    # Iterative, so that checking a deep value cannot itself exhaust the stack.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return False
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


class LimitedRequest(Request):
    """Flask's request with a JSON body refused (400) when it nests too deep, silently or not: such a body
    is hostile, and the parser would otherwise fail with a RecursionError (a 500)."""

    def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any:
        try:
            value = super().get_json(force=force, silent=silent, cache=cache)
        except RecursionError:
            raise JsonTooDeep() from None
        if not _depth_within(value, JSON_DEPTH_LIMIT):
            raise JsonTooDeep()
        return value


def init_app(app: Flask) -> None:
    app.request_class = LimitedRequest
    app.before_request(apply_limits)
