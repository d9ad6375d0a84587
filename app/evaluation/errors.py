"""Problems found in an uploaded or gold file, and the one exception the parsers raise."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

# Enough to fix a file in one go without flooding a page (or a JSON response) with a million lines.
MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file; ``line`` is the 1-based physical line, None for the whole file."""

    line: int | None
    message: str

    def __str__(self) -> str:
        return self.message


def at(line: int, message: str) -> Problem:
    """A problem on one line; the message starts with the line so it reads well on its own."""
    return Problem(int(line), f"line {int(line)}: {message}")


class ValidationError(Exception):
    """A file cannot be used. ``problems`` holds at most MAX_PROBLEMS entries plus a final count of the rest."""

    def __init__(self, problems: list[Problem] | Problem | str, omitted: int = 0):
        if isinstance(problems, str):
            problems = [Problem(None, problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        else:
            problems = list(problems)
        omitted += max(0, len(problems) - MAX_PROBLEMS)
        problems = problems[:MAX_PROBLEMS]
        if omitted:
            problems.append(Problem(None, f"... and {omitted} more problem{'s' if omitted != 1 else ''}"))
        self.problems: list[Problem] = problems
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(problem.message for problem in self.problems)


class ProblemList:
    """Collects problems from several checks; keeps only what can be shown but counts everything.

    Vectorised checks hand over a mask's line numbers; only the first MAX_PROBLEMS are formatted,
    so a file with a million bad lines costs no more than one with fifty.
    """

    def __init__(self) -> None:
        self._line_problems: list[Problem] = []
        self._file_problems: list[Problem] = []
        self._omitted = 0

    @property
    def count(self) -> int:
        """Problems found so far, shown or not."""
        return len(self._line_problems) + len(self._file_problems) + self._omitted

    def __bool__(self) -> bool:
        return bool(self._line_problems or self._file_problems or self._omitted)

    def add(self, problem: Problem | str) -> None:
        if isinstance(problem, str):
            problem = Problem(None, problem)
        (self._file_problems if problem.line is None else self._line_problems).append(problem)

    def add_lines(self, lines: np.ndarray, rows: Iterable[int], describe: Callable[[int], str]) -> None:
        """One problem per row: ``lines[row]`` is its physical line, ``describe(row)`` its message."""
        rows = np.asarray(rows)
        if rows.size == 0:
            return
        rows = rows[np.argsort(lines[rows], kind="stable")]
        shown = rows[:MAX_PROBLEMS]
        self._omitted += rows.size - shown.size
        self._line_problems.extend(at(lines[row], describe(int(row))) for row in shown.tolist())

    def raise_if_any(self) -> None:
        if not self:
            return
        # Whole-file problems (e.g. missing identifiers) always survive the cut; line problems come first.
        room = max(0, MAX_PROBLEMS - len(self._file_problems))
        ordered = sorted(self._line_problems, key=lambda problem: problem.line or 0)  # line problems have lines
        omitted = self._omitted + max(0, len(ordered) - room)
        raise ValidationError(ordered[:room] + self._file_problems, omitted=omitted)
