"""Where the server's address and the API token are kept: the user's config directory, readable by them only."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


class UsageError(Exception):
    """The command cannot run as given (exit code 2)."""


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "holdout" / "config.json"


def load() -> dict:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}; run `holdout login --url URL` again") from exc
    return data if isinstance(data, dict) else {}


def save(url: str, token: str) -> Path:
    """Write the settings atomically, the file created with mode 0600 (never readable by others, not even
    for a moment), in a folder of mode 0700."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-", suffix=".tmp")  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"url": url, "token": token}, fh)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def settings() -> tuple[str, str | None]:
    """(server URL, token): the environment (HOLDOUT_URL, HOLDOUT_TOKEN) over what `login` stored."""
    stored = load()
    url = os.environ.get("HOLDOUT_URL") or stored.get("url")
    token = os.environ.get("HOLDOUT_TOKEN") or stored.get("token")
    if not url:
        raise UsageError("no server configured: run `holdout login --url URL` first (or set HOLDOUT_URL)")
    return url, token
