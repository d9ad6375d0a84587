"""A server process a test starts and stops (a job worker, a deployment's unit), its output in a log file."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path


class LoggedProcess:
    """`command` in a process of its own, stdout and stderr appended to `log`."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path, cwd: Path):
        self.log = log
        with open(log, "ab") as out:
            self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)

    def tail(self, size: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-size:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM (a worker finishes the job in hand first), then SIGKILL after `grace` seconds."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
