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
