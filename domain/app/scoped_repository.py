"""The repository as one command sees it: each aggregate loaded once per command (an identity map), and, once a
follower of the log reports to it, answered from memory that the log's expected-sequence check keeps honest."""

from __future__ import annotations

import threading
from copy import deepcopy
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, project_aggregate

from domain.app.aggregate_locks import AggregateLocks
from domain.app.hot import HotState


class IdentityMap:
    """The aggregates one command has loaded, by id, and those it saved (kept in memory when it ends)."""

    def __init__(self) -> None:
        self.loaded: dict[Any, Any] = {}
        self.saved: dict[Any, Any] = {}
        self.remembered: set[Any] = set()  # answered from memory, unchecked against the log in this attempt
        self.checked: set[Any] = set()  # read from (or caught up with) the log in this attempt
        self.held: set[Any] = set()  # aggregates this command holds against the process's other commands

    def clear(self) -> None:
        for part in (self.loaded, self.saved, self.remembered, self.checked):
            part.clear()


class ScopedRepository:
    """The application's repository, seen through the running command's identity map (if any), and once a
    follower of the log reports to it (`follow_log`), answering from memory (domain.app.hot)."""

    def __init__(self, repository: Any) -> None:
        self._inner = repository
        self._local = threading.local()
        self.hot = HotState()
        self.locks = AggregateLocks()

    @property
    def scope(self) -> IdentityMap | None:
        return getattr(self._local, "scope", None)

    def follow_log(self) -> None:
        """A follower reports every event from now on (`observe`): memory is trusted, and reads stop."""
        self.hot.enabled = True
        self._inner.fastforward = False

    def observe(self, batch: Any) -> None:
        """The follower's batch of (position, event): a copy older than an event seen catches up before use."""
        for _, event in batch:
            self.hot.seen(_key(event.originator_id), event.originator_version)

    def get(self, aggregate_id: Any, **kwargs: Any) -> Any:
        scope = self.scope
        if kwargs:
            return self._inner.get(aggregate_id, **kwargs)
        key = _key(aggregate_id)
        if scope is not None and key in scope.loaded:
            return scope.loaded[key]
        found = self._get(key)
        if scope is not None:
            if getattr(found, "takes_turns", False) and key not in scope.held:
                found = self._take_turn(key, scope, found)
            scope.loaded[key] = found
        return found

    def _take_turn(self, key: UUID, scope: IdentityMap, found: Any) -> Any:
        """An aggregate several commands of this process change at once (a workflow: the scheduler's placements
        and the agents' reports) is held by one command at a time (domain.app.aggregate_locks); a command that
        waited for it takes the copy the other one left. Not held (a cycle, a long wait): decided on as it is."""
        held, waited = self.locks.take(key, scope)
        if not held:
            return found
        scope.held.add(key)
        return self._get(key) if waited else found

    def _get(self, key: UUID) -> Any:
        if not self.hot.enabled:
            return self._inner.get(key)  # the library's cache, caught up with the log on every get
        checked = True
        if not self.hot.trusted:
            self._drop(key)  # asked for the log: read it
        elif self.hot.is_absent(key):
            self._note(key, checked=False)
            raise AggregateNotFoundError(key)
        else:
            checked = self._catch_up(key)
        try:
            found = self._inner.get(key)
        except AggregateNotFoundError:
            self.hot.mark_absent(key)
            self._note(key, checked=True)
            raise
        self._note(key, checked)
        return found

    def _catch_up(self, key: UUID) -> bool:
        """A copy in memory that may be behind the log takes the events after it (the log reads only those). False
        when the answer comes from memory unchecked; True when the log was read (or will be: nothing is kept)."""
        cache = self._inner.cache
        try:
            cached = cache.get(key)
        except KeyError:
            return True
        if not self.hot.is_stale(key, cached.version):
            return False
        newer = self._inner.event_store.get(key, gt=cached.version)
        cache.put(key, project_aggregate(deepcopy(cached), newer))
        self.hot.caught_up(key)
        return True

    def _note(self, key: UUID, checked: bool) -> None:
        scope = self.scope
        if scope is not None:
            (scope.checked if checked else scope.remembered).add(key)

    def doubt(self) -> bool:
        """A refusal is about to be given (fenced, ended, moved on, not found): if the running command decided it on
        copies taken from memory unchecked, those are marked to catch up with the log and True says so, for the
        command to decide again. A refusal must stand on the log, never on a copy the follower has not caught up
        (another API worker's write, a write whose acknowledgement was lost)."""
        scope = self.scope
        doubted = scope.remembered - scope.checked if scope is not None else set()
        for key in doubted:
            self.hot.present(key)
            self.hot.mark_stale(key)
        return bool(doubted)

    def presumed_new(self, aggregate_id: Any) -> bool:
        """True when an id (a fresh submission's, say) may be taken as unused without asking the log: memory is
        trusted, nothing of it is in memory, the follower never saw it, and no save of it was refused. If it was
        used after all, creating it meets a conflict (a new aggregate's save expects an empty subject), and the
        command, deciding again, looks it up."""
        key = _key(aggregate_id)
        scope = self.scope
        if not self.hot.trusted or (scope is not None and key in scope.loaded):
            return False
        if self.hot.newest_seen(key) or self.hot.is_stale(key, 0) or self.hot.is_absent(key):
            return False
        cache = self._inner.cache
        try:
            cache.get(key)
        except (KeyError, AttributeError):
            return True
        return False

    def __contains__(self, aggregate_id: Any) -> bool:
        try:
            self.get(aggregate_id)
        except AggregateNotFoundError:
            return False
        return True

    def hold(self, aggregates: list[Any]) -> None:
        """Aggregates the running command made or changed and will save later: its lookups answer these."""
        scope = self.scope
        if scope is not None:
            for aggregate in aggregates:
                scope.loaded[_key(aggregate.id)] = aggregate

    def saved(self, aggregates: dict[Any, Any]) -> None:
        """A save landed: in a command, kept for its end; otherwise in memory at once."""
        scope = self.scope
        for aggregate_id, aggregate in aggregates.items():
            key = _key(aggregate_id)
            self.hot.present(key)
            if not self.hot.enabled:
                continue
            if scope is not None:
                scope.saved[key] = aggregate
            else:
                self._keep(key, aggregate)

    def refused(self, aggregates: list[Any], moved: dict[Any, int] | None = None) -> None:
        """A save was refused (someone wrote first): the aggregates the log names as moved on (all of the commit's
        when it names none) catch up before they are used again; the others stay trusted."""
        doubted = None if moved is None else {_key(oid) for oid in moved}
        for aggregate in aggregates:
            key = _key(aggregate.id)
            self.hot.present(key)
            if doubted is None or key in doubted:
                self.hot.mark_stale(key)

    def forget(self) -> None:
        """After a lost race: the command starts again from memory (what the refusal doubted catches up first).
        What it saved before the refused save landed: those copies are the log's."""
        scope = self.scope
        if scope is not None:
            for key, aggregate in scope.saved.items():
                self._keep(key, aggregate)
            scope.clear()

    def uncached(self) -> Any:
        """`with repository.uncached():` lookups read the log (a token's revocation is never taken from memory)."""
        return self.hot.uncached()

    def enter(self) -> bool:
        """Open a scope for this thread; False when one is already open (a nested command)."""
        if self.scope is not None:
            return False
        self._local.scope = IdentityMap()
        return True

    def leave(self) -> None:
        """The command is done with what it saved: those copies are the log's latest (unless changed since)."""
        scope = self.scope
        self._local.scope = None
        if scope is not None:
            for key, aggregate in scope.saved.items():
                self._keep(key, aggregate)
            self.locks.release(scope.held, scope)

    def _keep(self, key: UUID, aggregate: Any) -> None:
        if aggregate.pending_events:  # changed after its save and not saved again: the copy in memory catches up
            self.hot.mark_stale(key)
        elif self._inner.cache is not None:
            self._inner.cache.put(key, aggregate)
            self.hot.caught_up(key)

    def _drop(self, key: UUID) -> None:
        try:
            self._inner.cache.get(key, evict=True)
        except (KeyError, AttributeError):  # not cached, or no cache at all
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _key(aggregate_id: Any) -> Any:
    return aggregate_id if isinstance(aggregate_id, UUID) else UUID(str(aggregate_id))
