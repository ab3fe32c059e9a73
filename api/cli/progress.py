"""A progress line on the terminal for long transfers: bytes so far (of the total when known), rate and ETA,
redrawn in place on standard error a few times a second and cleared at the end.

Only for people: with -o json or yaml, or when standard output or standard error is not a terminal (a pipe, a
file, a CI log), it writes nothing, so scripts read the same output as before."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

EVERY = 0.2  # seconds between redraws: smooth to the eye, no cost on a fast transfer
UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(count: float) -> str:
    for unit in UNITS:
        if count < 1024 or unit == UNITS[-1]:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} {UNITS[-1]}"


def clock_time(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def for_people(args: Any, stdout: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    """Whether a command's progress line should show: table output, both streams terminals."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    return getattr(args, "output", "table") in ("table", "wide") and stdout.isatty() and stderr.isatty()


class Progress:
    """`label  12.3 MiB of 200.0 MiB (6%)  45.1 MiB/s  ETA 0:04`, or nothing when not `shown`."""

    def __init__(self, label: str, total: int | None, shown: bool, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total, self.shown = label, total, shown
        self.stream, self.clock = stream or sys.stderr, clock
        self.done, self.started, self.drawn = 0, clock(), float("-inf")

    def advance(self, count: int) -> None:
        self.done += count
        if self.shown and self.clock() - self.drawn >= EVERY:
            self.draw()

    def line(self) -> str:
        seconds = max(self.clock() - self.started, 1e-6)
        rate = self.done / seconds
        parts = [self.label, size(self.done)]
        if self.total:
            parts[-1] += f" of {size(self.total)} ({100 * self.done // self.total}%)"
        parts.append(f"{size(rate)}/s")
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"ETA {clock_time((self.total - self.done) / rate)}")
        return "  ".join(parts)

    def draw(self) -> None:
        self.drawn = self.clock()
        self.stream.write("\r\x1b[K" + self.line())
        self.stream.flush()

    def finish(self) -> None:
        """Clear the line: the command's own answer follows, as without a terminal."""
        if self.shown and self.drawn > float("-inf"):
            self.stream.write("\r\x1b[K")
            self.stream.flush()
