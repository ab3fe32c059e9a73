"""Transfer progress from a node to the log: the latest progress line an ingress or egress stage printed, sent as a
`progress` report at most every EVERY seconds per stage (best effort: a lost one is simply superseded). An image
build's steps are few and each is worth an event: every `build ...` line is sent."""

from __future__ import annotations

import threading
import time

from adapters.build_plan import BUILD
from adapters.runspec import RunSpec
from adapters.transfer_plan import TRANSFER_KINDS

EVERY = 5.0
MAX_TEXT = 300


class ProgressRelay:
    def __init__(self, every: float = EVERY) -> None:
        self.every = every
        self.lock = threading.Lock()
        self.latest: dict[tuple[str, int], str] = {}
        self.sent: dict[tuple[str, int], float] = {}
        self.steps: list[tuple[str, int, str]] = []  # build steps, each sent

    def seen(self, spec: RunSpec, stream: str, chunk: bytes) -> None:
        """From an output reader thread: remember the last whole progress line of a transfer stage."""
        if spec.kind not in (*TRANSFER_KINDS, BUILD) or stream != "stdout":
            return
        lines = [line for line in chunk.decode(errors="replace").splitlines() if line.startswith(spec.kind + " ")]
        if lines and spec.kind == BUILD:
            with self.lock:
                self.steps += [(spec.allocation_id, spec.epoch, line[:MAX_TEXT]) for line in lines]
        elif lines:
            with self.lock:
                self.latest[(spec.allocation_id, spec.epoch)] = lines[-1][:MAX_TEXT]

    def told(self, allocation_id: str, epoch: int, text: str) -> None:
        """A line said outright (an image pull's progress, from the executor's thread), kept as the latest."""
        with self.lock:
            self.latest[(allocation_id, epoch)] = text[:MAX_TEXT]

    def due(self, now: float | None = None) -> list[tuple[str, int, str]]:
        """(allocation, epoch, text) to report now: a new line, and the last report of that stage long enough ago."""
        now = time.monotonic() if now is None else now
        found = []
        with self.lock:
            found, self.steps = self.steps, []
            for key, text in list(self.latest.items()):
                if now - self.sent.get(key, -self.every) >= self.every:
                    found.append((*key, text))
                    self.sent[key] = now
                    del self.latest[key]
        return found

    def forget(self, allocation_id: str, epoch: int) -> None:
        with self.lock:
            self.latest.pop((allocation_id, epoch), None)
            self.sent.pop((allocation_id, epoch), None)
            self.steps = [step for step in self.steps if step[:2] != (allocation_id, epoch)]
