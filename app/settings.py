"""The settings the services need, as one typed object: services ask `current()` for it instead of reading
the Flask config mapping themselves, so a use case names what it depends on and can be handed other values.

Built from the running application's configuration on each call (cheap: a few lookups), so a setting changed
on a live app (as tests do) is seen at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flask import current_app

from app.config import DEFAULT_STORAGE_TIMEOUT, DEMO_SITE_URL, S3Location, site_url, upload_storage

DEFAULT_PROBE_DISTANCE = 0.01
DEFAULT_MAX_TEAMS_PER_ACCOUNT = 3
DEFAULT_MAX_TEAMS_CREATED_PER_DAY = 2


@dataclass(frozen=True)
class Settings:
    hidden_labels_dir: Path  # the gold files, readable by the server alone
    submissions_dir: Path  # the folder of original upload files (STORAGE_URL's folder, else SUBMISSIONS_DIR)
    max_upload_mb: int  # the largest prediction file accepted, in MiB
    # A submission on a hidden split closer than this share of examples to an earlier one is flagged.
    probe_distance: float = DEFAULT_PROBE_DISTANCE
    # Teams an account may belong to (create or join), and create in any 24 hours.
    max_teams_per_account: int = DEFAULT_MAX_TEAMS_PER_ACCOUNT
    max_teams_created_per_day: int = DEFAULT_MAX_TEAMS_CREATED_PER_DAY
    # Jobs (app/services/jobs): who runs them ("inline": the process that queued them; "procrastinate":
    # `flask worker` processes), how often one is tried, how long one may run, and when a waiting or running
    # job counts as stuck on the console and in /healthz.
    job_queue: str = "inline"
    job_max_attempts: int = 4
    job_time_limit: float = 600.0
    job_stuck_after: float = 300.0
    job_heartbeat: float = 5.0  # a running job's heartbeat; six missed, and its worker is taken for dead
    # A board is rebuilt at most once in this many seconds (changes meanwhile wait, folded into one rebuild).
    board_rebuild_seconds: float = 5.0
    # Original uploads in an S3 bucket instead of the folder (STORAGE_URL=s3://bucket/prefix).
    upload_bucket: S3Location | None = None
    # Seconds an upload waits for the store to confirm its original, retries included (STORAGE_TIMEOUT).
    storage_timeout: float = DEFAULT_STORAGE_TIMEOUT
    # Mail: the SMTP server (None: mail is written to the log) and the base of the links it carries.
    mail_server: str | None = None
    mail_timeout: float = 30.0
    mail_options: tuple = ()  # the MAIL_* settings, as Flask-Mail reads them (pairs)
    site_url: str = DEMO_SITE_URL
    secret_key: str = ""  # signs the links mailed to people (password resets, address checks, invitations)

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @classmethod
    def from_config(cls, config) -> Settings:
        """Raises ConfigError for a malformed STORAGE_URL, S3_ENDPOINT_URL or SITE_URL (create_app calls it at
        start-up)."""
        uploads = upload_storage(config)
        return cls(
            hidden_labels_dir=Path(config["HIDDEN_LABELS_DIR"]),
            submissions_dir=uploads if isinstance(uploads, Path) else Path(config["SUBMISSIONS_DIR"]),
            upload_bucket=uploads if isinstance(uploads, S3Location) else None,
            storage_timeout=float(config.get("STORAGE_TIMEOUT", DEFAULT_STORAGE_TIMEOUT)),
            max_upload_mb=int(config["MAX_UPLOAD_MB"]),
            probe_distance=float(config.get("PROBE_DISTANCE", DEFAULT_PROBE_DISTANCE)),
            max_teams_per_account=int(config.get("MAX_TEAMS_PER_ACCOUNT", DEFAULT_MAX_TEAMS_PER_ACCOUNT)),
            max_teams_created_per_day=int(config.get("MAX_TEAMS_CREATED_PER_DAY", DEFAULT_MAX_TEAMS_CREATED_PER_DAY)),
            job_queue=str(config.get("JOB_QUEUE") or "inline"),
            job_max_attempts=int(config.get("JOB_MAX_ATTEMPTS", 4)),
            job_time_limit=float(config.get("JOB_TIME_LIMIT", 600)),
            job_stuck_after=float(config.get("JOB_STUCK_AFTER", 300)),
            job_heartbeat=float(config.get("JOB_HEARTBEAT", 5)),
            board_rebuild_seconds=float(config.get("BOARD_REBUILD_SECONDS", 5)),
            mail_server=config.get("MAIL_SERVER") or None,
            mail_timeout=float(config.get("MAIL_TIMEOUT", 30)),
            mail_options=tuple((key, value) for key, value in config.items() if key.startswith("MAIL_")),
            site_url=site_url(config),
            secret_key=str(config.get("SECRET_KEY") or ""),
        )


def current() -> Settings:
    """The settings of the application whose context is active (every use case runs in one)."""
    return Settings.from_config(current_app.config)


# The settings page of the documentation (docs/deployment/settings.md, filled in by docs/hooks.py): each
# variable, its default (read from Settings where it has a field, so the page cannot drift from the code) and
# what it does. (variables as written, Settings field or None, default as words where there is no field, meaning)
SETTINGS_DOCUMENTED: tuple[tuple[str, str | None, str, str], ...] = (
    (
        "`SECRET_KEY`",
        None,
        "none: the server refuses to start without it (except in tests and with `HOLDOUT_DEMO=1`)",
        "signs sessions",
    ),
    (
        "`DATABASE_URL`",
        None,
        "`sqlite:///instance/holdout.sqlite3`",
        "SQLAlchemy URL; `postgresql://user@host:port/db` works as written",
    ),
    (
        "`HIDDEN_LABELS_DIR`",
        None,
        "`hidden_labels/`",
        "where imported gold files are kept (mode 0600); never served",
    ),
    (
        "`SUBMISSIONS_DIR`",
        None,
        "`instance/submissions/`",
        "original uploads, gzip-compressed, named by sha256 (when `STORAGE_URL` is empty)",
    ),
    (
        "`STORAGE_URL`",
        None,
        "empty",
        (
            "where original uploads are kept: empty for `SUBMISSIONS_DIR`; a folder path or `file:///path` for that"
            " folder; `s3://bucket/prefix` for an S3 bucket, each under the key `prefix/<sha256[:2]>/<sha256>.gz` "
            "(the folder's gzip bytes). Anything else stops the server at start with a message naming the variable"
        ),
    ),
    (
        "`S3_ENDPOINT_URL`",
        None,
        "unset (AWS)",
        (
            "the `http://` or `https://` address of another S3 server (MinIO, SeaweedFS, Ceph); buckets are then "
            "addressed by path"
        ),
    ),
    (
        "`STORAGE_TIMEOUT`",
        "storage_timeout",
        "",
        (
            "seconds (0.5-25) an upload waits for the store (bucket or folder) to confirm its original, retries "
            "included, before it is answered 503 with `Retry-After: 30`; each S3 request's timeouts are cut to fit "
            "(two attempts, at most 3 s to connect). Raise it for large uploads over a slow link to the bucket; a "
            "request may wait about twice this in all (the write, then a check after its commit), so the ceiling "
            "keeps it inside gunicorn's 60 s"
        ),
    ),
    (
        "`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (`AWS_SESSION_TOKEN`)",
        None,
        "unset",
        (
            "the bucket's credentials, read by boto3 itself (or its other sources: `~/.aws/credentials`, an "
            "instance role); never logged"
        ),
    ),
    (
        "`AWS_DEFAULT_REGION` or `AWS_REGION`",
        None,
        "unset (`us-east-1`)",
        "the bucket's region",
    ),
    (
        "`MAX_UPLOAD_MB`",
        None,
        "`50`",
        "the largest prediction file accepted",
    ),
    (
        "`HOLDOUT_DEMO`",
        None,
        "unset",
        "`1` for a local demo: `make run` sets it (a generated `SECRET_KEY`, mail written to the log)",
    ),
    (
        "`LEADERBOARD_PAGE_TTL`",
        None,
        "`2`",
        (
            "seconds a leaderboard page for visitors without a session is reused by a worker without asking the "
            "database (`0`: never); logged-in visitors always see the board as it is, and a change is seen at once "
            "by the worker that made it; also the `max-age` of public reads (HTTP caching, see Production)"
        ),
    ),
    (
        "`PROBE_DISTANCE`",
        "probe_distance",
        "",
        (
            "a submission on a hidden split that differs from an earlier one (of its team, or of another team) on "
            "fewer than this share of examples is flagged as possible probing"
        ),
    ),
    (
        "`MAX_TEAMS_PER_ACCOUNT`",
        "max_teams_per_account",
        "",
        (
            "teams an account may belong to, created or joined (a whole number, at least 1); one more is refused "
            'with 409 naming them ("an account may belong to at most 3 teams; you belong to 3 (A, B, C)"), and an '
            "invite link refused so stays usable; leaving a team frees its place. The command line's `teams create "
            "--allow-over-cap` exceeds it on purpose (audited)"
        ),
    ),
    (
        "`MAX_TEAMS_CREATED_PER_DAY`",
        "max_teams_created_per_day",
        "",
        (
            "teams an account may create on the Teams page in any 24 hours (at least 1); one more is refused with "
            "429 naming them and when the next can be made. Teams a maintainer makes on the command line count "
            "against no one"
        ),
    ),
    (
        "`TRUSTED_HOSTS`",
        None,
        "`localhost,127.0.0.1` (or `SERVER_NAME` alone when that is set)",
        (
            "the `Host` names requests may carry, comma-separated (`.example.org` also accepts its subdomains); any"
            " other is answered 400, so no absolute URL (an invite link) is built from a forged `Host`"
        ),
    ),
    (
        "`SERVER_NAME`",
        None,
        "unset",
        "the public host name; absolute URLs are built from it",
    ),
    (
        "`SESSION_COOKIE_SECURE`",
        None,
        "off",
        "`1` (`true`, `yes`): session cookies are sent over HTTPS only (set it behind TLS, as in production)",
    ),
    (
        "`TRUSTED_PROXIES`",
        None,
        "`0`",
        "reverse proxies in front whose `X-Forwarded-*` headers are trusted (nginx in front: `1`)",
    ),
    (
        "`WEB_CONCURRENCY`",
        None,
        "2 × cores + 1, at most 12",
        "gunicorn workers a server runs (`gunicorn.conf.py`)",
    ),
    (
        "`METRICS_ALLOW`",
        None,
        "`127.0.0.0/8,::1`",
        "addresses and networks (comma-separated) that may read `/metrics`; empty: none. Others get 404",
    ),
    (
        "`METRICS_TOKEN`",
        None,
        "unset",
        "a bearer token that opens `/metrics` from anywhere (`Authorization: Bearer ...`); a wrong one gets 403",
    ),
    (
        "`PROMETHEUS_MULTIPROC_DIR`",
        None,
        "a private temporary folder",
        "where gunicorn's workers keep their metric samples (emptied when the server starts)",
    ),
    (
        "`LOG_FORMAT`",
        None,
        "`text`",
        "`json`: gunicorn's access log as one JSON object a line (see Production)",
    ),
    (
        "`JOB_QUEUE`",
        None,
        "`procrastinate` with PostgreSQL, `inline` with SQLite",
        (
            "who runs the jobs (a board's snapshot after a change, rescoring after a label correction or a new "
            "subset): `procrastinate`, `flask worker` processes (PostgreSQL only); `inline`, the process that "
            'queued them (see "Jobs and workers" under Production)'
        ),
    ),
    (
        "`JOB_MAX_ATTEMPTS`",
        "job_max_attempts",
        "",
        "tries of a job before it is given up as failed (retries wait 5 s, 20 s, 80 s, ... at most 10 min)",
    ),
    (
        "`JOB_TIME_LIMIT`",
        "job_time_limit",
        "",
        (
            "seconds (1-86,400) a job may run; it is stopped at its next check after that (between two chunks of "
            "its work) and retried"
        ),
    ),
    (
        "`JOB_STUCK_AFTER`",
        "job_stuck_after",
        "",
        (
            "seconds (1-86,400) after which a job still waiting or running is shown as stuck (console, `flask jobs "
            "list`, `/healthz`)"
        ),
    ),
    (
        "`JOB_HEARTBEAT`",
        "job_heartbeat",
        "",
        (
            "seconds between a running job's heartbeats; after six missed ones its worker is taken for dead and the"
            " job is run again"
        ),
    ),
    (
        "`BOARD_REBUILD_SECONDS`",
        "board_rebuild_seconds",
        "",
        (
            "seconds (0-3,600): a board is rebuilt at most once in this window; changes that come sooner after its "
            "last build wait for the window's end, folded into one rebuild, and readers meanwhile get the last "
            'board marked as updating (`0`: rebuilt after every change; see "Jobs and workers" under Production)'
        ),
    ),
    (
        "`MAIL_SERVER`",
        None,
        "unset",
        (
            "the SMTP server mail goes through (Flask-Mail); unset, every mail is written to the log instead "
            "(logger `holdout.mail`: `make run` prints reset and confirmation links there)"
        ),
    ),
    (
        "`MAIL_PORT`",
        None,
        "`25`",
        "its port",
    ),
    (
        "`MAIL_USE_TLS` / `MAIL_USE_SSL`",
        None,
        "off",
        (
            "STARTTLS after connecting / TLS from the start (`1`, `true`, `yes`); the server's certificate must be "
            "valid for `MAIL_SERVER` and signed by a CA the system trusts (`SSL_CERT_FILE` names another bundle, "
            "for a private CA), else nothing is sent, the login included, and the job is retried"
        ),
    ),
    (
        "`MAIL_USERNAME` / `MAIL_PASSWORD`",
        None,
        "unset",
        "the SMTP login, if the server wants one",
    ),
    (
        "`MAIL_DEFAULT_SENDER`",
        None,
        "`Holdout <noreply@localhost>`",
        "the From of every mail",
    ),
    (
        "`MAIL_TIMEOUT`",
        "mail_timeout",
        "",
        "seconds (1-600) an SMTP exchange may take before the job fails and is retried",
    ),
    (
        "`SITE_URL`",
        None,
        ("`https://SERVER_NAME`, else `http://127.0.0.1:8000` (`make run` sets where it serves: `http://HOST:PORT`)"),
        (
            "the site's address for links in mail (never a request's Host header); required once `MAIL_SERVER` is "
            "set without `SERVER_NAME`"
        ),
    ),
)


def _default_text(field: str) -> str:
    value = Settings.__dataclass_fields__[field].default
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"`{text}`"


def settings_table_markdown() -> str:
    """The settings as a Markdown table (variable, default, meaning), for the documentation site."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for names, field, default, meaning in SETTINGS_DOCUMENTED:
        lines.append(f"| {names} | {_default_text(field) if field else default} | {meaning} |")
    return "\n".join(lines) + "\n"
