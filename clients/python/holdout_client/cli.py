"""The `holdout` command: log in, submit prediction files, follow, publish and unpublish submissions, read
leaderboards (as a table or the API's JSON, or the server's own CSV, Markdown and LaTeX exports of the board).

Exit codes: 0 done; 1 the server refused the request (or could not be reached); 2 usage or file errors.
Results go to stdout, messages about problems to stderr.
"""

from __future__ import annotations

import argparse
import getpass
import ipaddress
import json
import os
import sys
import urllib.parse
from pathlib import Path

from holdout_client import __version__, config
from holdout_client.api import ApiError, Client, Progress
from holdout_client.config import UsageError
from holdout_client.output import (
    board_table,
    held_board,
    held_scores,
    scores_table,
    table,
    verdict_line,
)

OK, REFUSED, USAGE = 0, 1, 2


def _out(text: str = "") -> None:
    print(text, file=sys.stdout)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _client(need_token: bool = True) -> Client:
    url, token = config.settings()
    if need_token and not token:
        raise UsageError("no API token: run `holdout login --url URL` first (or set HOLDOUT_TOKEN)")
    return Client(url, token)


# --- commands ------------------------------------------------------------------------------------------


def _check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--url must be an http(s) address such as https://leaderboard.example.org, got {url!r}")
    if parts.query or parts.fragment:
        raise UsageError(f"--url must be the server's address without a query or fragment, got {url!r}")
    return url.strip().rstrip("/")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _read_token() -> str:
    token = os.environ.get("HOLDOUT_TOKEN", "").strip()
    if not token:
        if sys.stdin.isatty():
            token = getpass.getpass("API token (from the Account page): ").strip()
        else:
            token = sys.stdin.readline().strip()
    if not token:
        raise UsageError("no token given: pipe it to `holdout login` on stdin or set HOLDOUT_TOKEN")
    return token


def cmd_login(args) -> int:
    url = _check_url(args.url)
    token = _read_token()
    if urllib.parse.urlsplit(url).scheme == "http" and not _is_loopback(urllib.parse.urlsplit(url).hostname):
        _err(f"warning: {url} is plain HTTP; the token will cross the network unencrypted")
    me = Client(url, token).get("/me")
    path = config.save(url, token)
    teams = ", ".join(team["name"] for team in me.get("teams", [])) or "none yet"
    _out(f"logged in to {url} as {me['email']} (teams: {teams})")
    _out(f"the token is kept in {path} (readable by you only)")
    return OK


def _read_file(name: str) -> tuple[str, bytes]:
    path = Path(name)
    if not path.exists():
        raise UsageError(f"{name}: no such file")
    if not path.is_file():
        raise UsageError(f"{name}: not a regular file")
    try:
        return path.name, path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{name}: cannot read it: {exc.strerror or exc}") from exc


def _field_values(given: list[str] | None) -> dict[str, str]:
    """--field key=value (repeatable) as the API's `fields` object; the server checks each by its type."""
    values: dict[str, str] = {}
    for item in given or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--field {item!r}: expected key=value, e.g. --field zero_shot=yes")
        values[key.strip()] = value
    return values


def cmd_submit(args) -> int:
    file_name, data = _read_file(args.file)
    stated = _field_values(args.field)
    client = _client()
    fields = {"benchmark": args.benchmark, "split": args.split, "model_name": args.model}
    for name, value in (
        ("team", args.team),
        ("description", args.description),
        ("paper_url", args.paper_url),
        ("code_url", args.code_url),
    ):
        if value is not None:
            fields[name] = value
    if stated:
        fields["fields"] = json.dumps(stated)
    created = client.upload(
        fields, file_name, data, Progress(f"uploading {file_name}", len(data)), idempotency_key=args.idempotency_key
    )
    _out(
        f"submission {created['id']} scored: {created['benchmark']} {created['split']}, team {created['team']}, "
        f"model {created['model_name']}"
    )
    if verdict_line(created):
        _out(verdict_line(created))
    if created.get("scores"):
        _out(scores_table(created["scores"], created.get("scores_text")))
    else:
        _out(held_scores())
    left = (created.get("quota") or {}).get("left") or {}
    shown = [
        f"{n} {period}"
        for period, n in (
            ("today", left.get("today")),
            ("this month", left.get("month")),
            ("in total", left.get("total")),
        )
        if n is not None
    ]
    _out("submissions left: " + (", ".join(shown) if shown else "unlimited"))
    if args.publish:
        try:
            client.post_json(f"/submissions/{created['id']}/publish")
        except ApiError as exc:
            exc.message = f"submission {created['id']} is scored and stored but was not published: {exc.message}"
            raise
        _out(f"submission {created['id']} published")
    return OK


def cmd_submissions(args) -> int:
    listed = _client().get("/submissions")["submissions"]
    if args.json:
        _out(json.dumps(listed, indent=2))
        return OK
    if not listed:
        _out("no submissions yet")
        return OK
    _out(
        table(
            ["id", "benchmark", "split", "team", "model", "status", "submitted", "published"],
            [
                [
                    s["id"],
                    s["benchmark"],
                    s["split"],
                    s["team"],
                    s["model_name"],
                    s["status"],
                    s["submitted_at"],
                    "yes" if s["published"] else "no",
                ]
                for s in listed
            ],
        )
    )
    return OK


def _show(submission: dict) -> None:
    for label, key in (
        ("id", "id"),
        ("benchmark", "benchmark"),
        ("split", "split"),
        ("team", "team"),
        ("model", "model_name"),
        ("status", "status"),
        ("submitted", "submitted_at"),
        ("published", "published_at"),
        ("description", "description"),
        ("paper", "paper_url"),
        ("code", "code_url"),
        *((key, f"fields:{key}") for key in submission.get("fields") or {}),
        ("anonymous", "anonymous"),
        ("file sha256", "sha256"),
        ("file size", "size"),
    ):
        value = submission["fields"][key[7:]] if key.startswith("fields:") else submission.get(key)
        if value is True or value is False:
            value = "yes" if value else "no"
        if value not in (None, ""):
            _out(f"{label + ':':13} {value}")
    if verdict_line(submission):
        _out(verdict_line(submission))
    if submission.get("scores"):
        _out(scores_table(submission["scores"], submission.get("scores_text")))
    elif submission.get("status") == "scored":
        _out(held_scores())
    for problem in submission.get("errors") or []:
        _out(problem.get("message", ""))


def cmd_show(args) -> int:
    submission = _client().get(f"/submissions/{args.id}")
    if args.json:
        _out(json.dumps(submission, indent=2))
    else:
        _show(submission)
    return OK


def cmd_publish(args) -> int:
    body = {
        name: value
        for name, value in (
            ("description", args.description),
            ("paper_url", args.paper_url),
            ("code_url", args.code_url),
        )
        if value is not None
    }
    stated = _field_values(args.field)
    if stated:
        body["fields"] = stated
    submission = _client().post_json(f"/submissions/{args.id}/publish", body)
    _out(f"submission {submission['id']} published on {submission['benchmark']} {submission['split']}")
    return OK


def cmd_unpublish(args) -> int:
    submission = _client().post_json(f"/submissions/{args.id}/unpublish")
    _out(f"submission {submission['id']} unpublished: no longer on {submission['benchmark']} {submission['split']}")
    return OK


EXPORTS = {"csv": "csv", "markdown": "md", "latex": "tex"}  # formats the server writes itself, as its board's export


def _write_bytes(data: bytes) -> None:
    """Bytes to stdout unchanged: no newline translation or re-encoding (the CSV's lines end in CRLF)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def cmd_leaderboard(args) -> int:
    path = f"/leaderboards/{urllib.parse.quote(args.benchmark, safe='')}"
    if args.split:
        path += f"/{urllib.parse.quote(args.split, safe='')}"
    if args.columns and args.format not in EXPORTS:
        raise UsageError("--columns applies to --format csv, markdown and latex (the server's exports of the board)")
    query = [
        *((("view", args.view),) if args.view else ()),
        *((("track", args.track),) if args.track else ()),
        *(("where", condition) for condition in args.where or ()),
    ]
    client = _client(need_token=False)
    board = client.get(path, query)  # also names the landing split when none was given
    if args.format == "json":
        _out(json.dumps(board, indent=2))
    elif args.format == "table":
        _out(board_table(board))
    else:
        # The board's own export, byte for byte: one writer (the server's) for the header, figures, intervals,
        # rank intervals, reference rows, quoting and escaping, so the file equals the web's download.
        benchmark, split = (urllib.parse.quote(board[key], safe="") for key in ("benchmark", "split"))
        pairs = [*query, *(("columns", key) for key in args.columns or ())]
        _write_bytes(client.get_export(f"/leaderboards/{benchmark}/{split}/export.{EXPORTS[args.format]}", pairs))
    held = held_board(board)
    if held is not None and args.format != "table":  # the table says so itself
        _err(held)
    return OK


# --- the parser ----------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="holdout", description="Submit to a Holdout leaderboard server.")
    top.add_argument("--version", action="version", version=f"holdout-client {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    login = sub.add_parser(
        "login",
        help="store the server's address and your API token",
        description="The token is read from HOLDOUT_TOKEN or stdin (a prompt on a terminal), "
        "checked with the server, and kept in your config directory (mode 0600).",
    )
    login.add_argument("--url", required=True, help="the server, e.g. https://leaderboard.example.org")
    login.set_defaults(run=cmd_login)

    submit = sub.add_parser("submit", help="upload a prediction file")
    submit.add_argument("benchmark")
    submit.add_argument("split")
    submit.add_argument("file")
    submit.add_argument("--model", required=True, help="the model's name on the leaderboard")
    submit.add_argument("--team", help="team name or id (needed if you are in several teams)")
    submit.add_argument("--description")
    submit.add_argument("--paper-url")
    submit.add_argument("--code-url")
    submit.add_argument(
        "--field",
        action="append",
        metavar="KEY=VALUE",
        help="an entry field of the benchmark (repeatable), e.g. --field zero_shot=yes --field parameters=7000000000",
    )
    submit.add_argument(
        "--idempotency-key",
        help="a key of your own for this upload (default: a new random one); running the command again with "
        "the same key stores nothing new and shows the first upload's result",
    )
    submit.add_argument(
        "--publish", action="store_true", help="publish it at once (needs a description or a paper URL)"
    )
    submit.set_defaults(run=cmd_submit)

    listing = sub.add_parser("submissions", help="your teams' submissions, newest first")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=cmd_submissions)

    show = sub.add_parser("show", help="one submission: scores, or the problems of a rejected file")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=cmd_show)

    publish = sub.add_parser("publish", help="show a scored submission on the leaderboard")
    publish.add_argument("id", type=int)
    publish.add_argument("--description")
    publish.add_argument("--paper-url")
    publish.add_argument("--code-url")
    publish.add_argument(
        "--field",
        action="append",
        metavar="KEY=VALUE",
        help="an entry field of the benchmark (repeatable); a published entry's fields change only once unpublished",
    )
    publish.set_defaults(run=cmd_publish)

    unpublish = sub.add_parser("unpublish", help="take a published submission off the leaderboard")
    unpublish.add_argument("id", type=int)
    unpublish.set_defaults(run=cmd_unpublish)

    board = sub.add_parser(
        "leaderboard",
        help="a leaderboard (no login needed)",
        description="Scores are written as the board writes them (its columns and decimals). csv, markdown and "
        "latex print the server's own export of the board, byte for byte as the web's download (CSV; a Markdown "
        "table; a LaTeX table float for a paper).",
    )
    board.add_argument("benchmark")
    board.add_argument("split", nargs="?", help="default: the benchmark's landing split, as on its page")
    board.add_argument("--view", choices=["teams"], help="teams: one row per team")
    board.add_argument(
        "--track",
        metavar="NAME",
        help="a named track of the benchmark (e.g. zero-shot, or verified): its entries alone, ranked among themselves",
    )
    board.add_argument(
        "--where",
        action="append",
        metavar="COND",
        help="a condition on an entry field, field:value or field<=N (e.g. parameters<=1e9); repeat it for several: "
        "the entries meeting them all, ranked among themselves",
    )
    board.add_argument("--format", choices=["table", "csv", "json", "markdown", "latex"], default="table")
    board.add_argument(
        "--columns",
        action="append",
        metavar="KEY",
        help="a column of the export (csv, markdown, latex) as the board's chooser names it, e.g. all:accuracy or "
        "balanced:accuracy; repeat it for several, in order (default: the board's columns)",
    )
    board.set_defaults(run=cmd_leaderboard)
    return top


def _report(exc: ApiError) -> None:
    if exc.status is None:
        _err(f"error: {exc.message}")
        return
    if exc.status == 401:
        _err(f"refused: {exc.message}; run `holdout login --url URL` with a valid token")
        return
    if exc.status == 429 and "retry_at" in exc.body:  # a quota's answer; a publication limit's has none
        _err(f"over quota: {exc.message}")
        retry_at = exc.body.get("retry_at")
        _err(f"next slot: {retry_at}" if retry_at else "next slot: none, the split's total is used up")
        return
    if exc.status == 422 and exc.details:
        _err(f"rejected: {exc.message}")
        for problem in exc.details:  # one a line, as the server names them
            _err(str(problem.get("message", problem)) if isinstance(problem, dict) else str(problem))
        return
    _err(f"refused (HTTP {exc.status}): {exc.message}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # usage errors exit with 2
    try:
        return args.run(args)
    except UsageError as exc:
        _err(f"holdout: {exc}")
        return USAGE
    except ApiError as exc:
        _report(exc)
        return REFUSED
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:  # `holdout leaderboard ... | head`
        return OK
