"""`roving run`'s line while its job gets ready: the node's newest word on it (pulling its image, blobs so far, pace
and ETA; unpacking), redrawn in place on standard error until the job's output starts, then cleared. A terminal
only: a pipe or a log file gets the job's output alone, as before."""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from api.cli.client import ApiError, Client
from api.cli.progress import FIRST

LOOK = 1.0  # seconds between looks at the workflow's events: the node tells its progress every few seconds


class GettingReady:
    """A thread drawing the stage's progress line; `stop()` (the output began, or the job ended) clears it."""

    def __init__(self, client: Client, workflow: str, shown: bool, stream: TextIO | None = None,
                 looker: Any = None) -> None:
        # its own connection (`looker`): the command's client is busy streaming the job's output meanwhile
        self.client = looker or (Client(str(client.http.base_url), client.token, renew=client.renew) if shown else client)
        self.workflow, self.shown = workflow, shown
        self.stream, self.drawn = stream or sys.stderr, False
        self.done, self.lock = threading.Event(), threading.Lock()
        self.thread = threading.Thread(target=self._run, name="roving-run-ready", daemon=True)

    def __enter__(self) -> GettingReady:
        if self.shown:
            self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.done.is_set():
            return
        self.done.set()
        if self.shown:
            self.thread.join(timeout=5)
        with self.lock:
            if self.drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.drawn = False
        if self.shown:
            self.client.close()

    def _run(self) -> None:
        from api.cli.workflow import under_way

        if self.done.wait(FIRST):
            return
        while not self.done.is_set():
            try:
                detail = self.client.get(f"/v4/workflows/{self.workflow}")
                line = next(iter(under_way(self.client, self.workflow, detail).values()), "")
            except ApiError:
                line = ""  # a look that failed: the next one tells
            with self.lock:
                if line and not self.done.is_set():
                    self.stream.write("\r\x1b[K" + line)
                    self.stream.flush()
                    self.drawn = True
            if self.done.wait(LOOK):
                return
