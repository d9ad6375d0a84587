"""The client's parts that need no server: the progress bar, the upload body and the config file. (Its CSV is the
server's export: tests/client/test_board_csv.py.)"""

from __future__ import annotations

import io
import stat
import sys

import pytest

from tests.client.conftest import CLIENT

sys.path.insert(0, str(CLIENT))
from holdout_client import api, config, output  # noqa: E402  (the client is not installed in this venv)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_for_large_files_on_a_terminal_only():
    data = b"x" * (3 * api.CHUNK + 10)
    parts, content_type = api.multipart({"model_name": "m"}, "p.csv", data)
    screen = Terminal()
    progress = api.Progress("uploading p.csv", sum(map(len, parts)), stream=screen, enabled=True)
    body = b"".join(api._chunks(parts, progress))
    assert body == b"".join(parts) and content_type.startswith("multipart/form-data; boundary=")
    frames = screen.getvalue().split("\r")[1:]
    assert len(frames) >= 4 and frames[-1].rstrip("\n").endswith("0.2/0.2 MB")
    assert "[" + "#" * 30 + "] 100%" in frames[-1] and screen.getvalue().endswith("\n")
    assert all("100%" not in frame for frame in frames[:-1])
    # Decided by size and terminal when not forced: small files and pipes get no bar.
    assert api.Progress("x", api.PROGRESS_FROM, stream=Terminal()).enabled
    assert not api.Progress("x", api.PROGRESS_FROM - 1, stream=Terminal()).enabled
    assert not api.Progress("x", 10 * api.PROGRESS_FROM, stream=io.StringIO()).enabled


def test_file_name_cannot_break_the_multipart_header():
    parts, _ = api.multipart({}, 'a"\r\nX-Evil: 1.csv', b"data")
    assert b'filename="a___X-Evil: 1.csv"' in parts[0]


def test_config_is_written_for_the_user_only(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("HOLDOUT_TOKEN", raising=False)
    monkeypatch.delenv("HOLDOUT_URL", raising=False)
    with pytest.raises(config.UsageError, match="holdout login"):
        config.settings()
    path = config.save("https://lb.example.org", "hd_secret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.settings() == ("https://lb.example.org", "hd_secret")
    monkeypatch.setenv("HOLDOUT_TOKEN", "hd_other")
    assert config.settings() == ("https://lb.example.org", "hd_other")
    path.write_text("{not json")
    with pytest.raises(config.UsageError, match="cannot read"):
        config.load()


def test_a_rank_is_written_with_its_interval_as_the_board_and_the_exports_write_it():
    """Issue 34: '2 (2–4)', and '1 (1)' for an interval of one rank (as Markdown and LaTeX print it); a rank
    without an interval alone."""
    assert output._rank({"rank": 2, "rank_low": 2, "rank_high": 4}) == "2 (2–4)"
    assert output._rank({"rank": 1, "rank_low": 1, "rank_high": 1}) == "1 (1)"
    assert output._rank({"rank": 3, "rank_low": None, "rank_high": None}) == "3"


def test_a_publication_limit_is_not_reported_as_a_quota(capsys):
    """A 429 with a quota's `retry_at` is "over quota"; a publication limit's (issue 35) is reported as sent."""
    from holdout_client import cli

    cli._report(api.ApiError(429, "the team has used its 2 submissions for today", body={"retry_at": None}))
    assert capsys.readouterr().err.startswith("over quota: the team has used its 2 submissions for today")
    limit = "submission 3 was published, unpublished or edited 10 times in the last hour, the most allowed"
    cli._report(api.ApiError(429, limit, body={"error": limit, "details": []}))
    assert capsys.readouterr().err == f"refused (HTTP 429): {limit}\n"
