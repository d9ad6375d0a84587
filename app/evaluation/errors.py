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
    """A file cannot be used. ``problems`` holds at most MAX_PROBLEMS entries plus a final count of the rest.

    The true totals travel with it, however many problems were cut: ``total`` (every problem found), ``lines``
    (the lines with at least one), ``whole_file`` (problems of the file as a whole) and ``hints`` (what a right
    file looks like, e.g. the split's identifier form), for ``summary``."""

    def __init__(
        self,
        problems: list[Problem] | Problem | str,
        omitted: int = 0,
        *,
        lines: int | None = None,
        hints: Iterable[str] = (),
    ):
        if isinstance(problems, str):
            problems = [Problem(None, problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        else:
            problems = list(problems)
        if lines is None:  # not from a ProblemList: every problem is here, none counted apart
            lines = len({problem.line for problem in problems if problem.line is not None})
        self.whole_file = sum(1 for problem in problems if problem.line is None)
        omitted += max(0, len(problems) - MAX_PROBLEMS)
        problems = problems[:MAX_PROBLEMS]
        self.shown = len(problems)
        self.total = self.shown + omitted
        self.lines = lines
        self.hints = tuple(dict.fromkeys(hints))
        if omitted:
            problems.append(Problem(None, f"... and {omitted:,} more problem{'s' if omitted != 1 else ''}"))
        self.problems: list[Problem] = problems
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(problem.message for problem in self.problems)

    def summary(self) -> str:
        """The refusal in one line: its one problem, or how many lines have errors and which are listed, then
        the first ("3,104 lines have errors (identifiers look like dev-850-0-0); the first 50: line 3: ... …")."""
        hints = f" ({'; '.join(self.hints)})" if self.hints else ""
        if self.total <= 1:
            return (self.problems[0].message if self.problems else "the file has errors") + hints
        counts = []
        if self.lines:
            on_lines = self.total - self.whole_file
            several = f" ({on_lines:,} problems)" if on_lines != self.lines else ""  # VCR: one a bad cell
            counts.append(f"{self.lines:,} line{'s have' if self.lines != 1 else ' has'} errors{several}")
        if self.whole_file:
            counts.append(
                f"{self.whole_file} problem{'s concern' if self.whole_file != 1 else ' concerns'} the whole file"
            )
        listed = f"; the first {self.shown:,}:" if self.shown < self.total else ":"
        # The first problem follows, for a reader of this line alone (a log, a terminal); the list has them all.
        return " and ".join(counts) + hints + listed + f" {self.problems[0].message} …"


class ProblemList:
    """Collects problems from several checks; keeps only what can be shown but counts everything.

    Vectorised checks hand over a mask's line numbers; only the first MAX_PROBLEMS (by line) are ever
    formatted, so a file with a million bad lines costs no more than one with fifty. The lines with errors
    are counted in a bitmap of the file's lines (a byte a line, whatever the number of problems on them).
    """

    def __init__(self) -> None:
        self._line_problems: list[Problem] = []
        self._file_problems: list[Problem] = []
        self._omitted = 0
        self._bad_lines = np.zeros(0, dtype=bool)
        self._hints: list[str] = []

    @property
    def count(self) -> int:
        """Problems found so far, shown or not."""
        return len(self._line_problems) + len(self._file_problems) + self._omitted

    @property
    def lines(self) -> int:
        """Lines with at least one problem so far."""
        return int(np.count_nonzero(self._bad_lines))

    def __bool__(self) -> bool:
        return bool(self._line_problems or self._file_problems or self._omitted)

    def _mark(self, lines: np.ndarray) -> None:
        if lines.size == 0:
            return
        top = int(lines.max())
        if top >= self._bad_lines.size:
            grown = np.zeros(max(top + 1, 2 * self._bad_lines.size), dtype=bool)
            grown[: self._bad_lines.size] = self._bad_lines
            self._bad_lines = grown
        self._bad_lines[lines] = True

    def _cutoff(self) -> int | None:
        """The line past which a new line problem cannot be among the first MAX_PROBLEMS (None: room left)."""
        if len(self._line_problems) < MAX_PROBLEMS:
            return None
        return self._line_problems[-1].line

    def _keep_first(self) -> None:
        """Only the first MAX_PROBLEMS line problems, by line, are kept; the rest are counted."""
        self._line_problems.sort(key=lambda problem: problem.line or 0)
        extra = len(self._line_problems) - MAX_PROBLEMS
        if extra > 0:
            del self._line_problems[MAX_PROBLEMS:]
            self._omitted += extra

    def add(self, problem: Problem | str) -> None:
        if isinstance(problem, str):
            problem = Problem(None, problem)
        if problem.line is None:
            self._file_problems.append(problem)
            return
        self._mark(np.asarray([problem.line]))
        self._line_problems.append(problem)
        self._keep_first()

    def hint(self, text: str) -> None:
        """What a right file looks like, said once in the refusal's summary (e.g. the identifier form)."""
        if text not in self._hints:
            self._hints.append(text)

    def add_lines(self, lines: np.ndarray, rows: Iterable[int], describe: Callable[[int], str]) -> None:
        """One problem per row: ``lines[row]`` is its physical line, ``describe(row)`` its message."""
        rows = np.asarray(rows)
        if rows.size == 0:
            return
        self._mark(np.asarray(lines[rows]))
        rows = rows[np.argsort(lines[rows], kind="stable")]
        cutoff = self._cutoff()
        shown = rows[:MAX_PROBLEMS]
        if cutoff is not None:  # formatting what cannot be shown would cost a message per bad row
            shown = shown[lines[shown] < cutoff]
        self._omitted += rows.size - shown.size
        self._line_problems.extend(at(lines[row], describe(int(row))) for row in shown.tolist())
        self._keep_first()

    def raise_if_any(self) -> None:
        if not self:
            return
        # Whole-file problems (e.g. missing identifiers) always survive the cut; line problems come first.
        room = max(0, MAX_PROBLEMS - len(self._file_problems))
        ordered = self._line_problems  # kept in line order
        omitted = self._omitted + max(0, len(ordered) - room)
        raise ValidationError(
            ordered[:room] + self._file_problems, omitted=omitted, lines=self.lines, hints=self._hints
        )
