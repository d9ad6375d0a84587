"""The `holdout` command end to end, installed from clients/python, against gunicorn on a live database:
login, submit a valid and an invalid file, over quota, submissions, show, publish, unpublish, and the
leaderboard in every format; exit codes 0 (done), 1 (refused by the server), 2 (usage or file errors)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import subprocess
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest

from app import synthetic
from tests.load.servers import running_server

PER_DAY = 2


@pytest.fixture
def server(tmp_path, database_backend):
    """gunicorn (2 workers, JSON access log) on a deployment with NLVR2 Test-P (2 scored a day), one team."""
    with running_server(
        tmp_path, database_backend, "client", teams=1, per_day=PER_DAY, workers=2, env={"LOG_FORMAT": "json"}
    ) as served:
        yield served


class Holdout:
    """Runs the installed command with its own config directory and no token in the environment."""

    def __init__(self, command, home):
        self.command = command
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HOLDOUT_")}
        self.env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config")}
        self.config = home / "config" / "holdout" / "config.json"

    def __call__(
        self, *args, stdin: str = "", env: dict | None = None, binary: bool = False
    ) -> subprocess.CompletedProcess:
        """`binary`: stdout and stderr as bytes, line ends untranslated."""
        return subprocess.run(
            [str(self.command), *map(str, args)],
            input=stdin.encode() if binary else stdin,
            capture_output=True,
            text=not binary,
            env=self.env | (env or {}),
            timeout=120,
        )


@pytest.mark.slow
def test_a_team_works_through_the_command(server, holdout_command, tmp_path):
    server, deployment = server
    holdout = Holdout(holdout_command, tmp_path / "home")
    token = deployment.tokens["team-0"]

    # --- login -----------------------------------------------------------------------------------------
    refused = holdout("login", "--url", server.base, stdin="hd_not-a-real-token\n")
    assert refused.returncode == 1, refused
    assert "refused" in refused.stderr and "invalid or has been revoked" in refused.stderr
    assert not holdout.config.exists()  # a token the server refuses is not kept
    assert holdout("login", "--url", "ftp://example.org", stdin=token).returncode == 2
    assert holdout("login", "--url", server.base, stdin="").returncode == 2

    logged_in = holdout("login", "--url", server.base, stdin=token + "\n")
    assert logged_in.returncode == 0, logged_in
    assert "as user0@example.org (teams: team-0)" in logged_in.stdout
    assert token not in logged_in.stdout + logged_in.stderr
    assert stat.S_IMODE(holdout.config.stat().st_mode) == 0o600
    assert stat.S_IMODE(holdout.config.parent.stat().st_mode) == 0o700
    assert json.loads(holdout.config.read_text()) == {"url": server.base, "token": token}
    # HOLDOUT_TOKEN is read instead of stdin.
    assert holdout("login", "--url", server.base, env={"HOLDOUT_TOKEN": token}).returncode == 0

    # --- submit: a valid file, published at once ------------------------------------------------------------
    valid = tmp_path / "valid.csv"
    valid.write_bytes(synthetic.predictions("nlvr2", deployment.gold, 0.8, seed=1))
    first = holdout(
        "submit", "nlvr2", "test-p", valid, "--model", "CLI model", "--description", "from the CLI", "--publish"
    )
    assert first.returncode == 0, first
    assert "scored: nlvr2 test-p, team team-0, model CLI model" in first.stdout
    # Written as the submission's page writes it: one decimal on a public split.
    assert any(
        line.split()[:2] == ["all", "accuracy"] and re.fullmatch(r"[7-8]\d\.\d", line.split()[2])
        for line in first.stdout.splitlines()
    )
    assert f"submissions left: {PER_DAY - 1} today" in first.stdout
    assert "published" in first.stdout.splitlines()[-1]

    # --- submit: an invalid file; its problems one a line, as the server names them ---------------------------
    lines = synthetic.predictions("nlvr2", deployment.gold, 0.8, seed=2).decode().splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0] + ",maybe"
    lines[5] = "test-p-99999-0-0,True"
    invalid = tmp_path / "invalid.csv"
    invalid.write_text("\n".join(lines) + "\n")
    rejected = holdout("submit", "nlvr2", "test-p", invalid, "--model", "broken")
    assert rejected.returncode == 1, rejected
    problems = rejected.stderr.splitlines()
    assert problems[0].startswith("rejected: invalid prediction file")
    assert problems[1].startswith("line 3: ") and "'maybe'" in problems[1]
    assert problems[2].startswith("line 6: ") and "test-p-99999-0-0" in problems[2]
    assert problems[3].startswith("missing predictions for 1 identifier")  # the whole file: no line

    listed = holdout("submissions", "--json")
    assert listed.returncode == 0, listed
    submissions = json.loads(listed.stdout)
    assert [s["status"] for s in submissions] == ["rejected", "scored"]
    stored = holdout("show", submissions[0]["id"])
    assert stored.returncode == 0
    # The same lines the server stored with the rejected file.
    assert stored.stdout.splitlines()[-len(problems[1:]) :] == problems[1:]

    # --- over quota: the time of the next slot ------------------------------------------------------------
    # Publishing at once needs a description or a paper URL: the submission is kept, the refusal is said.
    # Other predictions: the same ones could not be published twice by one team (a 409 naming the first).
    other = tmp_path / "other.csv"
    other.write_bytes(synthetic.predictions("nlvr2", deployment.gold, 0.75, seed=2))
    second = holdout("submit", "nlvr2", "test-p", other, "--model", "second", "--publish")
    assert second.returncode == 1, second
    assert "submissions left: 0 today" in second.stdout
    assert "is scored and stored but was not published: " in second.stderr
    over = holdout("submit", "nlvr2", "test-p", valid, "--model", "third")
    assert over.returncode == 1, over
    assert over.stderr.startswith("over quota: the team has used its 2 submissions for today")
    next_slot = over.stderr.splitlines()[-1]
    assert next_slot.startswith("next slot: ")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date()
    assert datetime.fromisoformat(next_slot[len("next slot: ") :].replace("Z", "+00:00")) == datetime(
        tomorrow.year, tomorrow.month, tomorrow.day, tzinfo=UTC
    )

    # --- usage and file errors: 2 ------------------------------------------------------------------------
    missing = holdout("submit", "nlvr2", "test-p", tmp_path / "nope.csv", "--model", "m")
    assert missing.returncode == 2 and "nope.csv: no such file" in missing.stderr
    assert holdout("submit", "nlvr2", "test-p", tmp_path, "--model", "m").returncode == 2  # a folder
    assert holdout("submit", "nlvr2", "test-p", valid).returncode == 2  # --model is required
    assert holdout("show", "not-a-number").returncode == 2
    stranger = Holdout(holdout_command, tmp_path / "stranger")
    not_logged_in = stranger("submissions")
    assert not_logged_in.returncode == 2 and "holdout login" in not_logged_in.stderr

    # --- the listing, show and publish -------------------------------------------------------------------
    listing = holdout("submissions")
    assert listing.returncode == 0
    assert listing.stdout.splitlines()[0].split() == [
        "id",
        "benchmark",
        "split",
        "team",
        "model",
        "status",
        "submitted",
        "published",
    ]
    assert len(listing.stdout.splitlines()) == 2 + 3
    second_id = json.loads(holdout("submissions", "--json").stdout)[0]["id"]
    published = holdout("publish", second_id, "--paper-url", "https://example.org/paper")
    assert published.returncode == 0, published
    shown = holdout("show", second_id)
    assert "paper:        https://example.org/paper" in shown.stdout and "published:" in shown.stdout
    assert holdout("publish", 999999).returncode == 1  # not ours: the server answers 404

    # --- the leaderboard in every format -------------------------------------------------------------------
    as_json = holdout("leaderboard", "nlvr2", "test-p", "--format", "json")
    assert as_json.returncode == 0, as_json
    board = json.loads(as_json.stdout)
    assert [e["model_name"] for e in board["entries"]] == ["CLI model", "second"] or [
        e["model_name"] for e in board["entries"]
    ] == ["second", "CLI model"]
    # CSV: the web's export of the board, byte for byte (CRLF line ends included).
    as_csv = holdout("leaderboard", "nlvr2", "test-p", "--format", "csv", binary=True)
    assert as_csv.returncode == 0, as_csv
    with urllib.request.urlopen(f"{server.base}/leaderboards/nlvr2/test-p/export.csv", timeout=60) as page:
        assert as_csv.stdout == page.read()
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout.decode(), newline="")))
    assert [row["model"] for row in rows] == [e["model_name"] for e in board["entries"]]
    top = board["entries"][0]["scores"]["all"]["accuracy"]
    # The stored value to six decimals (as the web's CSV writes it), which rounds to the board's figure.
    assert re.fullmatch(r"\d+\.\d", top["text"])
    assert float(rows[0]["all:accuracy"]) == pytest.approx(top["value"], abs=1e-6)
    assert float(rows[0]["all:accuracy ci_low"]) == pytest.approx(top["ci_low"], abs=1e-6)
    as_table = holdout("leaderboard", "nlvr2", "test-p")
    assert as_table.returncode == 0
    assert as_table.stdout.splitlines()[0] == "nlvr2 test-p"
    assert "CLI model" in as_table.stdout and "Balanced accuracy" in as_table.stdout
    assert f"{top['text']} [{top['ci_low_text']}–{top['ci_high_text']}]" in as_table.stdout
    # Markdown and LaTeX: the server's own exports of the board.
    for fmt, suffix in (("markdown", "md"), ("latex", "tex")):
        exported = holdout("leaderboard", "nlvr2", "test-p", "--format", fmt)
        assert exported.returncode == 0, exported
        with urllib.request.urlopen(f"{server.base}/leaderboards/nlvr2/test-p/export.{suffix}", timeout=60) as page:
            assert exported.stdout == page.read().decode()
    # Without a split: the benchmark's default one (here the only split).
    assert json.loads(holdout("leaderboard", "nlvr2", "--format", "json").stdout) == board
    # Unpublish: the entry leaves the board.
    unpublished = holdout("unpublish", second_id)
    assert unpublished.returncode == 0 and f"submission {second_id} unpublished" in unpublished.stdout
    left = json.loads(holdout("leaderboard", "nlvr2", "test-p", "--format", "json").stdout)
    assert [e["model_name"] for e in left["entries"]] == ["CLI model"]
    assert "None" not in holdout("show", second_id).stdout
    # --view teams is passed on as view=teams (the server decides what it does with it).
    assert holdout("leaderboard", "nlvr2", "test-p", "--view", "teams", "--format", "json").returncode == 0
    unknown = holdout("leaderboard", "nope")
    assert unknown.returncode == 1 and "unknown benchmark 'nope'" in unknown.stderr
    assert holdout("leaderboard", "nlvr2", "--format", "xml").returncode == 2

    server.stop()
    records = [json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")]
    assert any(r["path"] == "/api/v1/leaderboards/nlvr2/test-p" and r["query"] == "view=teams" for r in records)
    unreachable = holdout("leaderboard", "nlvr2")
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr


@pytest.fixture
def small_server(tmp_path, database_backend):
    """gunicorn with MAX_UPLOAD_MB=2."""
    with running_server(
        tmp_path, database_backend, "small", teams=1, per_day=None, workers=1, env={"MAX_UPLOAD_MB": "2"}
    ) as served:
        yield served


def _on_a_terminal(command: list[str], env: dict) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (where the progress bar is drawn); (code, stdout, terminal)."""
    import pty

    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    screen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the command has exited and closed the terminal
            break
        if not data:
            break
        screen += data
    os.close(master)
    stdout = process.stdout.read().decode()
    process.stdout.close()
    return process.wait(timeout=60), stdout, screen.decode(errors="replace")


def test_large_files_get_a_progress_bar_and_oversized_ones_the_servers_answer(small_server, holdout_command, tmp_path):
    server, deployment = small_server
    holdout = Holdout(holdout_command, tmp_path / "home")
    env = holdout.env | {"HOLDOUT_URL": server.base, "HOLDOUT_TOKEN": deployment.tokens["team-0"]}
    large = tmp_path / "large.csv"  # 1.5 MB: under the limit, over the bar's threshold; not a valid file
    large.write_bytes(b"test-p-1-0-0,maybe\n" * (1536 * 1024 // 19))
    code, stdout, screen = _on_a_terminal(
        [str(holdout_command), "submit", "nlvr2", "test-p", str(large), "--model", "big"], env
    )
    assert code == 1, screen
    assert "uploading large.csv [" in screen and "100% 1.5/1.5 MB" in screen
    assert "rejected: invalid prediction file" in screen

    oversized = tmp_path / "oversized.csv"
    oversized.write_bytes(b"x" * (3 * 1024 * 1024))
    refused = holdout("submit", "nlvr2", "test-p", oversized, "--model", "huge", env=env)
    assert refused.returncode == 1, refused
    assert "refused (HTTP 413): The upload is larger than this server accepts (2 MB)." in refused.stderr
    assert "uploading" not in refused.stderr  # no bar when stderr is not a terminal
