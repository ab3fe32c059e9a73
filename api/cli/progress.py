"""A progress line on the terminal for long transfers: bytes so far (of the total when known), rate and ETA,
redrawn in place on standard error a few times a second and cleared at the end; for a wait the client cannot
measure (the server fetching a git repository), how long it has waited.

Only for people: with -o json or yaml, or when standard output or standard error is not a terminal (a pipe, a
file, a CI log), it writes nothing, so scripts read the same output as before."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO

EVERY = 0.2  # seconds between redraws: smooth to the eye, no cost on a fast transfer
FIRST = 1.0  # a call that answers sooner than this draws no ticker: no flicker on every quick command
UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
COUNTED = re.compile(r"(\d+) of (\d+)")  # the agent's "pulling IMAGE: 2 of 5 blobs", "unpacking IMAGE: layer 1 of 5"
# git's "Receiving objects:  45% (9/20), 1.20 MiB | 600.00 KiB/s", as the server streams a catalog refresh
GIT = re.compile(r"^(?P<step>[A-Z][a-z]+ objects|Resolving deltas):\s+(?P<percent>\d+)% \([^)]*\)"
                 r"(?:, (?P<size>[\d.]+ [KMGT]?i?B)(?: \| (?P<rate>[\d.]+ [KMGT]?i?B/s))?)?")


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


class Ticker:
    """`label  0:07` redrawn in place while a call the client cannot measure runs (the server clones a git
    repository, say): a thread draws it every EVERY seconds, so a person sees the command is alive and for how long.
    Nothing is drawn when not `shown`, or for a call over before its first redraw."""

    def __init__(self, label: str, shown: bool, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.shown, self.stream, self.clock = label, shown, stream or sys.stderr, clock
        self.stop, self.drawn = threading.Event(), False
        self.thread = threading.Thread(target=self._run, name="roving-ticker", daemon=True)

    def __enter__(self) -> Ticker:
        self.started = self.clock()
        if self.shown:
            self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self.shown:
            self.stop.set()
            self.thread.join()
            if self.drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def line(self) -> str:
        return f"{self.label}  {clock_time(self.clock() - self.started)}"

    def _run(self) -> None:
        if self.stop.wait(FIRST):
            return
        while not self.stop.wait(EVERY):
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()
            self.drawn = True


def paced(told: list[tuple[str, str]]) -> str:
    """The newest of a stage's progress lines, (time, text) oldest first, with its pace since the first line of the
    same step (pulling or unpacking that image) and how long the rest takes at that pace:
    `pulling docker://x: 3 of 5 blobs  0.5 blobs/s  ETA 0:04`; the line alone when no pace is known yet."""
    if not told:
        return ""
    at, text = told[-1]
    now = COUNTED.search(text)
    same = [(when, COUNTED.search(t)) for when, t in told if t.split(":")[0] == text.split(":")[0]]
    first = next(((when, m) for when, m in same if m), None)
    if now is None or first is None:
        return text
    try:
        seconds = (moment(at) - moment(first[0])).total_seconds()
    except ValueError:
        return text
    done, total, began = int(now[1]), int(now[2]), int(first[1][1])
    if seconds <= 0 or done <= began:
        return text
    rate, unit = (done - began) / seconds, "blobs" if "blob" in text else "layers" if "layer" in text else "steps"
    eta = f"  ETA {clock_time((total - done) / rate)}" if done < total else ""
    return f"{text}  {rate:.1f} {unit}/s{eta}"


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def fetched(label: str, told: str, seconds: float) -> str:
    """git's progress line as ours: `label  Receiving objects 45%  1.20 MiB  600.00 KiB/s  ETA 0:04`, the ETA from
    how far along it is after `seconds` of this step; a line git words otherwise is shown as it is."""
    found = GIT.match(told)
    if found is None:
        return f"{label}  {told}"
    percent = int(found["percent"])
    parts = [label, f"{found['step']} {percent}%", *(found[k] for k in ("size", "rate") if found[k])]
    if 0 < percent < 100 and seconds > 0:
        parts.append(f"ETA {clock_time(seconds * (100 - percent) / percent)}")
    return "  ".join(parts)
