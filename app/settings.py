"""The settings, as one typed object: each is a field of `Settings` with its environment variable, its one
default, its check and what it does, written once. The environment is read into it at start-up (a bad value
stops the app with a ConfigError naming the variable), Flask's app.config is filled from it, and the
services ask `current()` for it instead of reading the config mapping, so a use case names what it depends
on. `current()` is built from the running app's config on each call (a few lookups), so a setting changed on
a live app (as tests do) is seen at once. `settings_table_markdown()` renders the fields' docs for the
deployment documentation.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from flask import current_app

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INSTANCE = ROOT / "instance"  # Flask's instance folder for this checkout
DEMO_SITE_URL = "http://127.0.0.1:8000"  # where `make run` serves
DEFAULT_STORAGE_TIMEOUT = 10.0  # STORAGE_TIMEOUT: also the S3 client's budget when it is handed none
# Set on app.config as they are: no deployment needs another value.
FIXED = {
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
    # Flask-Mail would otherwise not send at all in an app under TESTING: the tests' SMTP sink wants it all.
    "MAIL_SUPPRESS_SEND": False,
}


class ConfigError(RuntimeError):
    """The deployment is misconfigured; the message says how to fix it."""


# --- readers: an environment variable's text -> its value, or ConfigError naming the variable --------------


@dataclass(frozen=True)
class Reader:
    parse: Callable[[str, str], Any]  # (name, text) -> value; None: as if unset (the default)
    coerce: Callable[[Any], Any] = lambda value: value  # a value put on app.config by code -> the field's type


def _whole_number(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from exc


def _positive_number(name: str, raw: str) -> int:
    value = _whole_number(name, raw)
    if value < 1:
        raise ConfigError(f"{name} must be a whole number of at least 1, got {raw!r}")
    return value


def _between(low: float, high: float, what: str) -> Reader:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not low <= value <= high:  # also NaN and words
            raise ConfigError(f"{name} must be {what}, got {raw!r}")
        return value

    return Reader(parse, float)


def _seconds(low: float, high: float) -> Reader:
    return _between(low, high, f"a number of seconds between {low:g} and {high:g}")


def _text(_name: str, raw: str) -> str:
    return raw


def _stripped(_name: str, raw: str) -> str | None:
    return raw.strip() or None


def _switch(_name: str, raw: str) -> bool:
    return raw.lower() in {"1", "true", "yes"}  # anything else is off


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in {"", "0", "1", "true", "false", "yes", "no"}:
        raise ConfigError(f"{name} must be 1/true/yes or 0/false/no, got {value!r}")
    return value in {"1", "true", "yes"}


def _hosts(name: str, raw: str) -> list[str] | None:
    hosts = [host.strip() for host in raw.split(",") if host.strip()]
    if any("/" in host or " " in host for host in hosts):
        raise ConfigError(f"{name} must be host names separated by commas (no scheme or path), got {raw!r}")
    return hosts or None


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


def _database_url(_name: str, raw: str) -> str:
    # SQLAlchemy wants an explicit driver; accept the common postgres:// spellings as written.
    for spelling in ("postgres://", "postgresql://"):
        if raw.startswith(spelling):
            return "postgresql+psycopg://" + raw[len(spelling) :]
    return raw


JOB_QUEUES = ("inline", "procrastinate")


def _job_queue(name: str, raw: str) -> str | None:
    value = raw.strip().lower()
    if value and value not in JOB_QUEUES:
        raise ConfigError(f"{name} must be one of {', '.join(JOB_QUEUES)}, got {value!r}")
    return value or None


TEXT, STRIPPED = Reader(_text), Reader(_stripped)
WHOLE, POSITIVE = Reader(_whole_number, int), Reader(_positive_number, int)
SWITCH, FLAG = Reader(_switch, bool), Reader(_flag, bool)
PATH = Reader(lambda _name, raw: Path(raw), Path)


def setting(
    env: str | tuple[str, ...],
    doc: str,
    reader: Reader,
    default: Any = None,
    *,
    key: str | None = None,
    derived: Callable[[Path, dict], Any] | None = None,
    shown: str | None = None,
    empty_is_unset: bool = True,
) -> Any:
    """A field of Settings read from `env` (the first of several names that is set), kept on app.config as
    `key` (the variable's name unless said). `derived(instance folder, values read before)` gives a default
    that depends on them, and the field's default is what it gives for this checkout's instance folder."""
    names = (env,) if isinstance(env, str) else env
    if derived is not None:
        default = derived(DEFAULT_INSTANCE, {})
    metadata = {
        "env": names,
        "key": key or names[0],
        "doc": doc,
        "reader": reader,
        "derived": derived,
        "shown": shown,
        "empty_is_unset": empty_is_unset,
    }
    if isinstance(default, (list, dict)):
        raise TypeError("a setting's default must not be mutable")
    return field(default=default, metadata=metadata)


def _default_job_queue(_instance: Path, values: dict) -> str:
    return "procrastinate" if values.get("database_url", "").startswith("postgresql") else "inline"


# --- the settings ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    secret_key: str = setting(
        "SECRET_KEY",
        "Signs sessions, CSRF tokens and mailed links (password resets, address checks, invitations). Required "
        "unless HOLDOUT_DEMO is set: a long random value.",
        TEXT,
        "",
        shown="none (required)",
    )
    database_url: str = setting(
        "DATABASE_URL",
        "The database: `postgresql://user:password@host/name` (postgres:// is accepted) or `sqlite:///path`.",
        Reader(_database_url),
        key="SQLALCHEMY_DATABASE_URI",
        derived=lambda instance, _values: f"sqlite:///{instance / 'holdout.sqlite3'}",
        shown="SQLite in the instance folder (instance/holdout.sqlite3)",
    )
    hidden_labels_dir: Path = setting(
        "HIDDEN_LABELS_DIR",
        "The gold (label) files, readable by the server alone; never inside a served folder.",
        PATH,
        ROOT / "hidden_labels",
        shown="hidden_labels/ in the checkout",
    )
    submissions_dir: Path = setting(
        "SUBMISSIONS_DIR",
        "The folder of original uploads when STORAGE_URL is empty.",
        PATH,
        derived=lambda instance, _values: instance / "submissions",
        shown="instance/submissions",
    )
    max_upload_mb: int = setting("MAX_UPLOAD_MB", "The largest prediction file accepted, in MiB.", WHOLE, 50)
    probe_distance: float = setting(
        "PROBE_DISTANCE",
        "A submission on a hidden split closer than this share of examples to an earlier one of its team is "
        "flagged as possible probing.",
        _between(0, 1, "a number between 0 and 1"),
        0.01,
    )
    max_teams_per_account: int = setting(
        "MAX_TEAMS_PER_ACCOUNT",
        "People, not teams, are what a blind test protects: the teams an account may belong to (creating or "
        "joining one).",
        POSITIVE,
        3,
    )
    max_teams_created_per_day: int = setting(
        "MAX_TEAMS_CREATED_PER_DAY", "The teams an account may create in any 24 hours.", POSITIVE, 2
    )
    session_cookie_secure: bool = setting(
        "SESSION_COOKIE_SECURE",
        "Send the session cookie over HTTPS only (1/true/yes): set it in production.",
        SWITCH,
        False,
    )
    holdout_demo: bool = setting(
        "HOLDOUT_DEMO",
        "The local demo (1/true/yes): without SECRET_KEY, a key kept in the instance folder is used.",
        SWITCH,
        False,
    )
    trusted_proxies: int = setting(
        "TRUSTED_PROXIES",
        "Reverse proxies in front of the app (nginx: 1) whose X-Forwarded-For/-Proto/-Host are trusted, so the "
        "login throttle sees the client's address rather than the proxy's.",
        WHOLE,
        0,
    )
    leaderboard_page_ttl: float = setting(
        "LEADERBOARD_PAGE_TTL",
        "Seconds a leaderboard page served to visitors without a session is reused without asking the database "
        "(0: never); pages for logged-in users are always current.",
        _seconds(0, 3600),
        2.0,
    )
    board_rebuild_seconds: float = setting(
        "BOARD_REBUILD_SECONDS",
        "A board is rebuilt at most once in this many seconds: changes that come sooner after its last build wait "
        "for the window's end, folded into one rebuild, and readers meanwhile get the last board marked as "
        "updating (0: rebuilt after every change).",
        _seconds(0, 3600),
        5.0,
    )
    metrics_allow: tuple = setting(
        "METRICS_ALLOW",
        "Who may read /metrics: these addresses or networks, comma-separated (empty: nobody but METRICS_TOKEN).",
        Reader(networks),
        networks("METRICS_ALLOW", "127.0.0.0/8,::1"),
        shown="`127.0.0.0/8,::1`",
        empty_is_unset=False,
    )
    metrics_token: str | None = setting(
        "METRICS_TOKEN", "Anyone sending this bearer token may read /metrics too.", TEXT
    )
    trusted_hosts: list[str] | None = setting(
        "TRUSTED_HOSTS",
        "The Host names requests may carry (comma-separated; `.example.org` also accepts subdomains); any other is "
        "answered 400. Unset: SERVER_NAME alone if set, else localhost and 127.0.0.1.",
        Reader(_hosts),
    )
    server_name: str | None = setting(
        "SERVER_NAME", "The site's host name (and port), as Flask builds URLs from it.", TEXT
    )
    job_queue: str = setting(
        "JOB_QUEUE",
        "Who runs heavy work (board snapshots, rescoring, mail): `procrastinate`, the `flask worker` processes "
        "(PostgreSQL only), or `inline`, the process that queued it.",
        Reader(_job_queue),
        derived=_default_job_queue,
        shown="procrastinate on PostgreSQL, inline on SQLite",
    )
    job_max_attempts: int = setting("JOB_MAX_ATTEMPTS", "How often a job is tried, with backoff.", POSITIVE, 4)
    job_time_limit: float = setting(
        "JOB_TIME_LIMIT", "A job is stopped at its next check after this many seconds.", _seconds(1, 86400), 600.0
    )
    job_stuck_after: float = setting(
        "JOB_STUCK_AFTER",
        "A job waiting or running this many seconds is shown as stuck on the console and in /healthz.",
        _seconds(1, 86400),
        300.0,
    )
    job_heartbeat: float = setting(
        "JOB_HEARTBEAT",
        "A running job marks itself alive this often (seconds); after six missed beats its worker is taken for "
        "dead and the job is run again.",
        _seconds(0.1, 600),
        5.0,
    )
    storage_url: str = setting(
        "STORAGE_URL",
        "Where original uploads are kept: empty (SUBMISSIONS_DIR), a folder path, file:///path or s3://bucket/prefix.",
        STRIPPED,
        "",
    )
    s3_endpoint_url: str | None = setting(
        "S3_ENDPOINT_URL", "An S3 server other than AWS's (MinIO, SeaweedFS, Ceph): its http(s):// address.", STRIPPED
    )
    storage_timeout: float = setting(
        "STORAGE_TIMEOUT",
        "Seconds an upload waits for the store (folder or bucket) to confirm its original, retries included, "
        "before it is answered 503. A request may wait about twice this in all (the write, then the check after "
        "its commit), well inside gunicorn's 60 s: hence the ceiling.",
        _seconds(0.5, 25),
        DEFAULT_STORAGE_TIMEOUT,
    )
    # Credentials (AWS_ACCESS_KEY_ID, ...) are left to boto3 alone and never pass through the settings.
    s3_region: str | None = setting(
        ("AWS_DEFAULT_REGION", "AWS_REGION"),
        "The bucket's region. boto3 reads AWS_DEFAULT_REGION itself but not AWS_REGION, which other S3 tools "
        "read: either works.",
        TEXT,
        key="S3_REGION",
    )
    mail_server: str | None = setting(
        "MAIL_SERVER",
        "The SMTP server for mail (password resets, address checks, notifications), sent by jobs, never inside a "
        "request; unset, each mail is written to the log instead (the demo).",
        STRIPPED,
    )
    mail_port: int = setting("MAIL_PORT", "The SMTP server's port.", WHOLE, 25)
    mail_use_tls: bool = setting("MAIL_USE_TLS", "STARTTLS to the SMTP server (1/true/yes or 0/false/no).", FLAG, False)
    mail_use_ssl: bool = setting(
        "MAIL_USE_SSL", "SMTP over TLS from the start (1/true/yes or 0/false/no).", FLAG, False
    )
    mail_username: str | None = setting("MAIL_USERNAME", "The SMTP login.", TEXT)
    mail_password: str | None = setting("MAIL_PASSWORD", "The SMTP password.", TEXT)
    mail_default_sender: str = setting(
        "MAIL_DEFAULT_SENDER", "The From of every mail.", TEXT, "Holdout <noreply@localhost>"
    )
    mail_timeout: float = setting("MAIL_TIMEOUT", "Seconds a mail waits for the SMTP server.", _seconds(1, 600), 30.0)
    site_url: str | None = setting(
        "SITE_URL",
        "The site's address as its users reach it, for links in mail (a request's Host header is never used: it is "
        "the sender's to choose). Unset: https://SERVER_NAME, else (no MAIL_SERVER) the demo's address.",
        STRIPPED,
        shown=f"https://SERVER_NAME, else {DEMO_SITE_URL}",
    )

    @classmethod
    def from_environment(cls, instance_path: str | Path, environ: Mapping[str, str] = os.environ) -> Settings:
        """Each setting read from its environment variable, or its default; ConfigError names a bad one."""
        instance = Path(instance_path)
        values: dict[str, Any] = {}
        for item in _FIELDS:
            meta = item.metadata
            raw = next((environ[name] for name in meta["env"] if environ.get(name)), None)
            if raw is None and not meta["empty_is_unset"]:
                raw = next((environ[name] for name in meta["env"] if name in environ), None)
            value = meta["reader"].parse(meta["env"][0], raw) if raw is not None else None
            if value is None:
                value = meta["derived"](instance, values) if meta["derived"] else item.default
            values[item.name] = value
        if values["job_queue"] == "procrastinate" and not values["database_url"].startswith("postgresql"):
            raise ConfigError("JOB_QUEUE=procrastinate needs PostgreSQL (DATABASE_URL=postgresql://...)")
        return cls(**values)

    @classmethod
    def from_config(cls, config: Mapping) -> Settings:
        """The settings an app's config holds now (filled from the environment at start-up, perhaps changed
        since, by a test or a deployment's own config); a setting it lacks takes its default."""
        values: dict[str, Any] = {}
        for item in _FIELDS:
            value = config.get(item.metadata["key"], item.default)
            values[item.name] = item.metadata["reader"].coerce(value) if value is not None else None
        return cls(**values)

    def flask_config(self) -> dict:
        """What Flask's app.config is filled with: each setting under its key (folders as text, as Flask and
        its extensions take them), and the fixed ones."""
        config = {
            item.metadata["key"]: str(value) if isinstance(value, Path) else value
            for item in _FIELDS
            for value in [getattr(self, item.name)]
        }
        return config | FIXED

    def check(self) -> None:
        """Refuse settings that are malformed together (create_app calls it at start-up, so the first upload
        or mail does not find out): STORAGE_URL with S3_ENDPOINT_URL, SITE_URL with SERVER_NAME and MAIL_SERVER."""
        self.upload_location  # noqa: B018 (computing it is the check)
        self.link_base  # noqa: B018

    # --- what the services use, derived ---------------------------------------------------------------------

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @functools.cached_property
    def upload_location(self) -> Path | S3Location:
        """Where original uploads are kept: STORAGE_URL's folder or bucket, SUBMISSIONS_DIR when it is empty.
        ConfigError naming the variable for anything else (the value is not repeated when it may hold a
        secret)."""
        return _upload_location(self)

    @property
    def upload_folder(self) -> Path:
        """The folder of original uploads (STORAGE_URL's folder, else SUBMISSIONS_DIR)."""
        location = self.upload_location
        return location if isinstance(location, Path) else self.submissions_dir

    @property
    def upload_bucket(self) -> S3Location | None:
        """Original uploads in an S3 bucket instead of the folder (STORAGE_URL=s3://bucket/prefix)."""
        location = self.upload_location
        return location if isinstance(location, S3Location) else None

    @functools.cached_property
    def link_base(self) -> str:
        """The base of links in mail: SITE_URL, else https://SERVER_NAME, else (no MAIL_SERVER: mail goes to
        the log) the demo's address. Mail to real people with links to localhost would be useless: refused."""
        raw = (self.site_url or "").strip().rstrip("/")
        if raw:
            parts = urlsplit(raw)
            if parts.scheme not in {"http", "https"} or not parts.netloc or parts.query or parts.fragment:
                raise ConfigError(f"SITE_URL must be the site's address, like https://holdout.example.org; got {raw!r}")
            return raw
        if self.server_name:
            return f"https://{self.server_name}"
        if self.mail_server:
            raise ConfigError("MAIL_SERVER is set but SITE_URL is not: mailed links need the site's address")
        return DEMO_SITE_URL

    @property
    def mail_options(self) -> tuple:
        """The MAIL_* settings, as Flask-Mail reads them (pairs)."""
        return tuple((key, value) for key, value in self.flask_config().items() if key.startswith("MAIL_"))


_FIELDS: tuple[Field, ...] = tuple(fields(Settings))


def from_environment(instance_path: str | Path) -> dict:
    """The Flask config mapping the environment gives (ConfigError naming a bad variable)."""
    return Settings.from_environment(instance_path).flask_config()


def current() -> Settings:
    """The settings of the application whose context is active (every use case runs in one)."""
    return Settings.from_config(current_app.config)


def settings_table_markdown() -> str:
    """Every setting as a row of a markdown table: its environment variable, its default and what it does
    (for docs/deployment/settings.md, generated from this)."""
    rows = ["| Setting | Default | What it does |", "| --- | --- | --- |"]
    for item in _FIELDS:
        meta = item.metadata
        name = " or ".join(f"`{env}`" for env in meta["env"])
        rows.append(f"| {name} | {_shown_default(item)} | {meta['doc'].replace('|', '&#124;')} |")
    return "\n".join(rows) + "\n"


def _shown_default(item: Field) -> str:
    if item.metadata["shown"] is not None:
        return item.metadata["shown"]
    value = item.default
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    return f"`{value}`"


# --- where uploads are kept --------------------------------------------------------------------------------


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


def _upload_location(settings: Settings) -> Path | S3Location:
    raw = (settings.storage_url or "").strip()
    endpoint = _endpoint_url(settings.s3_endpoint_url)
    if not raw:
        return Path(settings.submissions_dir)
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
        return S3Location(bucket, prefix, endpoint, settings.s3_region or None)
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
