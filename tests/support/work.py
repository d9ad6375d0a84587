"""Work counted, not timed (issue 36: no test asserts a wall-clock time; the timings go to `make bench`).

``python_lines``: how many lines of Python a call runs (every frame of this thread, the app's and the
libraries'). The count does not depend on how busy the machine is: a loop in Python over every byte, entry or
problem shows up as lines in proportion to them. The call is stopped (an AssertionError) at ``limit`` lines, so
a regression to such a loop fails at once instead of running on, traced.

``cpu_seconds``: for work done in C (numpy, bytes and str methods), which no line count sees, the CPU time of
this process, only ever compared with another size's (a growth ratio): other processes' load is not counted
in it, and a ratio does not depend on the machine's speed.

``problems_made``: the problems a refusal puts in words, which must stop at what it shows."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
LIMIT = 2_000_000  # lines traced at most: about a second of tracing


class TooMuchWork(BaseException):
    """Raised inside the traced call at its limit (a BaseException: the app's ``except Exception`` lets it by)."""


def python_lines(call: Callable[[], T], limit: int = LIMIT) -> tuple[T, int]:
    """``call()`` (its exceptions propagate) and the lines of Python it ran; an AssertionError, as soon as it
    has run more than ``limit`` lines, instead of running on."""
    lines = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
            if lines > limit:
                raise TooMuchWork
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        result = call()
    except TooMuchWork:
        raise AssertionError(f"more than {limit:,} lines of Python") from None
    finally:
        sys.settrace(previous)
    return result, lines


def raised(call: Callable[[], Any], expected: type[BaseException] = Exception) -> Callable[[], BaseException]:
    """``call`` as a call that returns the exception it raises (of ``expected``'s kind), for ``python_lines``."""

    def caught() -> BaseException:
        try:
            call()
        except expected as exc:
            return exc
        raise AssertionError(f"{call} raised nothing")

    return caught


def cpu_seconds(call: Callable[[], T]) -> tuple[T, float]:
    """``call()`` and the CPU time this process spent in it, for growth ratios only (never a bound in seconds)."""
    started = time.process_time()
    result = call()
    return result, time.process_time() - started


def problems_made(monkeypatch: Any) -> list[int]:
    """A list that grows by one for each Problem made from now on (each problem of a file put in words): the
    work a refusal does per problem, which must stop at what it shows, however many problems it counts."""
    from app.evaluation.errors import Problem

    made: list[int] = []
    init = Problem.__init__

    def counted(self: Problem, *args: Any, **kwargs: Any) -> None:
        made.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Problem, "__init__", counted)
    return made
