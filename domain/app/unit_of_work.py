"""One command's unit of work: each aggregate loaded once, and a command that lost a write race decided again.

Without it, a command that touches two allocations placed on one node loaded that Node twice, changed both
copies and saved both: the log refused its own second copy and the user saw "gave up after repeated concurrent
writes". With it, every `repository.get` inside a command returns the one instance that command already holds,
so all its changes to an aggregate go out as one run of versions in one atomic commit.

A command whose commit meets a concurrent writer (`WriteRace`, raised by the application's save) is run again
from the start on fresh state: nothing of the failed attempt landed (commits are atomic), and commands are
deterministic in their inputs (time and ids come in as arguments), so the retry decides exactly what the command
would have decided had it come second. Only the outermost command retries; a command called by another joins
its caller's unit of work.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from copy import deepcopy
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, project_aggregate
from eventsourcing.persistence import IntegrityError, RecordConflictError

from domain.app.aggregate_locks import AggregateLocks
from domain.app.errors import Busy, Conflict, NotFound, StaleEpoch, WriteRace
from domain.app.hot import HotState

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])
ATTEMPTS = 12  # each attempt reloads what it reads; contention that outlasts this answers Busy (503, retry later)


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
        if scope is not None and key not in scope.held and self.locks.take(key, scope):
            scope.held.add(key)
        found = self._get(key)
        if scope is not None:
            scope.loaded[key] = found
        return found

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


class UnitOfWork(Application[UUID]):
    """What every handler shares: the scoped repository, `load` by kind, and `save` of one command's changes.

    Storage comes from configuration (PERSISTENCE_MODULE), through eventsourcing's abstract recorder."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        # Aggregates are cached and caught up with only their new events (the library's fast-forward): a node or a
        # task array that has seen thousands of events is not replayed from its first on every command.
        super().__init__(env={"AGGREGATE_CACHE_MAXSIZE": "5000", **(env or {})})
        self.last_position = 0
        self._position_lock = threading.Lock()
        self._deferred = threading.local()

    def construct_repository(self) -> ScopedRepository:  # type: ignore[override]  # a view over the library's, not one
        """The library's repository, seen through the running command's identity map (one load per command)."""
        self._scoped = ScopedRepository(super().construct_repository())
        return self._scoped

    @property
    def repository(self) -> ScopedRepository:  # type: ignore[override]  # the scoped view `construct_repository` made
        return self._scoped

    def _record(self, processing_event: Any) -> Any:
        """As the library records, but what is kept in memory is decided by the repository (see `saved`)."""
        recordings = self.events.put(processing_event.events, tracking=processing_event.tracking,
                                     **processing_event.saved_kwargs)
        self.repository.saved(processing_event.aggregates)
        return recordings

    def load(self, kind: type[A], aggregate_id: UUID, what: str) -> A:
        try:
            found = self.repository.get(aggregate_id)
        except AggregateNotFoundError as error:
            raise NotFound(what) from error
        if not isinstance(found, kind):
            raise NotFound(what)
        return found

    def deferring(self) -> _Deferred:
        """`with uow.deferring():` the saves inside collect their aggregates, and leaving commits them all at once
        (many agent reports of one request: one commit, not one each). Nothing is committed if the block raises."""
        return _Deferred(self)

    def save(self, *objs: Any, **kwargs: Any):
        """Every change of one command in one atomic commit; a stale writer gets WriteRace (the command decides
        again), never a 500. An aggregate named twice is saved once."""
        deferred = getattr(self._deferred, "objs", None)
        if deferred is not None and not kwargs:
            held = [obj for obj in objs if obj is not None]
            deferred.extend(held)
            self.repository.hold(held)  # the command's later lookups find what it made, unsaved as it is
            return []
        unique = list({id(obj): obj for obj in objs if obj is not None}.values())
        try:
            recordings = super().save(*unique, **kwargs)
        except (IntegrityError, RecordConflictError) as error:
            self.repository.refused(unique, getattr(error, "moved", None))
            raise WriteRace(f"someone changed this at the same time ({error})") from error
        if recordings:
            position = recordings[-1].notification.id
            with self._position_lock:
                self.last_position = max(self.last_position, position)
            _SAVED.position = max(getattr(_SAVED, "position", 0), position)
        return recordings


_SAVED = threading.local()  # the log position of the last save made on each thread


def saved_position() -> int:
    """The log position of the last save this thread made since it last asked (0: none), for a caller that waits
    until the views show its own writes (and not every write the process made since)."""
    position, _SAVED.position = getattr(_SAVED, "position", 0), 0
    return position


class _Deferred:
    def __init__(self, uow: UnitOfWork) -> None:
        self.uow = uow

    def __enter__(self) -> None:
        if getattr(self.uow._deferred, "objs", None) is not None:
            raise RuntimeError("deferring() does not nest")
        self.uow._deferred.objs = []

    def __exit__(self, kind: Any, *_: Any) -> None:
        objs, self.uow._deferred.objs = self.uow._deferred.objs, None
        if kind is None and objs:
            self.uow.save(*objs)


class Recheck(WriteRace):
    """A command decided on copies from memory that the log may have moved past: it decides again (see `doubt`)."""


def command(method: F) -> F:
    """A handler's command (its handler holds the unit of work as `uow`), run in a unit of work, again from the
    start after a lost write race."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        repository: ScopedRepository = self.uow.repository
        if not repository.enter():
            return method(self, *args, **kwargs)
        try:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    return method(self, *args, **kwargs)
                except WriteRace as race:
                    repository.forget()
                    if attempt == ATTEMPTS:
                        raise Busy(f"{method.__name__} kept meeting concurrent writes ({race}); try again") from race
                except (StaleEpoch, Conflict, NotFound):
                    if not repository.doubt():
                        raise  # decided on what the log says
                    repository.forget()  # decided on memory: again, on copies caught up with the log
        finally:
            repository.leave()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    return run  # type: ignore[return-value]  # `run` takes and returns what `method` does


def _key(aggregate_id: Any) -> Any:
    return aggregate_id if isinstance(aggregate_id, UUID) else UUID(str(aggregate_id))
