"""One command at a time per aggregate in this process: a command waits for another that holds an aggregate it
loads, instead of deciding on the same copy and losing the write race.

An aggregate opts in (`takes_turns`): the workflow, which two writers of one process meet on all the time. A task
array's workflow is changed by the
scheduler's placements and by the agents' reports at once. Deciding both on the same version makes one of them
lose the race, read the log and decide again, a whole batch at a time (a 400-task array: about 450 lost races
and 1.4 log reads a task). Waiting out the other's commit (a few milliseconds) costs less, and the waiter's copy
is then the log's latest. Nodes do not take turns: a node is changed by the same two writers, but its commands
are short, and waiting for a node's turn cost the commits their grouping (a burst of one-job workflows: 2.2 to 2.7
commit batches a job, 1.5 ms more CPU a job than the few races it saved).

Optimistic concurrency stays the rule; this only makes conflicts rarer. Another process may still write first, and
a command never waits where waiting would close a cycle (two commands taking two aggregates in opposite orders):
the one that would close it goes on without the aggregate, as every command did before. A wait is bounded too.
"""

from __future__ import annotations

import threading
from typing import Any

PATIENCE = 2.0  # seconds between releases a command waits, at most, before it goes on without the aggregate
WAKEUPS = 200  # releases (each wakes every waiter) a command waits through, at most


class AggregateLocks:
    """Which command (its scope) holds which aggregate id, and which aggregate a waiting command waits for."""

    def __init__(self) -> None:
        self._owners: dict[Any, object] = {}
        self._waiting: dict[object, Any] = {}
        self._changed = threading.Condition()

    def take(self, key: Any, owner: object) -> tuple[bool, bool]:
        """Hold `key` for `owner`: (held, waited for it). Not held: it goes on without (a cycle, a wait too long)."""
        with self._changed:
            try:
                for wakeup in range(WAKEUPS):
                    holder = self._owners.get(key)
                    if holder is None or holder is owner:
                        self._owners[key] = owner
                        return True, wakeup > 0
                    if self._waits_on(holder, owner) or not self._wait(owner, key):
                        return False, wakeup > 0
                return False, True
            finally:
                self._waiting.pop(owner, None)

    def _wait(self, owner: object, key: Any) -> bool:
        self._waiting[owner] = key
        return self._changed.wait(PATIENCE)

    def _waits_on(self, holder: object | None, owner: object) -> bool:
        """`holder` waits, through a chain of waiting commands, for something `owner` holds."""
        seen: set[int] = set()
        while holder is not None and id(holder) not in seen:
            if holder is owner:
                return True
            seen.add(id(holder))
            wanted = self._waiting.get(holder)
            holder = None if wanted is None else self._owners.get(wanted)
        return False

    def release(self, keys: set[Any], owner: object) -> None:
        if not keys:
            return
        with self._changed:
            for key in keys:
                if self._owners.get(key) is owner:
                    del self._owners[key]
            self._changed.notify_all()

    def __len__(self) -> int:
        return len(self._owners)
