"""A background loop's thread: one named daemon thread, started once, stopped by its events and joined in a bound.

Every long-running part of a control-plane process (scheduler, provisioners, volume provisioners, autoscaler,
refused-alert and audit-lease loops, the log probe) runs its loop on one of these, so stopping one is the same
everywhere: `stopping` is set, `wake` is set for a loop asleep on it, and the thread gets `join_seconds` to end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Background:
    """The thread of one loop; the loop reads `stopping` (and may sleep on `wake`, which others set for news)."""

    def __init__(self, loop: Callable[[], None], name: str, join_seconds: float = 10.0) -> None:
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.join_seconds = join_seconds
        self._thread = threading.Thread(target=loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Idempotent; a loop never started (a part driven by hand, as tests do) has nothing to join."""
        self.stopping.set()
        self.wake.set()
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.join_seconds)
