"""Settings read from the environment, so one build runs anywhere."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent


class ConfigError(RuntimeError):
    """The deployment is misconfigured; the message says how to fix it."""


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from exc


def _at_least_one(name: str, default: int) -> int:
    value = _int(name, default)
    if value < 1:
        raise ConfigError(f"{name} must be a whole number of at least 1, got {os.environ.get(name)!r}")
    return value


def _number(name: str, default: float, low: float, high: float, what: str) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # also NaN and words
        raise ConfigError(f"{name} must be {what}, got {raw!r}")
    return value


def _share(name: str, default: float) -> float:
    return _number(name, default, 0, 1, "a number between 0 and 1")


def _seconds(name: str, default: float) -> float:
    return _number(name, default, 0, 3600, "a number of seconds between 0 and 3600")


def _hosts(name: str) -> list[str] | None:
    raw = os.environ.get(name, "")
    hosts = [host.strip() for host in raw.split(",") if host.strip()]
    if any("/" in host or " " in host for host in hosts):
        raise ConfigError(f"{name} must be host names separated by commas (no scheme or path), got {raw!r}")
    return hosts or None


def from_environment(instance_path: str) -> dict:
    """Build the Flask config mapping from environment variables."""
    instance = Path(instance_path)
    database_url = os.environ.get("DATABASE_URL") or f"sqlite:///{instance / 'holdout.sqlite3'}"
    # SQLAlchemy wants an explicit driver; accept the common postgres:// spellings as written.
    if database_url.startswith("postgres://"):
        database_url = "postgresql+psycopg://" + database_url[len("postgres://") :]
    elif database_url.startswith("postgresql://"):
        database_url = "postgresql+psycopg://" + database_url[len("postgresql://") :]
    max_upload_mb = _int("MAX_UPLOAD_MB", 50)
    return {
        "SECRET_KEY": os.environ.get("SECRET_KEY"),
        "SQLALCHEMY_DATABASE_URI": database_url,
        "HIDDEN_LABELS_DIR": os.environ.get("HIDDEN_LABELS_DIR") or str(ROOT / "hidden_labels"),
        "SUBMISSIONS_DIR": os.environ.get("SUBMISSIONS_DIR") or str(instance / "submissions"),
        "MAX_UPLOAD_MB": max_upload_mb,
        # A submission on a hidden split closer than this share of examples to an earlier one of its team
        # is flagged as possible probing.
        "PROBE_DISTANCE": _share("PROBE_DISTANCE", 0.01),
        # People, not teams, are what a blind test protects: an account belongs to at most this many teams
        # (creating or joining one), and creates at most this many in any 24 hours.
        "MAX_TEAMS_PER_ACCOUNT": _at_least_one("MAX_TEAMS_PER_ACCOUNT", 3),
        "MAX_TEAMS_CREATED_PER_DAY": _at_least_one("MAX_TEAMS_CREATED_PER_DAY", 2),
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": os.environ.get("SESSION_COOKIE_SECURE", "").lower() in {"1", "true", "yes"},
        "HOLDOUT_DEMO": os.environ.get("HOLDOUT_DEMO", "").lower() in {"1", "true", "yes"},
        # Reverse proxies in front of the app (nginx: 1) whose X-Forwarded-For/-Proto/-Host are trusted, so
        # the login throttle sees the client's address rather than the proxy's.
        "TRUSTED_PROXIES": _int("TRUSTED_PROXIES", 0),
        # A leaderboard page served to visitors without a session is reused for this long without asking
        # the database (0: never). Pages for logged-in users are always current.
        "LEADERBOARD_PAGE_TTL": _seconds("LEADERBOARD_PAGE_TTL", 2.0),
        # A board is rebuilt at most once in this many seconds: changes that come sooner after its last build
        # (publishing and withdrawing, over and over) wait for the window's end, folded into one rebuild, and
        # readers meanwhile get the last board marked as updating (0: rebuilt after every change).
        "BOARD_REBUILD_SECONDS": _seconds("BOARD_REBUILD_SECONDS", 5.0),
        # Who may read /metrics: these addresses or networks, or anyone sending this bearer token.
        "METRICS_ALLOW": networks("METRICS_ALLOW", os.environ.get("METRICS_ALLOW", DEFAULT_METRICS_ALLOW)),
        "METRICS_TOKEN": os.environ.get("METRICS_TOKEN") or None,
        # The Host names requests may carry (comma-separated; ".example.org" also accepts subdomains); any
        # other is answered 400. Unset: SERVER_NAME alone if set, else localhost and 127.0.0.1.
        "TRUSTED_HOSTS": _hosts("TRUSTED_HOSTS"),
        "SERVER_NAME": os.environ.get("SERVER_NAME") or None,
        # Heavy work (board snapshots, rescoring) is a job: run by `flask worker` processes on PostgreSQL
        # ("procrastinate"), by the process that queued it on SQLite ("inline"). Tried JOB_MAX_ATTEMPTS times
        # with backoff, stopped at its next check after JOB_TIME_LIMIT seconds, shown as stuck on the console
        # and in /healthz once waiting or running for JOB_STUCK_AFTER seconds.
        "JOB_QUEUE": _job_queue(database_url),
        "JOB_MAX_ATTEMPTS": _at_least_one("JOB_MAX_ATTEMPTS", 4),
        "JOB_TIME_LIMIT": _number("JOB_TIME_LIMIT", 600.0, 1, 86400, "a number of seconds between 1 and 86400"),
        "JOB_STUCK_AFTER": _number("JOB_STUCK_AFTER", 300.0, 1, 86400, "a number of seconds between 1 and 86400"),
        # A running job marks itself alive this often; after six missed beats its worker is taken for dead
        # and the job is run again.
        "JOB_HEARTBEAT": _number("JOB_HEARTBEAT", 5.0, 0.1, 600, "a number of seconds between 0.1 and 600"),
        # Where original uploads are kept (empty: SUBMISSIONS_DIR); checked by `upload_storage` at start-up.
        "STORAGE_URL": os.environ.get("STORAGE_URL", "").strip(),
        "S3_ENDPOINT_URL": os.environ.get("S3_ENDPOINT_URL", "").strip() or None,
        # How long an upload waits for the store (folder or bucket) to confirm its original, retries
        # included, before it is answered 503: a store that hangs holds neither a worker nor a lock. A request
        # may wait about twice this in all (the write, then the check after its commit), well inside gunicorn's
        # 60 s: hence the ceiling.
        "STORAGE_TIMEOUT": _number(
            "STORAGE_TIMEOUT", DEFAULT_STORAGE_TIMEOUT, 0.5, 25, "a number of seconds between 0.5 and 25"
        ),
        # boto3 reads AWS_DEFAULT_REGION itself but not AWS_REGION, which other S3 tools read: either works.
        # Credentials (AWS_ACCESS_KEY_ID, ...) are left to boto3 alone and never pass through the config.
        "S3_REGION": os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or None,
        # Mail (password resets, address checks, notifications) goes through this SMTP server; unset, each
        # mail is written to the log instead (the demo). Sent by jobs, never inside a request.
        "MAIL_SERVER": os.environ.get("MAIL_SERVER", "").strip() or None,
        "MAIL_PORT": _int("MAIL_PORT", 25),
        "MAIL_USE_TLS": _flag("MAIL_USE_TLS"),
        "MAIL_USE_SSL": _flag("MAIL_USE_SSL"),
        "MAIL_USERNAME": os.environ.get("MAIL_USERNAME") or None,
        "MAIL_PASSWORD": os.environ.get("MAIL_PASSWORD") or None,
        "MAIL_DEFAULT_SENDER": os.environ.get("MAIL_DEFAULT_SENDER") or "Holdout <noreply@localhost>",
        # Flask-Mail would otherwise not send at all in an app under TESTING: the tests' SMTP sink wants it all.
        "MAIL_SUPPRESS_SEND": False,
        "MAIL_TIMEOUT": _number("MAIL_TIMEOUT", 30.0, 1, 600, "a number of seconds between 1 and 600"),
        # The site's address as its users reach it, for links in mail (a request's Host header is never used:
        # it is the sender's to choose). Checked by `site_url` at start-up.
        "SITE_URL": os.environ.get("SITE_URL", "").strip() or None,
    }


def _flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw not in {"", "0", "1", "true", "false", "yes", "no"}:
        raise ConfigError(f"{name} must be 1/true/yes or 0/false/no, got {raw!r}")
    return raw in {"1", "true", "yes"}


DEMO_SITE_URL = "http://127.0.0.1:8000"  # where `make run` serves
DEFAULT_STORAGE_TIMEOUT = 10.0  # STORAGE_TIMEOUT: seconds an upload waits for the store of originals


def site_url(config) -> str:
    """The base of links in mail: SITE_URL, else https://SERVER_NAME, else (no MAIL_SERVER: mail goes to the
    log) the demo's address. Mail to real people with links to localhost would be useless: refused."""
    raw = (config.get("SITE_URL") or "").strip().rstrip("/")
    if raw:
        parts = urlsplit(raw)
        if parts.scheme not in {"http", "https"} or not parts.netloc or parts.query or parts.fragment:
            raise ConfigError(f"SITE_URL must be the site's address, like https://holdout.example.org; got {raw!r}")
        return raw
    if config.get("SERVER_NAME"):
        return f"https://{config['SERVER_NAME']}"
    if config.get("MAIL_SERVER"):
        raise ConfigError("MAIL_SERVER is set but SITE_URL is not: mailed links need the site's address")
    return DEMO_SITE_URL


JOB_QUEUES = ("inline", "procrastinate")


def _job_queue(database_url: str) -> str:
    raw = (os.environ.get("JOB_QUEUE") or "").strip().lower()
    if not raw:
        return "procrastinate" if database_url.startswith("postgresql") else "inline"
    if raw not in JOB_QUEUES:
        raise ConfigError(f"JOB_QUEUE must be one of {', '.join(JOB_QUEUES)}, got {raw!r}")
    if raw == "procrastinate" and not database_url.startswith("postgresql"):
        raise ConfigError("JOB_QUEUE=procrastinate needs PostgreSQL (DATABASE_URL=postgresql://...)")
    return raw


@dataclass(frozen=True)
class S3Location:
    """Original uploads kept as objects in an S3 bucket (STORAGE_URL=s3://bucket/prefix)."""

    bucket: str
    prefix: str  # without slashes at either end; "" for the bucket's top
    endpoint_url: str | None = None  # S3_ENDPOINT_URL: a server other than AWS's (MinIO, SeaweedFS, Ceph)
    region: str | None = None

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


# S3's rules for bucket names: 3-63 lowercase letters, digits, dots and hyphens, a letter or digit at each end.
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
STORAGE_URL_FORMS = "empty (SUBMISSIONS_DIR), a folder path, file:///path or s3://bucket/prefix"


def upload_storage(config: Mapping) -> Path | S3Location:
    """Where original uploads are kept: STORAGE_URL's folder or bucket, SUBMISSIONS_DIR when it is empty.
    ConfigError naming the variable for anything else (the value is not repeated when it may hold a secret)."""
    raw = (config.get("STORAGE_URL") or "").strip()
    endpoint = _endpoint_url(config.get("S3_ENDPOINT_URL"))
    if not raw:
        return Path(config["SUBMISSIONS_DIR"])
    shown = raw if "@" not in raw else "<hidden: it may hold credentials>"
    if "://" not in raw:
        if SCHEME.match(raw):  # "s3:bucket", "file:/x": a URL mistyped, not a folder named so
            raise ConfigError(f"STORAGE_URL must be {STORAGE_URL_FORMS}; got {shown!r}")
        return Path(raw)  # a plain path, as SUBMISSIONS_DIR takes it
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise ConfigError(f"STORAGE_URL must be {STORAGE_URL_FORMS}; got {shown!r}") from exc
    scheme = parts.scheme.lower()
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise ConfigError(f"STORAGE_URL must be {STORAGE_URL_FORMS}, without credentials or a query; got {shown!r}")
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"STORAGE_URL must name a local folder as file:///absolute/path; got {shown!r}")
        return Path(unquote(parts.path))
    if scheme == "s3":
        bucket = parts.netloc
        if not BUCKET_NAME.fullmatch(bucket) or ".." in bucket:
            raise ConfigError(
                "STORAGE_URL must name an S3 bucket as s3://bucket/prefix (the bucket 3-63 lowercase letters, "
                f"digits, dots and hyphens); got {shown!r}"
            )
        prefix = unquote(parts.path).strip("/")
        if prefix and any(part in ("", ".", "..") for part in prefix.split("/")):
            raise ConfigError(f"STORAGE_URL's prefix must not have empty, '.' or '..' parts; got {shown!r}")
        return S3Location(bucket, prefix, endpoint, config.get("S3_REGION") or None)
    raise ConfigError(f"STORAGE_URL must be {STORAGE_URL_FORMS}; got {shown!r}")


def _endpoint_url(raw: str | None) -> str | None:
    if not raw:
        return None
    shown = raw if "@" not in raw else "<hidden: it may hold credentials>"
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        raise ConfigError(f"S3_ENDPOINT_URL must be the http:// or https:// address of an S3 server; got {shown!r}")
    return raw.rstrip("/")


DEFAULT_METRICS_ALLOW = "127.0.0.0/8,::1"


def networks(name: str, raw: str) -> tuple:
    """A comma-separated list of addresses and networks (`10.0.0.0/8`); empty means none."""
    found = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            found.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise ConfigError(f"{name} must list IP addresses or networks separated by commas, got {item!r}") from exc
    return tuple(found)


def request_body_limit(max_upload_mb: int) -> int:
    """Werkzeug refuses bodies past this before they are read whole (413); a little slack for the
    multipart envelope and the form fields around the file itself."""
    return int(max_upload_mb) * 1024 * 1024 + 64 * 1024


def engine_options(database_url: str) -> dict:
    """SQLALCHEMY_ENGINE_OPTIONS for the database URL.

    PostgreSQL: test a pooled connection before handing it out (pool_pre_ping), so connections broken by
    a database restart or failover are replaced instead of failing a request, and give up connecting
    after a few seconds, so an unreachable database answers 503 quickly instead of hanging workers.
    """
    if database_url.startswith("postgresql"):
        return {"pool_pre_ping": True, "pool_recycle": 3600, "connect_args": {"connect_timeout": 5}}
    return {}
