"""The write path's memory of the log: aggregates kept as last committed, what is known not to exist, and what the
log's follower has seen, so a command reads the log only when it has to.

Without it every command caught each cached aggregate up with the log (a read per aggregate, about twelve per
trivial job). With it, an aggregate this process saved or loaded is trusted as it is, because:
- every save still carries the aggregate's expected last sequence, so a command that decided on a stale copy
  (another process wrote meanwhile) meets a conflict, forgets what it held, and decides again on a fresh read;
- the process's follower of the log reports each event it sees (`seen`), and a copy older than what the follower
  has seen is never handed out again, so a read-only decision is at most as stale as the views are.

A stale copy is caught up with only the events after it (one short read), never replayed from the first: a
busy node's history is long. An id looked up and not found is remembered as absent until the follower sees an
event of it, or a save of it is refused; a caller that must not trust that (a token's revocation) asks inside `uncached()`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

SEEN_SIZE = 200_000  # ids whose last version the follower saw; an id forgotten here is read from the log again
ABSENT_SIZE = 50_000


class HotState:
    """Versions the follower has seen and ids known to be absent, shared by every command thread."""

    def __init__(self) -> None:
        self.enabled = False
        self._seen: OrderedDict[Any, int] = OrderedDict()
        self._absent: OrderedDict[Any, None] = OrderedDict()
        self._stale: set[Any] = set()  # copies a refused save (or a lost race) says may be behind the log
        self._lock = threading.Lock()
        self._local = threading.local()

    def seen(self, originator_id: Any, version: int) -> bool:
        """The follower saw `version` of the aggregate; True when that is news to this process's memory of it."""
        with self._lock:
            known = self._seen.get(originator_id, 0)
            if version > known:
                self._seen[originator_id] = version
                self._seen.move_to_end(originator_id)
                if len(self._seen) > SEEN_SIZE:
                    self._seen.popitem(last=False)
            self._absent.pop(originator_id, None)
            return version > known

    def newest_seen(self, originator_id: Any) -> int:
        return self._seen.get(originator_id, 0)

    def is_stale(self, originator_id: Any, version: int) -> bool:
        """A copy at `version` must catch up with the log before it is handed out."""
        return originator_id in self._stale or self._seen.get(originator_id, 0) > version

    def mark_stale(self, originator_id: Any) -> None:
        with self._lock:
            self._stale.add(originator_id)

    def caught_up(self, originator_id: Any) -> None:
        with self._lock:
            self._stale.discard(originator_id)

    def is_absent(self, originator_id: Any) -> bool:
        return self.trusted and originator_id in self._absent

    def mark_absent(self, originator_id: Any) -> None:
        with self._lock:
            if originator_id in self._seen:  # the follower saw it written: not absent, whatever the read said
                return
            self._absent[originator_id] = None
            if len(self._absent) > ABSENT_SIZE:
                self._absent.popitem(last=False)

    def present(self, originator_id: Any) -> None:
        with self._lock:
            self._absent.pop(originator_id, None)

    @property
    def trusted(self) -> bool:
        """Memory may answer for the log: a follower reports to it, and the caller did not ask for the log."""
        return self.enabled and not getattr(self._local, "uncached", False)

    def uncached(self) -> _Uncached:
        return _Uncached(self._local)


class _Uncached:
    """`with state.uncached():` every lookup in it goes to the log (nested uses keep it on until the outermost)."""

    def __init__(self, local: threading.local) -> None:
        self._local = local
        self._was = False

    def __enter__(self) -> None:
        self._was = getattr(self._local, "uncached", False)
        self._local.uncached = True

    def __exit__(self, *_: object) -> None:
        self._local.uncached = self._was
